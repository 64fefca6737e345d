"""Helpers for the lab tests: run the TRT-LLM stand-in straight from the checkout (no docker)."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB_DIR = os.path.join(REPO, "molecule", "resources", "lab")
LAB_SCRIPT = os.path.join(LAB_DIR, "lab")
STANDIN_DIR = os.path.join(LAB_DIR, "images", "trtllm-standin")
SIM_FILES = os.path.join(LAB_DIR, "images", "spark-sim", "files")

# In-process imports of the stand-in (performance model tests).
if STANDIN_DIR not in sys.path:
    sys.path.insert(0, STANDIN_DIR)

MODEL = "nvidia/Qwen3-8B-FP4"
DRAFT = "nvidia/Qwen3-8B-Eagle3"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def standin_environ(tmp_path):
    """Environment for the stand-in: private HF cache, fast start-up, no real sleeping."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMI_", "SLURM_", "HF_", "STANDIN_", "TRTLLM_", "HUGGING"))}
    env.update({
        "PYTHONPATH": STANDIN_DIR,
        "PYTHONDONTWRITEBYTECODE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "STANDIN_STARTUP_SECONDS": "0.2",
        "STANDIN_TIME_SCALE": "0",
        "TRTLLM_VERSION": "1.2.0rc6",
    })
    return env


def run_module(module, args, env, timeout=30, prog=None):
    """Run trtllm_standin.<module> with args; returns CompletedProcess (text)."""
    if prog:
        code = ("import sys; sys.argv[0] = %r; from trtllm_standin.%s import main; sys.exit(main())"
                % (prog, module))
        cmd = [sys.executable, "-c", code] + list(args)
    else:
        cmd = [sys.executable, "-m", "trtllm_standin.%s" % module] + list(args)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def serve_cmd(args):
    return [sys.executable, "-m", "trtllm_standin.serve"] + list(args)


def hf_download(env, repo, *extra):
    proc = run_module("hf_cli", ["download", repo] + list(extra), env, prog="hf")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def http(method, url, body=None, timeout=30):
    """(status, parsed JSON or text) of an HTTP request."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw, ctype = resp.status, resp.read(), resp.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        status, raw, ctype = exc.code, exc.read(), exc.headers.get("content-type", "")
    text = raw.decode()
    if "json" in ctype:
        return status, json.loads(text)
    return status, text


class Server:
    """A running trtllm-serve stand-in process."""

    def __init__(self, proc, port, log_path):
        self.proc = proc
        self.port = port
        self.url = "http://127.0.0.1:%d" % port
        self.log_path = log_path

    def log(self):
        with open(self.log_path, encoding="utf-8") as handle:
            return handle.read()

    def wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if "Application startup complete." in self.log():
                return
            if self.proc.poll() is not None:
                raise AssertionError("server exited with %s:\n%s" % (self.proc.returncode, self.log()))
            time.sleep(0.05)
        raise AssertionError("server not ready within %ss:\n%s" % (timeout, self.log()))


@contextlib.contextmanager
def running_server(env, args, tmp_path, wait=True, cmd=None):
    port = free_port()
    log_path = tmp_path / ("serve-%d.log" % port)
    with open(log_path, "w", encoding="utf-8") as log:
        full = (cmd or serve_cmd)(list(args) + ["--host", "127.0.0.1", "--port", str(port)])
        proc = subprocess.Popen(full, env=env, stdout=log, stderr=subprocess.STDOUT)
    server = Server(proc, port, str(log_path))
    try:
        if wait:
            server.wait_ready()
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def write_yaml(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)
