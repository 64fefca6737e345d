#!/usr/bin/env python
"""DGX Spark lab stand-in for the TensorRT-LLM Triton backend's scripts/launch_triton_server.py.

Same options and the same command as the release's launcher: it refuses to start when a tritonserver
process already runs (unless --force), builds ``mpirun --allow-run-as-root -n 1 <tritonserver> ... :``
(one ``-n 1`` block per rank; plain tritonserver with --no-mpi), starts it in the background and returns at
once, without waiting for the server.
"""

import argparse
import os
import subprocess
import sys


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--world_size", type=int, default=1, help="world size, only tensor parallelism is supported")
    parser.add_argument("--tritonserver", type=str, default="/opt/tritonserver/bin/tritonserver",
                        help="path to the tritonserver executable")
    parser.add_argument("--grpc_port", type=str, default="8001", help="tritonserver gRPC port")
    parser.add_argument("--http_port", type=str, default="8000", help="tritonserver HTTP port")
    parser.add_argument("--metrics_port", type=str, default="8002", help="tritonserver metrics port")
    parser.add_argument("--force", "-f", action="store_true",
                        help="launch tritonserver even when other instances are running")
    parser.add_argument("--log", action="store_true", help="log the server's output into --log-file")
    parser.add_argument("--log-file", type=str, default="triton_log.txt", help="path of the Triton log file")
    parser.add_argument("--no-mpi", action="store_true", default=False,
                        help="launch tritonserver without MPI (single instance)")
    parser.add_argument("--model_repo", type=str,
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "all_models", "gpt"))
    parser.add_argument("--tensorrt_llm_model_name", type=str, default="tensorrt_llm",
                        help="name(s) of the tensorrt_llm models in the repository, comma-separated")
    parser.add_argument("--multi-model", action="store_true",
                        help="several TRT-LLM models in the repository (orchestrator mode)")
    parser.add_argument("--disable-spawn-processes", action="store_true",
                        help="with --multi-model: do not spawn the models' processes dynamically")
    parser.add_argument("--multimodal_gpu0_cuda_mem_pool_bytes", type=int, default=0,
                        help="CUDA memory pool of GPU 0 for multimodal encoders")
    parser.add_argument("--oversubscribe", action="store_true", help="pass --oversubscribe to mpirun")
    parser.add_argument("--trtllm_llmapi_launch", action="store_true", default=False,
                        help="run each rank through trtllm-llmapi-launch")
    parser.add_argument("--exit_timeout", type=int, default=None, help="exit timeout in seconds")
    return parser.parse_args(argv)


def build_command(args):
    """The argv the release's launcher runs."""
    if args.no_mpi:
        assert args.world_size == 1, "world size must be 1 when using no-mpi"
    cmd = ["mpirun", "--allow-run-as-root"] + (["--oversubscribe"] if args.oversubscribe else [])
    if args.no_mpi:
        cmd = []
    for rank in range(args.world_size):
        if not args.no_mpi:
            cmd += ["-n", "1"]
        if args.trtllm_llmapi_launch:
            cmd += ["trtllm-llmapi-launch"]
        cmd += [args.tritonserver, "--model-repository=%s" % args.model_repo]
        if args.exit_timeout:
            cmd += ["--exit-timeout-secs=%d" % args.exit_timeout]
        cmd += ["--grpc-port=%s" % args.grpc_port, "--http-port=%s" % args.http_port,
                "--metrics-port=%s" % args.metrics_port]
        if args.log and rank == 0:
            cmd += ["--log-verbose=3", "--log-file=%s" % args.log_file]
        if rank != 0:  # other ranks load only the TRT-LLM model(s)
            cmd += ["--model-control-mode=explicit"]
            cmd += ["--load-model=%s" % name for name in args.tensorrt_llm_model_name.split(",")]
        elif args.multimodal_gpu0_cuda_mem_pool_bytes:
            cmd += ["--cuda-memory-pool-byte-size=0:%d" % args.multimodal_gpu0_cuda_mem_pool_bytes]
        if args.multi_model and not args.disable_spawn_processes:
            cmd += ["--pinned-memory-pool-byte-size=0", "--enable-peer-access=false",
                    "--cuda-memory-pool-byte-size=0:0"]  # one (simulated) GPU
        cmd += ["--disable-auto-complete-config", "--backend-config=python,shm-region-prefix-name=prefix%d_" % rank]
        if not args.no_mpi:
            cmd += [":"]
    return cmd


def main(argv=None):
    args = parse_arguments(argv)
    found = subprocess.run(["pgrep", "tritonserver"], capture_output=True, encoding="utf-8", check=False)
    if found.stdout:
        pids = found.stdout.replace("\n", " ").rstrip()
        msg = "tritonserver process(es) already found with PID(s): %s.\n\tUse `kill %s` to stop them." % (pids, pids)
        if not args.force:
            raise RuntimeError(msg + " Or use --force.")
        print(msg, file=sys.stderr)
    env = os.environ.copy()
    if args.multi_model:
        if not args.disable_spawn_processes:
            assert args.world_size == 1, ("World size must be 1 when using multi-model without "
                                          "disable-spawn-processes. Processes will be spawned automatically to run "
                                          "the multi-GPU models")
        env["TRTLLM_ORCHESTRATOR"] = "1"
        env["TRTLLM_ORCHESTRATOR_SPAWN_PROCESSES"] = "0" if args.disable_spawn_processes else "1"
    # In the background, inheriting stdout/stderr; the launcher does not wait for it.
    subprocess.Popen(build_command(args), env=env)  # pylint: disable=consider-using-with


if __name__ == "__main__":
    main()
