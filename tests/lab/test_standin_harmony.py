"""The TRT-LLM stand-in refuses gpt-oss without its tiktoken encodings, as openai_harmony does offline."""

import os
import subprocess

from lab_helpers import LAB_DIR, hf_download, running_server, serve_cmd

GPT_OSS = "openai/gpt-oss-120b"
ENCODINGS = os.path.join(LAB_DIR, "files", "encodings")


def test_gpt_oss_without_encodings_does_not_start(standin_env):
    hf_download(standin_env, GPT_OSS)
    proc = subprocess.run(serve_cmd([GPT_OSS, "--port", "1"]), env=standin_env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 1
    assert "openai_harmony.HarmonyError: error downloading or loading vocab file" in proc.stderr
    assert "TIKTOKEN_ENCODINGS_BASE is not set" in proc.stderr


def test_gpt_oss_with_an_empty_directory_names_the_file(standin_env, tmp_path):
    hf_download(standin_env, GPT_OSS)
    standin_env["TIKTOKEN_ENCODINGS_BASE"] = str(tmp_path)
    proc = subprocess.run(serve_cmd([GPT_OSS, "--port", "1"]), env=standin_env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 1 and "o200k_base.tiktoken: no such file" in proc.stderr


def test_gpt_oss_with_the_encodings_serves(standin_env, tmp_path):
    hf_download(standin_env, GPT_OSS)
    standin_env["TIKTOKEN_ENCODINGS_BASE"] = ENCODINGS
    with running_server(standin_env, [GPT_OSS], tmp_path) as server:
        assert "harmony encodings from %s" % ENCODINGS in server.log()
