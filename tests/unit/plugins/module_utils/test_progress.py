# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The progress readings and lines: docker pull's log, hf download's output, bytes on disk, the server's log."""

from __future__ import annotations

import os

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _progress as progress

# `docker pull` without a terminal (docker 26, Debian 12): one line per layer and state change.
PULL_LOG = """1.2.0: Pulling from nvidia/tensorrt-llm/release
3c645031de29: Already exists
0d6448aff889: Pulling fs layer
0a7674e3e8fe: Pulling fs layer
97f3d0d37a4c: Pulling fs layer
0a7674e3e8fe: Waiting
0d6448aff889: Verifying Checksum
0d6448aff889: Download complete
0d6448aff889: Pull complete
97f3d0d37a4c: Download complete
"""


def test_pull_log_counts_layers_done_and_downloaded():
    assert progress.pull_progress(PULL_LOG) == {"layers": 4, "done": 2, "fetched": 3,
                                                "last": "97f3d0d37a4c: Download complete"}
    finished = PULL_LOG + ("0a7674e3e8fe: Download complete\n0a7674e3e8fe: Pull complete\n"
                           "97f3d0d37a4c: Pull complete\nDigest: sha256:abc\n"
                           "Status: Downloaded newer image for nvcr.io/nvidia/tensorrt-llm/release:1.2.0\n")
    got = progress.pull_progress(finished)
    assert (got["layers"], got["done"]) == (4, 4)
    assert got["last"].startswith("Status: Downloaded newer image")
    assert progress.pull_progress("") == {"layers": 0, "done": 0, "fetched": 0, "last": ""}


def test_pull_line():
    line = progress.pull_line("nvcr.io/nvidia/tensorrt-llm/release:1.2.0", progress.pull_progress(PULL_LOG), 250, 7200)
    assert line == "nvcr.io/nvidia/tensorrt-llm/release:1.2.0: 2 of 4 layers done (3 downloaded), 4m10s of 2h00m"
    assert progress.pull_line("x", progress.pull_progress(""), 3, 60) == "x: starting, 3s of 1m00s"


def test_hf_download_file_count_from_tqdm_output_with_carriage_returns():
    text = ("Fetching 12 files:   0%|          | 0/12 [00:00<?, ?it/s]\rFetching 12 files:  42%|####      | 5/12 "
            "[01:10<01:38, 14.1s/it]\r")
    assert progress.files_progress(text) == (5, 12)
    assert progress.files_progress("Downloading 'config.json'") is None


def test_dir_bytes_counts_files_and_incomplete_downloads_once(tmp_path):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "aaa").write_bytes(b"x" * 1000)
    (blobs / "bbb.incomplete").write_bytes(b"x" * 500)
    (blobs / "bbb.lock").write_bytes(b"x" * 7)
    meta = tmp_path / ".cache" / "huggingface" / "download"
    meta.mkdir(parents=True)
    (meta / "config.json.metadata").write_bytes(b"x" * 90)
    snapshot = tmp_path / "snapshots" / "c0ffee"
    snapshot.mkdir(parents=True)
    os.symlink(str(blobs / "aaa"), str(snapshot / "model.safetensors"))  # the cache's link: not counted twice
    os.symlink(str(blobs), str(tmp_path / "linked-dir"))
    assert progress.dir_bytes(str(tmp_path)) == 1500
    assert progress.dir_bytes(str(tmp_path / "missing")) == 0


def test_dir_bytes_since_a_start_and_docker_times(tmp_path):
    (tmp_path / "new").write_bytes(b"x" * 10)
    (tmp_path / "old").write_bytes(b"x" * 100)
    os.utime(str(tmp_path / "old"), (1000, 1000))
    assert progress.dir_bytes(str(tmp_path), since=2000) == 10
    assert progress.dir_bytes(str(tmp_path)) == 110
    assert progress.docker_time("1970-01-01T00:16:40.5Z") == 1000.5
    assert progress.docker_time("0001-01-01T00:00:00Z") is None and progress.docker_time(None) is None


def test_download_line_with_and_without_the_expected_size():
    gib = 1024 ** 3
    line = progress.download_line("Qwen/Qwen3-8B", int(3.2 * gib), 16 * gib, 40 * 1024 ** 2, [3, 12])
    assert line == "Qwen/Qwen3-8B: 3.2 GiB of 16.0 GiB (19%), 40.0 MiB/s, about 5m28s left, 3/12 files"
    assert (progress.download_line("a/b", 2048, None, None)
            == "a/b: 2.0 KiB so far (total unknown)")
    assert progress.download_line("a/b", 10, 10, 0.0).startswith("a/b: 10 B of 10 B (100%), 0 B/s")


def test_rate_needs_a_span():
    assert progress.rate(None, (10, 5)) is None
    assert progress.rate((10, 0), (10.5, 100)) is None
    assert progress.rate((0, 0), (10, 1000)) == 100.0


def test_the_loading_line_names_time_state_health_and_the_last_meaningful_log_line():
    log = ("[TensorRT-LLM][INFO] Loading weights: 45%\n"
           'INFO:     127.0.0.1:5555 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
           "\x1b[32mINFO\x1b[0m:     127.0.0.1:5555 - \"GET /metrics HTTP/1.1\" 200 OK\n"
           'INFO:     127.0.0.1:42004 - "GET /prometheus/metrics HTTP/1.1" 200 OK\n\n')
    last = progress.meaningful_line(log)
    assert last == "[TensorRT-LLM][INFO] Loading weights: 45%"
    state = {"exists": True, "running": True, "restarts": 1, "health": 503, "last": last}
    assert progress.load_line("trtllm-specdec", state, 130, 1800) == (
        "trtllm-specdec: loading, 2m10s of 30m00s, restarted 1 time(s), health 503; "
        "last log: [TensorRT-LLM][INFO] Loading weights: 45%")
    assert "container not created yet" in progress.load_line("x", {"exists": False, "health": "no answer"}, 1, 10)
    assert "container exited" in progress.load_line("x", {"exists": True, "running": False, "status": "exited"}, 1, 10)


def test_sizes_and_durations():
    assert [progress.size(n) for n in (0, 1023, 1024, 5 * 1024 ** 2, 3 * 1024 ** 4)] == [
        "0 B", "1023 B", "1.0 KiB", "5.0 MiB", "3072.0 GiB"]
    assert [progress.duration(s) for s in (0, 59.6, 61, 3600, 7322)] == ["0s", "1m00s", "1m01s", "1h00m", "2h02m"]
    assert len(progress.clip("x" * 500)) == progress.LINE_MAX
