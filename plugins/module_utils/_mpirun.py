# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The proof of a cluster's MPI wiring, ``mpirun -np N hostname`` in the head container (filter
``mpirun_hostname_check``, role ``openmpi_hostfile``).

This is a private module_utils file (leading underscore): its API may change without notice. Pure
functions, standard library only (``re``), so that they can be unit-tested without Ansible:

* ``hostnames`` reads the host names mpirun printed; ``compare`` matches them with the expected ones.
* ``classify`` says why mpirun failed, from its output and exit status, with the hint of the troubleshooting
  table of NVIDIA's DGX Spark speculative-decoding playbook.
* ``check`` does both for a registered ``docker_container_exec`` result and words the message.
"""

from __future__ import annotations

import re

# The exit status of coreutils' timeout(1) when it had to stop the command.
TIMEOUT_RC = 124
STDERR_TAIL = 800

# (cause, pattern, hint), first match wins, in this order. Connection refused, Permission denied and the timeout
# (below) are rows of the troubleshooting table of NVIDIA's DGX Spark speculative-decoding playbook ("mpirun fails with
# SSH connection refused", "Permission denied (publickey) during mpirun", "mpirun hangs or times out"); the host key row
# is this collection's, whose known_hosts pins each node's sshd host key, so a container recreated with a new key
# fails that way.
_PATTERNS = (
    ("connection_refused", re.compile(r"connection refused", re.IGNORECASE),
     "SSH is not set up between the containers (is sshd running on port %(ssh_port)s?)"),
    ("permission_denied", re.compile(r"permission denied", re.IGNORECASE),
     "keys not exchanged: the cluster key is not authorized on the peer"),
    ("host_key", re.compile(r"host key verification failed", re.IGNORECASE),
     "the peer host key does not match known_hosts (container recreated with a new key?)"),
    # Open MPI 5's runtime (PRRTE) started a daemon on a node that never called back.
    ("daemon_silent", re.compile(r"daemon failed to report back", re.IGNORECASE),
     "a node's Open MPI daemon did not reach the head: check that the runtime's interfaces "
     "(PRTE_MCA_oob_tcp_if_include, one netdev per peer) reach the head, and that the node has the image's Open MPI"),
)
_HINTS = {
    "timeout": "mpirun timed out: the hostfile IPs probably differ from the interface IPs, or the QSFP link is down",
    "exec_failed": "could not run mpirun in the head container %(container)s: is it running?",
    "wrong_hosts": "mpirun ran, but not one rank on every node: check the hostfile (one line per node, head first, "
                   "slots=1) and that the image's Open MPI reads it (Open MPI 5 ignores OMPI_MCA_orte_default_hostfile: "
                   "PRTE_MCA_prte_default_hostfile)",
    "other": "check OMPI_MCA_btl_tcp_if_include and the runtime's oob_tcp_if_include against the Up QSFP interfaces, "
             "and the hostfile",
}


def hostnames(stdout):
    """mpirun's standard output -> the non-empty lines, stripped (one host name per rank)."""
    return [line.strip() for line in (stdout or "").splitlines() if line.strip()]


def compare(expected, got):
    """-> (ok, missing, unexpected): every expected host name once per rank; ``missing`` and ``unexpected`` are
    the names short or extra, counted (a node that ran two ranks appears once in ``unexpected``)."""
    rest = list(got)
    missing = []
    for name in expected:
        if name in rest:
            rest.remove(name)
        else:
            missing.append(name)
    return not missing and not rest, missing, rest


def classify(rc, output, ok=False):
    """mpirun's exit status and output (stderr and stdout) -> (cause, evidence line), cause being one of
    ``ok``, ``connection_refused``, ``permission_denied``, ``host_key``, ``daemon_silent`` (Open MPI 5), ``timeout``,
    ``exec_failed``, ``wrong_hosts`` or ``other``.

    The SSH messages come first: when ssh fails, mpirun's launcher gives up and the command may also have hit the
    timeout, and the SSH line says more. ``rc`` None means mpirun did not run (docker exec itself failed)."""
    if ok:
        return "ok", ""
    lines = (output or "").splitlines()
    for cause, pattern, dummy in _PATTERNS:
        for line in lines:
            if pattern.search(line):
                return cause, line.strip()
    if rc is None:
        return "exec_failed", ""
    if rc == TIMEOUT_RC:
        return "timeout", ""
    if rc == 0:
        return "wrong_hosts", ""
    return "other", ""


def hint(cause, ssh_port="?", container="?"):
    """The hint of a cause (``ok`` has none)."""
    texts = dict(_HINTS, **{name: text for name, dummy, text in _PATTERNS})
    return texts.get(cause, "") % {"ssh_port": ssh_port, "container": container}


def tail(text, limit=STDERR_TAIL):
    """The end of ``text``, stripped, at most ``limit`` characters, cut at a line start when it is cut."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    end = text[-limit:]
    cut = end.find("\n")
    return "..." + (end[cut + 1:] if cut >= 0 else end)


def check(result, expected, ssh_port="?", timeout=None, container="?"):
    """A registered ``docker_container_exec`` result of ``timeout <s> mpirun -np N hostname`` and the expected host
    names (rank order) -> {ok, cause, hint, rc, expected, got, missing, unexpected, evidence, stderr_tail, msg}.

    ``expected`` is sorted, ``got`` in the order mpirun printed it; ``msg`` is empty when ``ok``."""
    result = result if isinstance(result, dict) else {}
    expected = [str(name) for name in expected]
    rc = result.get("rc")
    stdout = result.get("stdout") or ""
    stderr = result.get("stderr") or ""
    got = hostnames(stdout)
    matched, missing, unexpected = compare(expected, got)
    ok = rc == 0 and matched
    cause, evidence = classify(rc, "%s\n%s" % (stderr, stdout), ok)
    out = {
        "ok": ok, "cause": cause, "hint": hint(cause, ssh_port, container), "rc": rc,
        "expected": sorted(expected), "got": got, "missing": missing, "unexpected": unexpected,
        "evidence": evidence, "stderr_tail": tail(stderr), "msg": "",
    }
    if not ok:
        out["msg"] = message(out, len(expected), timeout, result.get("msg"))
    return out


def message(out, np, timeout=None, exec_msg=None):
    """The failure message: expected and got host names, rc, the line that gave the cause, stderr's end, the hint."""
    lines = ["mpirun -np %d hostname did not return every node's hostname." % np,
             "expected: %s;" % (", ".join(out["expected"]) or "(none)")]
    if out["rc"] is None:
        lines.append("got no exit status: %s" % ((exec_msg or "").strip() or "docker exec failed"))
    else:
        got = "got rc=%s%s: %s" % (out["rc"], " (timed out after %s s)" % timeout
                                   if out["rc"] == TIMEOUT_RC and timeout else "", ", ".join(out["got"]) or "(nothing)")
        lines.append(got)
    if out["missing"] or out["unexpected"]:
        lines.append("missing: %s; unexpected: %s" % (", ".join(out["missing"]) or "none",
                                                      ", ".join(out["unexpected"]) or "none"))
    if out["evidence"] and out["evidence"] not in out["stderr_tail"]:
        lines.append(out["evidence"])
    if out["stderr_tail"]:
        lines.append(out["stderr_tail"])
    lines.append("Hint: %s" % out["hint"])
    return "\n".join(lines)
