# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit tests for plugins/module_utils/_mpirun.py: the verdict on `mpirun -np N hostname` in the head container."""

from __future__ import annotations

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _mpirun as m

HOSTS = ["spark-b", "spark-a"]  # rank order is the plan's; the comparison ignores it

# Open MPI 4.1's banner after its ssh launcher failed (ORTE, on stderr): longer than the quoted tail.
ORTE_BANNER = """\
--------------------------------------------------------------------------
ORTE was unable to reliably start one or more daemons.
This usually is caused by:

* not finding the required libraries and/or binaries on
  one or more nodes. Please check your PATH and LD_LIBRARY_PATH
  settings, or configure OMPI with --enable-orterun-prefix-by-default

* lack of authority to execute on one or more specified nodes.
  Please verify your allocation and authorities.

* the inability to write startup files into /tmp (--tmpdir/orte_tmpdir_base).
  Please check with your sys admin to determine the correct location to use.

*  compilation of the orted with dynamic libraries when static are required
  (e.g., on Cray). Please check your configure cmd line and consider using
  one of the contrib/platform definitions for your system type.

* an inability to create a connection back to mpirun due to a
  lack of common network interfaces and/or no route found between
  them. Please check network connectivity (including firewalls
  and network routing).
--------------------------------------------------------------------------
"""
REFUSED = "ssh: connect to host 192.168.200.13 port 2233: Connection refused\r\n" + ORTE_BANNER
DENIED = "root@192.168.200.13: Permission denied (publickey).\r\n" + ORTE_BANNER
HOST_KEY = """\
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
Host key for [192.168.200.13]:2233 has changed and you have requested strict checking.
Host key verification failed.
"""


def result(rc=0, stdout="spark-a\nspark-b\n", stderr=""):
    """A registered community.docker.docker_container_exec result."""
    return {"changed": False, "failed": False, "rc": rc, "stdout": stdout, "stderr": stderr,
            "stdout_lines": stdout.splitlines(), "stderr_lines": stderr.splitlines()}


def check(res, **kwargs):
    kwargs.setdefault("ssh_port", 2233)
    kwargs.setdefault("timeout", 60)
    kwargs.setdefault("container", "trtllm-multinode")
    return m.check(res, HOSTS, **kwargs)


# -- every node answered --------------------------------------------------------------------------------------------


def test_every_node_answered_in_any_order():
    warning = "Warning: Permanently added '[192.168.200.13]:2233' (ED25519) to the list of known hosts."
    out = check(result(stdout="spark-b\n\nspark-a  \n", stderr=warning))
    assert out == {"ok": True, "cause": "ok", "hint": "", "rc": 0, "expected": ["spark-a", "spark-b"],
                   "got": ["spark-b", "spark-a"], "missing": [], "unexpected": [], "evidence": "",
                   "stderr_tail": warning, "msg": ""}


# -- the troubleshooting table, one branch each ---------------------------------------------------------------------


def test_connection_refused():
    out = check(result(rc=255, stdout="", stderr=REFUSED))
    assert (out["ok"], out["cause"]) == (False, "connection_refused")
    assert out["hint"] == "SSH is not set up between the containers (is sshd running on port 2233?)"
    assert out["evidence"] == "ssh: connect to host 192.168.200.13 port 2233: Connection refused"
    assert out["missing"] == ["spark-b", "spark-a"] and out["got"] == []
    # The banner fills the tail: the line that gave the cause is quoted on its own, before it.
    assert out["evidence"] not in out["stderr_tail"] and out["stderr_tail"].startswith("...")
    assert len(out["stderr_tail"]) <= m.STDERR_TAIL + 3
    lines = out["msg"].splitlines()
    assert lines[:5] == [
        "mpirun -np 2 hostname did not return every node's hostname.",
        "expected: spark-a, spark-b;",
        "got rc=255: (nothing)",
        "missing: spark-b, spark-a; unexpected: none",
        "ssh: connect to host 192.168.200.13 port 2233: Connection refused",
    ]
    assert lines[-1] == "Hint: SSH is not set up between the containers (is sshd running on port 2233?)"
    assert "and network routing)." in out["msg"]


def test_connection_refused_lower_case_and_on_stdout():
    out = check(result(rc=1, stdout="spark-a\nconnect to 192.168.200.13: connection refused\n", stderr=""))
    assert out["cause"] == "connection_refused"
    assert out["got"] == ["spark-a", "connect to 192.168.200.13: connection refused"]


def test_permission_denied():
    out = check(result(rc=255, stdout="", stderr=DENIED))
    assert out["cause"] == "permission_denied"
    assert out["evidence"] == "root@192.168.200.13: Permission denied (publickey)."
    assert out["msg"].endswith("Hint: keys not exchanged: the cluster key is not authorized on the peer")


def test_host_key_verification_failed():
    out = check(result(rc=255, stdout="spark-a\n", stderr=HOST_KEY))
    assert out["cause"] == "host_key" and out["evidence"] == "Host key verification failed."
    assert out["hint"] == "the peer host key does not match known_hosts (container recreated with a new key?)"
    # Short stderr: quoted whole, the evidence line not twice.
    assert out["stderr_tail"] == HOST_KEY.strip() and out["msg"].count("Host key verification failed.") == 1
    assert "got rc=255: spark-a" in out["msg"] and "missing: spark-b; unexpected: none" in out["msg"]


def test_timeout():
    out = check(result(rc=124, stdout="spark-a\n", stderr=""))
    assert out["cause"] == "timeout"
    assert out["hint"] == ("mpirun timed out: the hostfile IPs probably differ from the interface IPs, or the QSFP "
                           "link is down")
    assert "got rc=124 (timed out after 60 s): spark-a" in out["msg"]


def test_ssh_messages_win_over_the_timeout():
    out = check(result(rc=124, stdout="", stderr=DENIED))
    assert out["cause"] == "permission_denied"


def test_anything_else():
    out = check(result(rc=1, stdout="", stderr="mpirun: command not found"))
    assert out["cause"] == "other"
    assert out["msg"].splitlines()[-2:] == [
        "mpirun: command not found",
        "Hint: check OMPI_MCA_btl_tcp_if_include and the runtime's oob_tcp_if_include against the Up QSFP interfaces, "
        "and the hostfile"]


# What Open MPI 5's mpirun prints when a daemon it started over ssh never calls back (seen in the lab with the
# runtime on both netdevs of a switch cable).
SILENT_DAEMON = """\
------------------------------------------------------------
A daemon failed to report back after being spawned. This could
be due to several factors, including inability to find the
daemon executable, or the executable was unable to find its
required supporting libraries.

  Local host:    switch1-a
  Remote host:   192.168.100.2
  Daemon exit status: 255
------------------------------------------------------------
"""


def test_open_mpi_5_daemon_that_never_called_back():
    out = check(result(rc=255, stdout="", stderr=SILENT_DAEMON))
    assert (out["ok"], out["cause"]) == (False, "daemon_silent")
    assert "PRTE_MCA_oob_tcp_if_include" in out["msg"].splitlines()[-1]


def test_the_hostfile_hint_names_both_open_mpi_spellings():
    out = check(result(rc=0, stdout="spark-a\nspark-a\n"))
    assert "PRTE_MCA_prte_default_hostfile" in out["msg"] and "OMPI_MCA_orte_default_hostfile" in out["msg"]


def test_rc_zero_but_one_node_twice():
    out = check(result(rc=0, stdout="spark-a\nspark-a\n"))
    assert (out["ok"], out["cause"]) == (False, "wrong_hosts")
    assert (out["missing"], out["unexpected"]) == (["spark-b"], ["spark-a"])
    assert "got rc=0: spark-a, spark-a" in out["msg"] and "missing: spark-b; unexpected: spark-a" in out["msg"]
    assert out["hint"].startswith("mpirun ran, but not one rank on every node")


def test_rc_nonzero_with_every_host_name_fails():
    out = check(result(rc=1, stdout="spark-a\nspark-b\n", stderr="orte: a rank exited with status 1"))
    assert (out["ok"], out["cause"]) == (False, "other")
    assert "missing:" not in out["msg"]


def test_docker_exec_failed():
    res = {"changed": False, "failed": False,
           "msg": "Error while running command: container trtllm-multinode is not running"}
    out = check(res)
    assert (out["ok"], out["cause"], out["rc"]) == (False, "exec_failed", None)
    assert out["hint"] == "could not run mpirun in the head container trtllm-multinode: is it running?"
    assert out["msg"].splitlines()[2] == ("got no exit status: Error while running command: container "
                                          "trtllm-multinode is not running")


# -- the parts ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expected,got,verdict", [
    (["a", "b"], ["b", "a"], (True, [], [])),
    (["a", "b"], ["a"], (False, ["b"], [])),
    (["a", "b"], ["a", "b", "c"], (False, [], ["c"])),
    (["a", "b"], ["a", "a"], (False, ["b"], ["a"])),
    (["a", "b"], [], (False, ["a", "b"], [])),
])
def test_compare(expected, got, verdict):
    assert m.compare(expected, got) == verdict


def test_tail():
    assert m.tail("  short\n") == "short"
    text = "\n".join("line %03d" % i for i in range(200))
    cut = m.tail(text, 100)
    assert cut.startswith("...line ") and cut.endswith("line 199") and len(cut) <= 103
    assert m.tail("x" * 50, 10) == "..." + "x" * 10


def test_classify_order():
    assert m.classify(0, "", ok=True) == ("ok", "")
    assert m.classify(None, "") == ("exec_failed", "")
    assert m.classify(124, "Connection refused\nPermission denied")[0] == "connection_refused"
    assert m.classify(255, "Permission denied\nHost key verification failed")[0] == "permission_denied"
    assert m.classify(2, "") == ("other", "")
