"""The entrypoint as the server's supervisor: a server that stops answering once it was ready is ended (Docker then
starts the container again), its exit code is passed on, and a lost head's ranks are ended on a worker."""

import os
import re
import socket
import subprocess
import sys
import time

ENTRYPOINT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "trtllm_container", "files",
                          "entrypoint.sh")

# A server that answers /health, and stops answering (without exiting, like a hang) once the file STOP exists.
SERVER = r"""
import http.server, os, sys, time
stop = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        while os.path.exists(stop):
            time.sleep(1)
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def entrypoint(tmp_path, *args):
    env = {"PATH": os.environ["PATH"], "DGX_SPARK_HEALTH_EVERY": "2", "DGX_SPARK_RANKS_DIR": str(tmp_path / "ranks")}
    return subprocess.Popen(["bash", ENTRYPOINT, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def test_a_server_that_stops_answering_after_it_was_ready_is_ended(tmp_path):
    port, stop = free_port(), tmp_path / "STOP"
    proc = entrypoint(tmp_path, "--health", "http://127.0.0.1:%d/health" % port, "--liveness", "6", "--",
                      sys.executable, "-c", SERVER, str(port), str(stop))
    time.sleep(5)
    assert proc.poll() is None
    stop.write_text("hang")
    began = time.time()
    out, dummy = proc.communicate(timeout=60)
    assert proc.returncode == 1
    # The timeout after the last answer, then at most one check interval and one check's own timeout.
    assert time.time() - began < 6 + 2 + 5 + 2
    assert "ready: http://127.0.0.1:%d/health answers" % port in out
    assert re.search(r"has not answered for [6-9] s after the server was ready: restarting it", out), out


def test_a_server_that_never_answered_is_left_to_load_and_its_exit_code_is_passed_on(tmp_path):
    proc = entrypoint(tmp_path, "--health", "http://127.0.0.1:%d/health" % free_port(), "--liveness", "2", "--",
                      "bash", "-c", "sleep 4; exit 3")
    out, dummy = proc.communicate(timeout=60)
    assert proc.returncode == 3 and "the server exited (3)" in out and "has not answered" not in out


def test_the_ranks_an_earlier_mpirun_left_are_ended(tmp_path):
    env = {"PATH": os.environ["PATH"], "DGX_SPARK_RANKS_DIR": str(tmp_path / "ranks")}
    rank = subprocess.Popen(["setsid", "bash", ENTRYPOINT, "--rank", "--", "sleep", "300"], env=env)
    for dummy in range(50):
        if (tmp_path / "ranks" / str(rank.pid)).exists():
            break
        time.sleep(0.1)
    assert (tmp_path / "ranks" / str(rank.pid)).exists()
    out = subprocess.run(["bash", ENTRYPOINT, "--clean-ranks"], env=env, capture_output=True, text=True, timeout=30,
                         check=True).stdout
    assert "ending rank %d of an earlier mpirun" % rank.pid in out
    assert rank.wait(timeout=10) != 0
    assert not list((tmp_path / "ranks").iterdir())
