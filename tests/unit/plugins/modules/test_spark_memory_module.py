# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_memory module's main() against a fake node (/proc/meminfo, drop_caches, the server's /health)."""

from __future__ import annotations

import builtins
import json
import types
import urllib.error

import pytest

from ansible.module_utils import _internal, basic
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import spark_memory

GIB = 1024 ** 3
KB = 1024
READY_URL = "http://127.0.0.1:8000/health"
NAMES = {"headroom": "specdec_serve_memory_headroom_gib", "check": "specdec_serve_memory_check",
         "weights": "openai/gpt-oss-120b and its draft"}
RO_ERROR = "is not writable here (Read-only file system): the page cache was not dropped"


def meminfo(total, available, free=None):
    free = available // 2 if free is None else free
    return ("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:          1024 kB\n"
            "Cached:         %d kB\n" % (total // KB, free // KB, available // KB, (available - free) // KB))


class FakeNode:
    """/proc/meminfo, /proc/sys/vm/drop_caches and the server's readiness URL of a fake DGX Spark."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.meminfo = tmp_path / "meminfo"
        self.drop_file = tmp_path / "drop_caches"
        self.drop_file.write_text("0\n")
        self.set_memory(119 * GIB, 110 * GIB)
        self.ready = False  # bool, or a list of answers (True/False) per probe, the last one repeating
        self.probes = []
        self.syncs = 0
        self.logs = []
        self.sleeps = []
        self.now = 5000.0
        self.on_sleep = None  # callable(node) run after each fake sleep

    def set_memory(self, total, available, free=None):
        self.meminfo.write_text(meminfo(total, available, free))

    def open_url(self, url, **kwargs):
        self.probes.append((url, kwargs))
        if isinstance(self.ready, list):
            ready = self.ready.pop(0) if len(self.ready) > 1 else self.ready[0]
        else:
            ready = self.ready
        if ready == 503:
            raise urllib.error.HTTPError(url, 503, "Service Unavailable", {}, None)
        if not ready:
            raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
        return types.SimpleNamespace(getcode=lambda: 200, close=lambda: None)

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self)

    def dropped(self):
        return self.drop_file.read_text() == "3\n"


@pytest.fixture
def node(monkeypatch, tmp_path):
    fake = FakeNode(tmp_path)
    monkeypatch.setattr(spark_memory, "PROC_MEMINFO", str(fake.meminfo))
    monkeypatch.setattr(spark_memory, "DROP_CACHES", str(fake.drop_file))
    monkeypatch.setattr(spark_memory, "open_url", fake.open_url)
    monkeypatch.setattr(spark_memory, "socket", types.SimpleNamespace(gethostname=lambda: "spark-a"))
    monkeypatch.setattr(spark_memory, "_sleep", fake.sleep)
    monkeypatch.setattr(spark_memory, "_clock", lambda: fake.now)

    def sync():
        fake.syncs += 1

    monkeypatch.setattr(spark_memory.mem.os, "sync", sync)
    monkeypatch.setattr(basic.AnsibleModule, "log", lambda module, msg, log_args=None: fake.logs.append(msg))
    # Warnings are collected in a process-wide registry: start each test without the previous test's, and run as
    # on a node (another test importing controller code sends module warnings to the display instead of the result).
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})
    monkeypatch.setattr(_internal, "is_controller", False)
    return fake


def make_weights(root, model_bytes=6000, draft_bytes=1000):
    """A hub cache dir for the model (blobs/ + snapshots/ links) and a plain directory for the draft."""
    hub = root / "hub" / "models--openai--gpt-oss-120b"
    (hub / "blobs").mkdir(parents=True)
    (hub / "blobs" / "w1").write_bytes(b"\0" * (model_bytes - 100))
    (hub / "blobs" / "cfg").write_bytes(b"\0" * 100)
    snap = hub / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").symlink_to("../../blobs/w1")
    (snap / "config.json").symlink_to("../../blobs/cfg")
    draft = root / "gpt-oss-120b-Eagle3"
    draft.mkdir()
    (draft / "model.safetensors").write_bytes(b"\0" * draft_bytes)
    return [str(hub), str(draft)]


def run_module(capsys, args=None):
    """Run main() like Ansible does; return (rc, parsed JSON result)."""
    with patch_module_args(args or {}):
        with pytest.raises(SystemExit) as info:
            spark_memory.main()
    out = capsys.readouterr().out
    return info.value.code, json.loads(out)


def warnings(result):
    """The warning texts of a result (ansible-core 2.19 returns them as dicts with the text in event.msg)."""
    return [item["event"]["msg"] if isinstance(item, dict) else item for item in result.get("warnings") or []]


def ok(capsys, args=None):
    rc, result = run_module(capsys, args)
    assert rc == 0 and not result.get("failed"), result
    return result


def failed(capsys, args=None):
    rc, result = run_module(capsys, args)
    assert rc == 1 and result["failed"] is True, result
    assert result.get("changed", False) is False
    return result


# -- the fit check ------------------------------------------------------------------------------------------------


def test_fits_measured_hub_layout_counts_once(capsys, node, tmp_path):
    weights = make_weights(tmp_path)
    result = ok(capsys, {"weights": weights, "headroom_bytes": 8 * GIB, "ready_url": READY_URL})
    assert result["changed"] is False
    assert result["memory"] == {"total_bytes": 119 * GIB, "available_bytes": 110 * GIB, "free_bytes": 55 * GIB}
    assert result["weights_bytes"] == 7000  # blobs 6000 + draft 1000; the snapshot links do not count again
    assert result["weights_source"] == "measured" and result["weights_missing"] == []
    assert result["needed_bytes"] == 8 * GIB + 7000
    assert result["fits"] is True and result["serving"] is False
    assert result["dropped"] is False and result["drop_error"] == "" and result["guard"] is None
    assert result["msg"] == "MemAvailable 110.0 GiB, weights 0.0 GiB (measured), headroom 8.0 GiB: fits"
    assert not warnings(result)
    url, kwargs = node.probes[0]
    assert url == READY_URL and kwargs["use_proxy"] is False and kwargs["timeout"] == 2
    assert not node.dropped() and node.syncs == 0


def test_does_not_fit_fails_naming_the_variables(capsys, node, tmp_path, monkeypatch):
    weights = make_weights(tmp_path)
    monkeypatch.setattr(spark_memory.mem, "tree_size", lambda path: int(30.6 * GIB))
    node.set_memory(119 * GIB, int(3.9 * GIB))
    result = failed(capsys, {"weights": weights, "names": NAMES, "drop_caches": True})
    assert result["msg"] == (
        "memory on spark-a: MemAvailable is 3.9 GiB, but the weights need 61.2 GiB (openai/gpt-oss-120b and its draft, "
        "measured on disk) plus 8.0 GiB of headroom (specdec_serve_memory_headroom_gib): 69.2 GiB. Free memory (stop "
        "other servers or containers; dropping the page cache helps only with what it holds), or serve a smaller "
        "model; specdec_serve_memory_check: warn starts it anyway")
    assert result["fits"] is False and result["weights_bytes"] == 2 * int(30.6 * GIB)
    assert not node.dropped() and node.syncs == 0  # failed before dropping anything


def test_does_not_fit_without_names_names_the_options(capsys, node, tmp_path):
    node.set_memory(119 * GIB, 4 * GIB)
    result = failed(capsys, {"weights": make_weights(tmp_path), "node": "spark-b"})
    assert result["msg"].startswith("memory on spark-b: MemAvailable is 4.0 GiB, but the weights need 0.0 GiB "
                                    "(weights, measured on disk) plus 8.0 GiB of headroom (headroom_bytes): 8.0 GiB.")
    assert result["msg"].endswith("; check: warn starts it anyway")


def test_warn_goes_on_and_drops(capsys, node, tmp_path):
    node.set_memory(119 * GIB, 4 * GIB)
    result = ok(capsys, {"weights": make_weights(tmp_path), "check": "warn", "names": NAMES, "drop_caches": True})
    assert result["fits"] is False
    assert len(warnings(result)) == 1
    assert warnings(result)[0].startswith("memory on spark-a: MemAvailable is 4.0 GiB, but the weights need")
    assert warnings(result)[0].endswith("specdec_serve_memory_check: warn starts it anyway")
    assert result["changed"] is True and result["dropped"] is True and node.dropped()
    assert result["msg"].endswith(": does not fit; page cache dropped")


def test_skip_reports_without_comparing(capsys, node, tmp_path):
    node.set_memory(119 * GIB, GIB)
    result = ok(capsys, {"weights": make_weights(tmp_path), "check": "skip"})
    assert result["fits"] is None and result["weights_bytes"] == 7000 and result["needed_bytes"] == 8 * GIB + 7000
    assert result["msg"] == "MemAvailable 1.0 GiB, weights 0.0 GiB (measured), headroom 8.0 GiB: not checked"
    assert not warnings(result)


def test_weights_share_halves_the_weights(capsys, node, tmp_path):
    result = ok(capsys, {"weights": make_weights(tmp_path), "weights_share": 0.5})
    assert result["weights_bytes"] == 3500


def test_serving_uses_memtotal_and_does_not_drop(capsys, node, tmp_path, monkeypatch):
    node.ready = True
    node.set_memory(119 * GIB, 2 * GIB)  # the loaded server holds most of the memory
    monkeypatch.setattr(spark_memory.mem, "tree_size", lambda path: 30 * GIB)
    result = ok(capsys, {"weights": make_weights(tmp_path), "ready_url": READY_URL, "drop_caches": True})
    assert result["serving"] is True and result["fits"] is True and result["needed_bytes"] == 68 * GIB
    assert result["changed"] is False and result["dropped"] is False and not node.dropped() and node.syncs == 0
    assert result["msg"] == ("MemTotal 119.0 GiB, weights 60.0 GiB (measured), headroom 8.0 GiB: fits; "
                             "the server is serving, the page cache was left alone")


def test_serving_still_catches_a_model_bigger_than_the_machine(capsys, node, tmp_path, monkeypatch):
    node.ready = True
    monkeypatch.setattr(spark_memory.mem, "tree_size", lambda path: 60 * GIB)
    result = failed(capsys, {"weights": make_weights(tmp_path), "ready_url": READY_URL, "names": NAMES})
    assert result["serving"] is True
    assert result["msg"].startswith("memory on spark-a: MemTotal is 119.0 GiB, but the weights need 120.0 GiB")
    assert "even with nothing else running" in result["msg"]


def test_not_serving_when_health_answers_503(capsys, node):
    node.ready = 503
    result = ok(capsys, {"ready_url": READY_URL})
    assert result["serving"] is False and result["msg"].startswith("MemAvailable ")


def test_estimate_used_when_a_weights_path_is_missing(capsys, node, tmp_path):
    present = make_weights(tmp_path)[1]
    missing = str(tmp_path / "hub" / "models--not--downloaded")
    node.set_memory(119 * GIB, 20 * GIB)
    result = failed(capsys, {"weights": [present, missing], "estimate_bytes": 30 * GIB, "weights_share": 0.5,
                             "names": dict(NAMES, estimate="specdec_serve_memory_estimate_gib")})
    assert result["weights_source"] == "estimate" and result["weights_bytes"] == 15 * GIB
    assert result["weights_missing"] == [missing]
    assert ("the weights need 15.0 GiB (openai/gpt-oss-120b and its draft, estimated with "
            "specdec_serve_memory_estimate_gib, not on disk yet, 50% of them on this node) plus 8.0 GiB") in result["msg"]


def test_unknown_weights_checks_headroom_only(capsys, node, tmp_path):
    missing = str(tmp_path / "nope")
    result = ok(capsys, {"weights": [missing]})
    assert result["weights_source"] == "unknown" and result["weights_bytes"] is None
    assert result["needed_bytes"] == 8 * GIB and result["fits"] is True
    assert result["msg"] == ("MemAvailable 110.0 GiB, weights unknown, headroom 8.0 GiB: fits "
                             "(weights size unknown: only the headroom was checked)")
    node.set_memory(119 * GIB, 5 * GIB)
    result = failed(capsys, {"weights": [missing]})
    assert "whose size is unknown (weights not found on disk and no estimate_bytes given)" in result["msg"]


def test_no_weights_given_is_unknown(capsys, node):
    result = ok(capsys)
    assert result["weights_source"] == "unknown" and result["weights_missing"] == []


def test_unmeasurable_weights_warn_and_count_as_missing(capsys, node, tmp_path, monkeypatch):
    def refuse(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(spark_memory.mem, "tree_size", refuse)
    result = ok(capsys, {"weights": [str(tmp_path)], "estimate_bytes": GIB})
    assert result["weights_source"] == "estimate" and result["weights_missing"] == [str(tmp_path)]
    assert warnings(result) == ["cannot measure the weights at %s (Permission denied); they count as missing" % tmp_path]


# -- /proc/meminfo ------------------------------------------------------------------------------------------------


def test_missing_memavailable_fails_clearly(capsys, node):
    node.meminfo.write_text("MemTotal: 1000 kB\nMemFree: 10 kB\n")
    result = failed(capsys)
    assert result["msg"].startswith("memory on spark-a: %s has no MemAvailable line" % node.meminfo)


def test_unreadable_meminfo_fails(capsys, node):
    node.meminfo.unlink()
    assert failed(capsys)["msg"].startswith("memory on spark-a: cannot read %s: " % node.meminfo)


# -- drop_caches --------------------------------------------------------------------------------------------------


def test_drop_done_is_a_change(capsys, node):
    result = ok(capsys, {"drop_caches": True, "ready_url": READY_URL})
    assert result["changed"] is True and result["dropped"] is True and result["drop_error"] == ""
    assert node.dropped() and node.syncs == 1
    assert result["msg"] == "MemAvailable 110.0 GiB, weights unknown, headroom 8.0 GiB: fits " \
                            "(weights size unknown: only the headroom was checked); page cache dropped"


def test_drop_read_only_warns_without_change(capsys, node, monkeypatch):
    real_open = builtins.open

    def fake_open(file, *args, **kwargs):
        if str(file) == str(node.drop_file):
            raise OSError(30, "Read-only file system")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    result = ok(capsys, {"drop_caches": True})
    error = "%s %s" % (node.drop_file, RO_ERROR)
    assert result["changed"] is False and result["dropped"] is False and result["drop_error"] == error
    assert warnings(result) == [error]
    assert result["msg"].endswith("; page cache not dropped")
    assert not node.dropped()


def test_drop_where_the_file_does_not_exist(capsys, node, monkeypatch):
    monkeypatch.setattr(spark_memory, "DROP_CACHES", str(node.tmp / "no" / "drop_caches"))
    result = ok(capsys, {"drop_caches": True})
    assert result["changed"] is False and "(No such file or directory)" in result["drop_error"]


def test_drop_is_repeated_each_run(capsys, node):
    assert ok(capsys, {"drop_caches": True})["changed"] is True
    node.drop_file.write_text("0\n")
    assert ok(capsys, {"drop_caches": True})["changed"] is True
    assert node.syncs == 2


def test_check_mode_predicts_the_drop(capsys, node):
    result = ok(capsys, {"drop_caches": True, "_ansible_check_mode": True})
    assert result["changed"] is True and result["dropped"] is False
    assert result["msg"].endswith("; the page cache would be dropped (check mode)")
    assert not node.dropped() and node.syncs == 0


def test_check_mode_not_writable_predicts_no_change(capsys, node, monkeypatch):
    monkeypatch.setattr(spark_memory.os, "access", lambda path, mode: False)
    result = ok(capsys, {"drop_caches": True, "_ansible_check_mode": True})
    assert result["changed"] is False
    assert result["msg"].endswith("is not writable here: the page cache would not be dropped")


def test_check_mode_serving_no_change(capsys, node):
    node.ready = True
    result = ok(capsys, {"drop_caches": True, "ready_url": READY_URL, "_ansible_check_mode": True})
    assert result["changed"] is False and result["serving"] is True


def test_check_mode_still_fails_when_it_does_not_fit(capsys, node):
    node.set_memory(119 * GIB, GIB)
    failed(capsys, {"drop_caches": True, "_ansible_check_mode": True})


# -- guard --------------------------------------------------------------------------------------------------------


def test_guard_drops_while_low_then_stops_when_ready(capsys, node):
    # MemAvailable per look: 20, 7, 6, 12, 5 GiB; the server is ready at the 6th probe.
    looks = [20, 7, 6, 12, 5]
    node.set_memory(119 * GIB, looks.pop(0) * GIB)
    node.ready = [False] * 5 + [True]

    def load(fake):
        if looks:
            fake.set_memory(119 * GIB, looks.pop(0) * GIB)

    node.on_sleep = load
    result = ok(capsys, {"guard": True, "ready_url": READY_URL, "guard_interval": 5, "check": "fail",
                         "weights": [str(node.tmp / "nope")]})
    assert result["guard"] == {"drops": 3, "seconds": 25, "ready": True, "min_available_bytes": 5 * GIB, "error": ""}
    assert result["changed"] is True and result["dropped"] is True and node.syncs == 3 and node.dropped()
    assert node.sleeps == [5] * 5
    assert result["fits"] is None and result["needed_bytes"] is None and result["weights_bytes"] is None
    assert result["msg"] == "guard: server ready after 25 s, 3 page cache drops, lowest MemAvailable 5.0 GiB"
    assert [line for line in node.logs if line.startswith("guard:")] == [
        "guard: MemAvailable 7.0 GiB is below 8.0 GiB: page cache dropped (drop 1)",
        "guard: MemAvailable 6.0 GiB is below 8.0 GiB: page cache dropped (drop 2)",
        "guard: MemAvailable 5.0 GiB is below 8.0 GiB: page cache dropped (drop 3)"]


def test_guard_skips_the_fit_check(capsys, node):
    node.set_memory(119 * GIB, GIB)
    node.ready = True
    result = ok(capsys, {"guard": True, "ready_url": READY_URL, "estimate_bytes": 200 * GIB})
    assert result["changed"] is False
    assert result["guard"] == {"drops": 0, "seconds": 0, "ready": True, "min_available_bytes": GIB, "error": ""}
    assert result["msg"] == "guard: server already ready, 0 page cache drops, lowest MemAvailable 1.0 GiB"


def test_guard_timeout(capsys, node):
    result = ok(capsys, {"guard": True, "ready_url": READY_URL, "guard_interval": 10, "guard_timeout": 25,
                         "guard_below_bytes": 4 * GIB})
    assert result["guard"] == {"drops": 0, "seconds": 25, "ready": False, "min_available_bytes": 110 * GIB,
                               "error": ""}
    assert node.sleeps == [10, 10, 5]
    assert result["changed"] is False
    assert result["msg"] == "guard: server not ready after 25 s (guard_timeout), 0 page cache drops, " \
                            "lowest MemAvailable 110.0 GiB"


def test_guard_stops_when_it_cannot_drop(capsys, node, monkeypatch):
    monkeypatch.setattr(spark_memory, "DROP_CACHES", str(node.tmp / "ro" / "drop_caches"))
    node.set_memory(119 * GIB, 2 * GIB)
    result = ok(capsys, {"guard": True, "ready_url": READY_URL})
    assert result["guard"]["drops"] == 0 and result["guard"]["ready"] is False
    assert "(No such file or directory)" in result["guard"]["error"]
    assert result["drop_error"] == result["guard"]["error"] and warnings(result) == [result["guard"]["error"]]
    assert result["changed"] is False and node.sleeps == []
    assert result["msg"].startswith("guard: stopped after 0 s, 0 page cache drops")


def test_guard_check_mode_does_not_loop(capsys, node):
    node.set_memory(119 * GIB, 2 * GIB)
    result = ok(capsys, {"guard": True, "ready_url": READY_URL, "_ansible_check_mode": True})
    assert result["changed"] is False
    assert result["guard"] == {"drops": 0, "seconds": 0, "ready": False, "min_available_bytes": 2 * GIB, "error": ""}
    assert node.sleeps == [] and node.syncs == 0 and not node.dropped()


def test_guard_fails_when_meminfo_goes_away(capsys, node):
    node.on_sleep = lambda fake: fake.meminfo.unlink()
    result = failed(capsys, {"guard": True, "ready_url": READY_URL})
    assert result["msg"].startswith("memory on spark-a: the guard cannot read %s" % node.meminfo)


def test_guard_needs_ready_url(capsys, node):
    result = failed(capsys, {"guard": True})
    assert "ready_url" in result["msg"] and "guard" in result["msg"]


# -- bad options --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,msg", [
    ({"weights_share": 0}, "weights_share: 0.0 is out of range; accepted: a number more than 0 and at most 1"),
    ({"weights_share": 1.5}, "weights_share: 1.5 is out of range; accepted: a number more than 0 and at most 1"),
    ({"headroom_bytes": -1}, "headroom_bytes: -1 is negative; accepted: a number of bytes, 0 or more"),
    ({"estimate_bytes": -5}, "estimate_bytes: -5 is negative; accepted: a number of bytes, 0 or more"),
    ({"guard_below_bytes": -1}, "guard_below_bytes: -1 is negative; accepted: a number of bytes, 0 or more"),
    ({"guard_interval": 0}, "guard_interval: 0; accepted: a whole number of seconds, 1 or more"),
    ({"guard_timeout": -3}, "guard_timeout: -3; accepted: a whole number of seconds, 1 or more"),
    ({"ready_url": "127.0.0.1:8000/health"}, "ready_url: '127.0.0.1:8000/health'; accepted: an http:// or https:// URL"),
    ({"names": {"headrom": "x"}}, "names: unknown key headrom; accepted: weights, headroom, check, estimate"),
    ({"names": {"check": 3}}, "names: the value of check is not a string"),
])
def test_bad_options_fail_naming_option_and_value(capsys, node, args, msg):
    result = failed(capsys, args)
    assert result["msg"].startswith(msg)
    assert not node.dropped() and node.probes == []


def test_bad_choice(capsys, node):
    result = failed(capsys, {"check": "maybe"})
    assert "check" in result["msg"] and "fail, warn, skip" in result["msg"]
