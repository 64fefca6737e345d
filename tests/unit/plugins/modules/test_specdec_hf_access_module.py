# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the specdec_hf_access module's main(): where the question runs, what is skipped, what it says.

``docker`` is a double that answers ``image inspect`` and runs ``docker run ... python3 -c PROBE`` as the release
image would: the probe's own code, fed the request on stdin, against a huggingface_hub given by the test.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import types

import pytest

from ansible.module_utils import _internal, basic
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import specdec_hf_access

IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24"
GOOD = "hf_GoodToken0000000000000000000000000"


def fake_hub(gated=(), missing=()):
    """A huggingface_hub with the library's class names and the calls the probe makes."""
    errors = types.SimpleNamespace()

    class HfHubHTTPError(Exception):
        def __init__(self, message, status):
            super().__init__(message)
            self.response = types.SimpleNamespace(status_code=status)

    class RepositoryNotFoundError(HfHubHTTPError):
        pass

    class GatedRepoError(RepositoryNotFoundError):
        pass

    errors.HfHubHTTPError = HfHubHTTPError
    seen = []

    class HfApi:
        def __init__(self, endpoint=None):
            self.endpoint = endpoint

        def whoami(self, token=None):
            seen.append(("whoami", token))
            return {"name": "owner"}

        def auth_check(self, repo_id, token=None):
            seen.append(("auth_check", repo_id, token))
            if repo_id in missing:
                raise RepositoryNotFoundError("401 Client Error. Repository Not Found", 401)
            if repo_id in gated:
                raise GatedRepoError("403 Client Error. Cannot access gated repo", 403)

        def model_info(self, repo_id, revision=None, token=None, timeout=None):
            seen.append(("model_info", repo_id, revision))

    return types.SimpleNamespace(HfApi=HfApi, errors=errors, __version__="0.35.3", seen=seen)


class Docker:
    """docker image inspect / docker run of the probe, recording each argv and stdin."""

    def __init__(self, hub, has_image=True):
        self.hub, self.has_image, self.calls = hub, has_image, []

    def run_command(self, argv, data=None, **kwargs):  # pylint: disable=unused-argument
        self.calls.append((list(argv), data))
        if argv[1:3] == ["image", "inspect"]:
            return (0, "sha256:img\n", "") if self.has_image else (1, "", "No such image")
        assert argv[1:4] == ["run", "--rm", "-i"] and argv[-2] == "-c"
        namespace = {"__name__": "probe_in_image"}
        exec(compile(argv[-1], "<probe>", "exec"), namespace)  # pylint: disable=exec-used
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            print(json.dumps(namespace["probe"](json.loads(data), self.hub)))
        return 0, out.getvalue(), ""


def run(capsys, monkeypatch, args, docker):
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})  # a module process starts with none
    monkeypatch.setattr(_internal, "is_controller", False)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", docker.run_command)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            specdec_hf_access.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_asks_in_the_image_with_the_token_on_stdin(capsys, monkeypatch):
    hub = fake_hub(gated=("meta-llama/Llama-3.1-8B-Instruct",))
    docker = Docker(hub)
    rc, result = run(capsys, monkeypatch, {
        "node": "spark-a", "image": IMAGE, "network_mode": "container:spark-a", "token": GOOD,
        "repos": [{"repo": "meta-llama/Llama-3.1-8B-Instruct", "field": "specdec_serve_model"},
                  {"repo": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "field": "specdec_serve_draft_model"}]}, docker)
    assert rc == 1 and result["via"] == "image" and result["token"] == "valid" and result["changed"] is False
    assert result["msg"].startswith("spark-a: meta-llama/Llama-3.1-8B-Instruct (specdec_serve_model) is gated")
    assert [r["status"] for r in result["checked"]] == ["gated", "ok"]
    run_argv, stdin = docker.calls[-1]
    assert "--network" in run_argv and "container:spark-a" in run_argv and IMAGE in run_argv
    assert GOOD not in " ".join(run_argv) and json.loads(stdin)["token"] == GOOD
    assert GOOD not in json.dumps(result)


def test_a_complete_download_is_not_asked_about(capsys, monkeypatch, tmp_path):
    marker = tmp_path / ".dgx-spark-complete"
    marker.write_text("openai/gpt-oss-120b\n")
    docker = Docker(fake_hub())
    rc, result = run(capsys, monkeypatch, {"image": IMAGE, "token": GOOD, "repos": [
        {"repo": "openai/gpt-oss-120b", "marker": str(marker)}]}, docker)
    assert rc == 0 and result["via"] == "skipped" and result["complete"] == ["openai/gpt-oss-120b"]
    assert docker.calls == []  # not even docker


def test_the_token_files_token_when_none_is_given_and_its_format_first(capsys, monkeypatch, tmp_path):
    token_file = tmp_path / "hf_token"
    token_file.write_text("Bearer " + GOOD + "\n")
    docker = Docker(fake_hub())
    rc, result = run(capsys, monkeypatch, {"node": "spark-b", "image": IMAGE, "token_file": str(token_file),
                                           "repos": [{"repo": "openai/gpt-oss-120b"}]}, docker)
    assert rc == 1 and result["via"] == "format" and docker.calls == []
    assert "spark-b: the Hugging Face token in %s is not usable: it starts with 'Bearer '" % token_file in result["msg"]
    assert GOOD not in json.dumps(result)


def test_without_the_image_or_the_library_it_warns_and_goes_on(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # not importable on this node
    rc, result = run(capsys, monkeypatch, {"node": "spark-a", "image": IMAGE, "token": GOOD,
                                           "repos": [{"repo": "openai/gpt-oss-120b"}]}, Docker(fake_hub(), False))
    assert rc == 0 and result["via"] == "skipped"
    warning = result["warnings"][0]
    text = warning["event"]["msg"] if isinstance(warning, dict) else warning
    assert "model access was not checked" in text and "huggingface_hub is neither in an image" in text
