"""Run the modules through ansible-playbook on localhost (their integration targets)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def run_target(target):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    playbook = os.path.join(ROOT, "tests", "integration", "run_target.yml")
    bindir = os.path.dirname(sys.executable)
    return subprocess.run(
        [os.path.join(bindir, "ansible-playbook"), "-i", "localhost,", playbook, "-e", "target=" + target,
         "-e", "ansible_python_interpreter=" + sys.executable],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_trtllm_options_integration_target():
    proc = run_target("trtllm_options")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout


def test_specdec_endpoint_integration_target():
    # The playbook starts the loopback fake trtllm-serve itself and asserts every result.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"), ANSIBLE_NOCOLOR="1",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    target = os.path.join(ROOT, "tests", "integration", "targets", "specdec_endpoint")
    proc = subprocess.run(["bash", "runme.sh"], cwd=target, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
