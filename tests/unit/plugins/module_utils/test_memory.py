# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit tests for plugins/module_utils/_memory.py (pure: no Ansible, fake clock, scratch files)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _memory as mem

GIB = 1024 ** 3

MEMINFO = """MemTotal:       125513992 kB
MemFree:        58720256 kB
MemAvailable:   115343360 kB
Buffers:          123456 kB
Cached:         50331648 kB
HugePages_Total:       0
HugePages_Free:        0
Hugepagesize:       2048 kB
garbage line
Broken:          n/a kB
"""


# -- /proc/meminfo ------------------------------------------------------------------------------------------------


def test_parse_meminfo_kb_to_bytes_and_plain_counts():
    info = mem.parse_meminfo(MEMINFO)
    assert info["MemTotal"] == 125513992 * 1024
    assert info["MemAvailable"] == 115343360 * 1024
    assert info["MemFree"] == 58720256 * 1024
    assert info["Hugepagesize"] == 2048 * 1024
    assert info["HugePages_Total"] == 0  # no unit: kept as is
    assert "Broken" not in info and "garbage line" not in info


def test_parse_meminfo_empty():
    assert mem.parse_meminfo("") == {} and mem.parse_meminfo(None) == {}


def test_memory_of():
    assert mem.memory_of(mem.parse_meminfo(MEMINFO)) == {
        "total_bytes": 125513992 * 1024, "available_bytes": 115343360 * 1024, "free_bytes": 58720256 * 1024}


def test_memory_of_without_memavailable_fails_clearly():
    info = mem.parse_meminfo("MemTotal: 1000 kB\nMemFree: 10 kB\n")
    with pytest.raises(mem.MeminfoError) as err:
        mem.memory_of(info, "/tmp/meminfo")
    assert str(err.value).startswith("/tmp/meminfo has no MemAvailable line (MemAvailable needs Linux 3.14")


def test_memory_of_names_every_missing_line():
    with pytest.raises(mem.MeminfoError) as err:
        mem.memory_of({"MemFree": 1})
    assert "has no MemTotal and no MemAvailable lines" in str(err.value)


# -- weights on disk ----------------------------------------------------------------------------------------------


def _hub(root):
    """A Hugging Face hub cache dir: blobs/ holds the data, snapshots/<rev>/ links to the blobs."""
    hub = root / "models--openai--gpt-oss-120b"
    (hub / "blobs").mkdir(parents=True)
    (hub / "refs").mkdir()
    (hub / "refs" / "main").write_text("abc123")  # 6 bytes
    (hub / "blobs" / "aaaa").write_bytes(b"x" * 1000)
    (hub / "blobs" / "bbbb").write_bytes(b"y" * 300)
    snap = hub / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "model-00001.safetensors").symlink_to("../../blobs/aaaa")
    (snap / "config.json").symlink_to("../../blobs/bbbb")
    return hub


def test_tree_size_hub_layout_counts_blobs_once(tmp_path):
    assert mem.tree_size(str(_hub(tmp_path))) == 1306


def test_tree_size_does_not_follow_directory_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"z" * 5000)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"a" * 10)
    (tree / "link").symlink_to(outside)
    (tree / "dangling").symlink_to(tmp_path / "nope")
    assert mem.tree_size(str(tree)) == 10


def test_tree_size_hard_links_count_once(tmp_path):
    (tmp_path / "a").write_bytes(b"a" * 100)
    os.link(tmp_path / "a", tmp_path / "b")
    assert mem.tree_size(str(tmp_path)) == 100


def test_tree_size_of_a_file_and_of_a_link_to_the_tree(tmp_path):
    hub = _hub(tmp_path)
    assert mem.tree_size(str(hub / "blobs" / "aaaa")) == 1000
    (tmp_path / "alias").symlink_to(hub)
    assert mem.tree_size(str(tmp_path / "alias")) == 1306  # the given path itself may be a link


def test_tree_size_missing_is_none(tmp_path):
    assert mem.tree_size(str(tmp_path / "not-downloaded")) is None
    (tmp_path / "broken").symlink_to(tmp_path / "nowhere")
    assert mem.tree_size(str(tmp_path / "broken")) is None


def test_tree_size_empty_dir(tmp_path):
    assert mem.tree_size(str(tmp_path)) == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_tree_size_unreadable_directory_raises(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "f").write_bytes(b"1")
    locked.chmod(0)
    try:
        with pytest.raises(PermissionError):
            mem.tree_size(str(tmp_path))
    finally:
        locked.chmod(0o755)


def test_tree_size_walk_error_raises(tmp_path, monkeypatch):
    def walk(top, onerror=None, followlinks=True):
        assert followlinks is False
        onerror(PermissionError(13, "Permission denied", str(top)))
        return iter(())

    monkeypatch.setattr(mem.os, "walk", walk)
    with pytest.raises(PermissionError):
        mem.tree_size(str(tmp_path))


# -- formatting ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value,text", [
    (0, "0.0 GiB"), (8 * GIB, "8.0 GiB"), (int(61.24 * GIB), "61.2 GiB"), (int(3.96 * GIB), "4.0 GiB"),
    (512 * 1024 ** 2, "0.5 GiB"), (None, "unknown"),
])
def test_gib(value, text):
    assert mem.gib(value) == text


# -- fit ----------------------------------------------------------------------------------------------------------

NAMES = {"headroom": "specdec_serve_memory_headroom_gib", "check": "specdec_serve_memory_check",
         "weights": "openai/gpt-oss-120b and its draft"}


def test_fit_fits():
    fits, needed, message = mem.fit(110 * GIB, 61 * GIB, 8 * GIB)
    assert (fits, needed, message) == (True, 69 * GIB, "")


def test_fit_exactly_fits():
    assert mem.fit(69 * GIB, 61 * GIB, 8 * GIB)[0] is True
    assert mem.fit(69 * GIB - 1, 61 * GIB, 8 * GIB)[0] is False


def test_fit_message_names_the_callers_variables():
    weights = int(61.2 * GIB)
    fits, needed, message = mem.fit(int(3.9 * GIB), weights, 8 * GIB, node="spark-a", names=NAMES)
    assert fits is False and needed == weights + 8 * GIB
    assert message == (
        "memory on spark-a: MemAvailable is 3.9 GiB, but the weights need 61.2 GiB (openai/gpt-oss-120b and its draft, "
        "measured on disk) plus 8.0 GiB of headroom (specdec_serve_memory_headroom_gib): 69.2 GiB. Free memory (stop "
        "other servers or containers; dropping the page cache helps only with what it holds), or serve a smaller "
        "model; specdec_serve_memory_check: warn starts it anyway")


def test_fit_message_without_names_names_the_options():
    dummy, dummy2, message = mem.fit(GIB, 10 * GIB, 8 * GIB, node="n1")
    assert "(weights, measured on disk)" in message
    assert "of headroom (headroom_bytes)" in message
    assert message.endswith("; check: warn starts it anyway")


def test_fit_estimate_and_share():
    dummy, needed, message = mem.fit(GIB, 30 * GIB, 8 * GIB, node="n1", source=mem.SOURCE_ESTIMATE, share=0.5,
                                     names={"estimate": "specdec_serve_memory_estimate_gib"})
    assert needed == 38 * GIB
    assert ("the weights need 30.0 GiB (weights, estimated with specdec_serve_memory_estimate_gib, not on disk yet, "
            "50% of them on this node) plus 8.0 GiB") in message


def test_fit_unknown_weights_checks_the_headroom_only():
    fits, needed, message = mem.fit(4 * GIB, None, 8 * GIB, node="n1", source=mem.SOURCE_UNKNOWN)
    assert fits is False and needed == 8 * GIB
    assert message.startswith("memory on n1: MemAvailable is 4.0 GiB, but 8.0 GiB of headroom (headroom_bytes) is "
                              "needed even before the weights, whose size is unknown (weights not found on disk and "
                              "no estimate_bytes given). Free memory")
    assert mem.fit(9 * GIB, None, 8 * GIB, source=mem.SOURCE_UNKNOWN)[:2] == (True, 8 * GIB)


def test_fit_against_memtotal_says_the_model_is_too_big():
    dummy, dummy2, message = mem.fit(119 * GIB, 130 * GIB, 8 * GIB, against="MemTotal", node="spark-a", names=NAMES)
    assert message.startswith("memory on spark-a: MemTotal is 119.0 GiB, but the weights need 130.0 GiB")
    assert "does not fit in this node's memory even with nothing else running" in message
    assert "Free memory" not in message
    assert message.endswith("specdec_serve_memory_check: warn starts it anyway")


def test_summary():
    assert mem.summary("MemAvailable", 110 * GIB, int(61.2 * GIB), "measured", 8 * GIB, True) == \
        "MemAvailable 110.0 GiB, weights 61.2 GiB (measured), headroom 8.0 GiB: fits"
    assert mem.summary("MemTotal", 119 * GIB, None, "unknown", 8 * GIB, None) == \
        "MemTotal 119.0 GiB, weights unknown, headroom 8.0 GiB: not checked"
    assert mem.summary("MemAvailable", GIB, 2 * GIB, "estimate", 0, False).endswith("(estimate), headroom 0.0 GiB: does not fit")


# -- drop_caches --------------------------------------------------------------------------------------------------


def test_drop_caches_syncs_then_writes_3(tmp_path):
    target = tmp_path / "drop_caches"
    target.write_text("0\n")
    order = []

    def sync():
        order.append(("sync", target.read_text()))

    assert mem.drop_caches(str(target), sync=sync) == (True, "")
    assert order == [("sync", "0\n")]
    assert target.read_text() == "3\n"


def test_drop_caches_read_only(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr("builtins.open", refuse)
    done, error = mem.drop_caches("/proc/sys/vm/drop_caches", sync=lambda: None)
    assert done is False
    assert error == "/proc/sys/vm/drop_caches is not writable here (Read-only file system): the page cache was not dropped"


def test_drop_caches_missing_directory(tmp_path):
    done, error = mem.drop_caches(str(tmp_path / "no" / "drop_caches"), sync=lambda: None)
    assert done is False and "(No such file or directory)" in error


def test_drop_caches_default_sync_is_os_sync(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(mem.os, "sync", lambda: calls.append(1))
    assert mem.drop_caches(str(tmp_path / "f"))[0] is True
    assert calls == [1]


# -- guard loop ---------------------------------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def _guard(available, ready_after, clock=None, drop_result=(True, ""), below=8 * GIB, interval=5, timeout=60):
    """available: MemAvailable per look (the last repeats); ready after ``ready_after`` probes said no."""
    clock = clock or Clock()
    looks = list(available)
    probes = []
    drops = []
    logs = []

    def read_available():
        return looks.pop(0) if len(looks) > 1 else looks[0]

    def is_ready():
        probes.append(clock.now)
        return ready_after is not None and len(probes) > ready_after

    def drop():
        drops.append(clock.now)
        return drop_result

    result = mem.guard_loop(read_available, drop, is_ready, clock.sleep, clock, below, interval, timeout,
                            log=logs.append)
    return result, drops, logs, clock


def test_guard_drops_while_low_and_stops_when_ready():
    result, drops, logs, clock = _guard([20 * GIB, 7 * GIB, 6 * GIB, 12 * GIB, 5 * GIB], ready_after=5)
    assert result == {"drops": 3, "seconds": 25, "ready": True, "min_available_bytes": 5 * GIB, "error": ""}
    assert drops == [1005.0, 1010.0, 1020.0]
    assert clock.sleeps == [5, 5, 5, 5, 5]
    assert logs == ["guard: MemAvailable 7.0 GiB is below 8.0 GiB: page cache dropped (drop 1)",
                    "guard: MemAvailable 6.0 GiB is below 8.0 GiB: page cache dropped (drop 2)",
                    "guard: MemAvailable 5.0 GiB is below 8.0 GiB: page cache dropped (drop 3)"]


def test_guard_already_ready():
    result, drops, logs, clock = _guard([GIB], ready_after=0)
    assert result == {"drops": 0, "seconds": 0, "ready": True, "min_available_bytes": None, "error": ""}
    assert drops == [] and clock.sleeps == []


def test_guard_timeout():
    result, drops, dummy, clock = _guard([100 * GIB], ready_after=None, interval=7, timeout=20)
    assert result == {"drops": 0, "seconds": 20, "ready": False, "min_available_bytes": 100 * GIB, "error": ""}
    assert clock.sleeps == [7, 7, 6]  # the last sleep ends at the timeout
    assert drops == []


def test_guard_stops_when_it_cannot_drop():
    error = "/proc/sys/vm/drop_caches is not writable here (Read-only file system): the page cache was not dropped"
    result, drops, logs, dummy = _guard([20 * GIB, 3 * GIB], ready_after=None, drop_result=(False, error))
    assert result == {"drops": 0, "seconds": 5, "ready": False, "min_available_bytes": 3 * GIB, "error": error}
    assert len(drops) == 1
    assert logs == ["guard: MemAvailable 3.0 GiB is below 8.0 GiB, but " + error]


def test_guard_without_log():
    clock = Clock()
    result = mem.guard_loop(lambda: 0, lambda: (True, ""), lambda: False, clock.sleep, clock, 1, 1, 2)
    assert result == {"drops": 3, "seconds": 2, "ready": False, "min_available_bytes": 0, "error": ""}


def test_guard_never_below_threshold_keeps_sleeping_until_ready():
    result, drops, dummy, clock = _guard([9 * GIB], ready_after=3, interval=1, timeout=3600)
    assert result["ready"] is True and result["drops"] == 0 and result["seconds"] == 3 and drops == []
