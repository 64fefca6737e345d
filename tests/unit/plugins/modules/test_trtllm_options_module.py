"""Run the trtllm_options module through ansible-playbook on localhost (its integration target)."""

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
