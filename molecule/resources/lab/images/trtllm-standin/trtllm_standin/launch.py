"""``trtllm-llmapi-launch`` stand-in (the wrapper script tensorrt_llm/llmapi/trtllm-llmapi-launch in
https://github.com/NVIDIA/TensorRT-LLM).

Rank from OMPI_COMM_WORLD_RANK, then PMI_RANK, SLURM_PROCID, else 0; world size from
OMPI_COMM_WORLD_SIZE, then SLURM_NTASKS, else 1. Rank 0 runs the command (the server) with the world
size in TRTLLM_STANDIN_WORLD_SIZE and the MPI/Slurm variables removed, as the real wrapper runs it
outside MPI; every other rank is a worker that blocks until it is terminated.
"""

import os
import secrets
import signal
import socket
import sys

MPI_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "SLURM_", "UCX_TLS")


def _first(names, default):
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            try:
                return int(value)
            except ValueError:
                continue
    return default


def _free_port(start=10012):
    for port in range(start, start + 1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    return start


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: trtllm-llmapi-launch COMMAND [ARGS...]", file=sys.stderr)
        return 2 if not argv else 0
    rank = _first(("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"), 0)
    size = _first(("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"), 1)
    host = socket.gethostname()
    if rank == 0:
        env = {k: v for k, v in os.environ.items() if not k.startswith(MPI_PREFIXES)}
        env["TRTLLM_STANDIN_WORLD_SIZE"] = str(size)
        env["TLLM_SPAWN_PROXY_PROCESS"] = "1"
        env["TLLM_SPAWN_PROXY_PROCESS_IPC_ADDR"] = "tcp://127.0.0.1:%d" % _free_port()
        env["TLLM_SPAWN_PROXY_PROCESS_IPC_HMAC_KEY"] = secrets.token_hex(32)
        print("[trtllm-llmapi-launch] rank 0/%d on %s: leader, running: %s" % (size, host, " ".join(argv)),
              flush=True)
        try:
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            print("[trtllm-llmapi-launch] cannot run %s: %s" % (argv[0], exc), file=sys.stderr, flush=True)
            return 127
    print("[trtllm-llmapi-launch] rank %d/%d on %s: worker, waiting for the leader (rank 0)" % (rank, size, host),
          flush=True)
    received = []

    def on_signal(signum, _frame):
        received.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    while not received:
        signal.pause()
    print("[trtllm-llmapi-launch] rank %d: worker stopped (signal %d)" % (rank, received[0]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
