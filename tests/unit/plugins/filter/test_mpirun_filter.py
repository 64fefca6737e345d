# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The mpirun_hostname_check filter with the arguments the openmpi_hostfile role's verify.yml gives it."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleError

from ansible_collections.dgx_spark.specdec.plugins.filter import mpirun

SPEC = {"container": "trtllm-multinode", "hostnames": ["spark-a", "spark-b"], "ssh_port": 2233}


def exec_result(rc, stdout="", stderr=""):
    """A registered community.docker.docker_container_exec result."""
    return {"changed": False, "failed": False, "rc": rc, "stdout": stdout, "stderr": stderr,
            "stdout_lines": stdout.splitlines(), "stderr_lines": stderr.splitlines()}


def as_verify_yml(registered):
    """verify.yml: __openmpi_hostfile_mpirun | mpirun_hostname_check(spec.hostnames, ssh_port=spec.ssh_port,
    timeout=openmpi_hostfile_verify_timeout | int, container=spec.container)."""
    check = mpirun.FilterModule().filters()["mpirun_hostname_check"]
    return check(registered, SPEC["hostnames"], ssh_port=SPEC["ssh_port"], timeout=60, container=SPEC["container"])


def test_ok():
    out = as_verify_yml(exec_result(0, "spark-b\nspark-a\n"))
    assert out["ok"] is True and out["msg"] == "" and out["got"] == ["spark-b", "spark-a"]


def test_refused_message():
    out = as_verify_yml(exec_result(255, "", "ssh: connect to host 192.168.200.13 port 2233: Connection refused\n"))
    assert out["ok"] is False and out["cause"] == "connection_refused"
    assert out["msg"] == ("mpirun -np 2 hostname did not return every node's hostname.\n"
                          "expected: spark-a, spark-b;\n"
                          "got rc=255: (nothing)\n"
                          "missing: spark-a, spark-b; unexpected: none\n"
                          "ssh: connect to host 192.168.200.13 port 2233: Connection refused\n"
                          "Hint: SSH is not set up between the containers (is sshd running on port 2233?)")


def test_timeout_quotes_the_seconds():
    assert "got rc=124 (timed out after 60 s): spark-a" in as_verify_yml(exec_result(124, "spark-a\n"))["msg"]


def test_docker_exec_failed_names_the_container():
    out = as_verify_yml({"changed": False, "failed": False, "msg": "No such container: trtllm-multinode"})
    assert out["hint"] == "could not run mpirun in the head container trtllm-multinode: is it running?"


@pytest.mark.parametrize("value,hostnames,expected", [
    ("spark-a", ["spark-a"], "the input must be a registered result"),
    (exec_result(0), "spark-a", "hostnames must be a list of host names"),
    (exec_result(0), None, "hostnames must be a list of host names"),
])
def test_bad_input(value, hostnames, expected):
    with pytest.raises(AnsibleError, match=expected):
        mpirun.mpirun_hostname_check(value, hostnames)
