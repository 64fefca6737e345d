# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_progress module's main() with a double of the docker CLI on PATH (the commands and output shapes
the module reads: image inspect, pull, logs, inspect, and run of the hub probe)."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import spark_progress

DOCKER = r'''#!/usr/bin/env python3
import json, os, sys
state = os.environ["FAKE_DOCKER_DIR"]
args = sys.argv[1:]
with open(os.path.join(state, "calls"), "a") as calls:
    calls.write(json.dumps(args) + "\n")
if args[:2] == ["image", "inspect"]:
    sys.exit(0 if os.path.exists(os.path.join(state, "present")) else 1)
if args[0] == "pull":
    if os.path.exists(os.path.join(state, "pull-fails")):
        print("Error response from daemon: manifest unknown")
        sys.exit(1)
    print("1.2.0: Pulling from nvidia/tensorrt-llm/release")
    print("0d6448aff889: Pulling fs layer")
    print("0d6448aff889: Pull complete")
    open(os.path.join(state, "present"), "w").close()
    sys.exit(0)
if args[0] == "logs":
    sys.stdout.write(open(os.path.join(state, "logs")).read())
    sys.exit(0)
if args[0] == "inspect":
    print('{"Status":"running","Running":true,"StartedAt":"2020-01-01T00:00:00.123456789Z"} 2')
    sys.exit(0)
if args[0] == "run":
    request = json.loads(sys.stdin.read())
    with open(os.path.join(state, "request"), "w") as out:
        json.dump(request, out)
    print(json.dumps({"repos": [{"repo": request["repos"][0]["repo"], "status": "ok", "size": 4096}]}))
    sys.exit(0)
sys.exit(2)
'''


@pytest.fixture(autouse=True)
def on_a_node(monkeypatch, tmp_path):
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})
    monkeypatch.setattr(_internal, "is_controller", False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(DOCKER.replace("/usr/bin/env python3", sys.executable))
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    state = tmp_path / "state"
    state.mkdir()
    (state / "logs").write_text("Fetching 4 files:  50%|#####     | 2/4 [00:01<00:01]\n")
    monkeypatch.setenv("FAKE_DOCKER_DIR", str(state))
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    return state


def run_module(capsys, **args):
    ansible_warnings._global_warnings.clear()
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            spark_progress.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_pull_writes_the_log_the_wait_reads_and_is_a_no_op_once_present(capsys, tmp_path, on_a_node):
    log = tmp_path / "run" / "pull.log"
    rc, result = run_module(capsys, pull={"image": "nvcr.io/x:1", "log": str(log)})
    assert rc == 0 and result["changed"] is True and result["progress"]["done"] == 1
    assert "0d6448aff889: Pull complete" in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    rc, result = run_module(capsys, pull={"image": "nvcr.io/x:1", "log": str(log)})
    assert rc == 0 and result["changed"] is False
    calls = (on_a_node / "calls").read_text().count('"pull"')
    assert calls == 1


def test_a_failed_pull_says_what_docker_said(capsys, tmp_path, on_a_node):
    (on_a_node / "pull-fails").touch()
    rc, result = run_module(capsys, pull={"image": "nvcr.io/x:9", "log": str(tmp_path / "pull.log")})
    assert rc == 1 and result["msg"] == ("docker pull nvcr.io/x:9 failed (exit 1): Error response from daemon: "
                                         "manifest unknown")


def test_check_mode_pulls_nothing(capsys, tmp_path, on_a_node):
    rc, result = run_module(capsys, pull={"image": "nvcr.io/x:1", "log": str(tmp_path / "pull.log")},
                            _ansible_check_mode=True)
    assert rc == 0 and result["changed"] is True and result["msg"] == "would pull nvcr.io/x:1"
    assert '"pull"' not in (on_a_node / "calls").read_text()


def test_a_download_reading_with_the_hub_size_from_the_image_and_the_token_on_stdin(capsys, tmp_path, on_a_node):
    (on_a_node / "present").touch()
    target = tmp_path / "models" / "draft"
    target.mkdir(parents=True)
    (target / "config.json").write_bytes(b"x" * 1024)
    # An earlier revision's file, from before the download's container started: not this download's bytes.
    (target / "old.safetensors").write_bytes(b"x" * 4096)
    os.utime(str(target / "old.safetensors"), (1500000000, 1500000000))
    token = tmp_path / "hf_token"
    token.write_text("hf_NodeToken12345678\n")
    watch = {"label": "a/b", "kind": "download", "dir": str(target), "container": "c-fetch-0",
             "probe": {"image": "nvcr.io/x:1", "network_mode": "host", "repo": "a/b", "revision": None,
                       "token_file": str(token), "endpoint": None}}
    rc, result = run_module(capsys, watch=[watch], sizes=True)
    assert rc == 0 and result["snapshot"] == [{"label": "a/b", "kind": "download", "bytes": 1024, "files": [2, 4],
                                               "size": 4096}]
    assert json.loads((on_a_node / "request").read_text())["token"] == "hf_NodeToken12345678"
    assert not any("hf_NodeToken" in line for line in (on_a_node / "calls").read_text().splitlines())
    rc, result = run_module(capsys, watch=[watch])
    assert "size" not in result["snapshot"][0]


def test_a_load_reading(capsys, on_a_node):
    (on_a_node / "logs").write_text("[TRT-LLM] [I] Loading model weights\n"
                                    'INFO: 127.0.0.1:1 - "GET /health HTTP/1.1" 503\n')
    watch = {"label": "srv", "kind": "load", "container": "srv", "url": "http://127.0.0.1:9/health"}
    rc, result = run_module(capsys, watch=[watch])
    entry = result["snapshot"][0]
    assert rc == 0 and entry["running"] is True and entry["restarts"] == 2
    assert entry["last"] == "[TRT-LLM] [I] Loading model weights" and entry["health"] == "no answer"
