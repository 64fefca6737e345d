"""hf / huggingface-cli stand-in: gating, tokens, cache layout, --local-dir, no-op (no docker)."""

import json
import os
import subprocess
import sys

import pytest

from lab_helpers import run_module

GATED = "meta-llama/Llama-3.1-8B-Instruct"
PUBLIC = "nvidia/Qwen3-235B-A22B-Eagle3"
TOKEN = "hf_abcdefgh1234"


def hf(env, *args, prog="hf"):
    return run_module("hf_cli", list(args), env, prog=prog)


def test_public_repo_fills_hub_cache_layout(standin_env):
    proc = hf(standin_env, "download", PUBLIC)
    assert proc.returncode == 0, proc.stderr
    snapshot = proc.stdout.strip()
    root = os.path.join(standin_env["HF_HOME"], "hub", "models--nvidia--Qwen3-235B-A22B-Eagle3")
    assert snapshot.startswith(os.path.join(root, "snapshots") + os.sep)
    with open(os.path.join(root, "refs", "main"), encoding="utf-8") as handle:
        assert handle.read() == os.path.basename(snapshot)
    config = os.path.join(snapshot, "config.json")
    assert os.path.islink(config)                       # snapshot entries link to blobs, like the hub cache
    with open(config, encoding="utf-8") as handle:
        assert json.load(handle)["architectures"] == ["LlamaForCausalLMEagle3"]
    assert "Fetching" in proc.stderr and "Downloading 'config.json'" in proc.stderr


def test_second_download_is_a_no_op(standin_env):
    first = hf(standin_env, "download", PUBLIC)
    blob_dir = os.path.join(standin_env["HF_HOME"], "hub", "models--nvidia--Qwen3-235B-A22B-Eagle3", "blobs")
    mtimes = {name: os.stat(os.path.join(blob_dir, name)).st_mtime_ns for name in os.listdir(blob_dir)}
    second = hf(standin_env, "download", PUBLIC)
    assert second.returncode == 0
    assert "nothing to download" in second.stderr and "Downloading" not in second.stderr
    assert second.stdout == first.stdout
    assert mtimes == {name: os.stat(os.path.join(blob_dir, name)).st_mtime_ns for name in os.listdir(blob_dir)}


def test_gated_repo_without_token_is_401(standin_env):
    proc = hf(standin_env, "download", GATED)
    assert proc.returncode == 1
    assert "401" in proc.stderr and "Cannot access gated repo" in proc.stderr and GATED in proc.stderr
    assert not os.path.exists(os.path.join(standin_env["HF_HOME"], "hub", "models--meta-llama--Llama-3.1-8B-Instruct"))


@pytest.mark.parametrize("how", ["env", "legacy_env", "token_path", "hf_home_token", "flag"])
def test_gated_repo_with_token(standin_env, tmp_path, how):
    args = ["download", GATED]
    if how == "env":
        standin_env["HF_TOKEN"] = TOKEN
    elif how == "legacy_env":
        standin_env["HUGGING_FACE_HUB_TOKEN"] = TOKEN
    elif how == "token_path":
        (tmp_path / "tok").write_text(TOKEN + "\n")
        standin_env["HF_TOKEN_PATH"] = str(tmp_path / "tok")
    elif how == "hf_home_token":
        os.makedirs(standin_env["HF_HOME"], exist_ok=True)
        with open(os.path.join(standin_env["HF_HOME"], "token"), "w", encoding="utf-8") as handle:
            handle.write(TOKEN)
    else:
        args += ["--token", TOKEN]
    proc = hf(standin_env, *args)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("token", ["hf_short", "abcdefghijkl", "hf_abc-defgh"])
def test_malformed_token_is_rejected_even_for_public_repos(standin_env, token):
    standin_env["HF_TOKEN"] = token
    proc = hf(standin_env, "download", PUBLIC)
    assert proc.returncode == 1 and "401" in proc.stderr and "Invalid credentials" in proc.stderr


def test_gated_list_is_configurable(standin_env):
    standin_env["STANDIN_GATED_REPOS"] = "nvidia/*-Eagle3"
    assert hf(standin_env, "download", PUBLIC).returncode == 1
    assert hf(standin_env, "download", GATED).returncode == 0


def test_nvidia_fp4_llama_is_gated_by_default(standin_env):
    assert hf(standin_env, "download", "nvidia/Llama-3.3-70B-Instruct-FP4").returncode == 1


def test_local_dir(standin_env, tmp_path):
    target = tmp_path / "opt" / "Qwen3-235B-A22B-Eagle3"
    proc = hf(standin_env, "download", PUBLIC, "--local-dir", str(target) + "/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(target)
    assert (target / "config.json").is_file() and not (target / "config.json").is_symlink()
    assert (target / ".cache" / "huggingface" / "download" / "config.json.metadata").is_file()
    assert not os.path.exists(os.path.join(standin_env["HF_HOME"], "hub"))
    again = hf(standin_env, "download", PUBLIC, "--local-dir", str(target))
    assert again.returncode == 0 and "nothing to download" in again.stderr


def test_single_file_and_missing_file(standin_env):
    proc = hf(standin_env, "download", PUBLIC, "config.json")
    assert proc.returncode == 0
    snapshot = proc.stdout.strip()
    assert os.listdir(snapshot) == ["config.json"]
    proc = hf(standin_env, "download", PUBLIC, "nope.bin")
    assert proc.returncode == 1 and "Entry Not Found" in proc.stderr


def test_offline_and_missing_repo(standin_env):
    standin_env["HF_HUB_OFFLINE"] = "1"
    proc = hf(standin_env, "download", PUBLIC)
    assert proc.returncode == 1 and "LocalEntryNotFoundError" in proc.stderr
    del standin_env["HF_HUB_OFFLINE"]
    standin_env["STANDIN_MISSING_REPOS"] = "nvidia/Qwen3-235B*"
    proc = hf(standin_env, "download", PUBLIC)
    assert proc.returncode == 1 and "Repository Not Found" in proc.stderr
    proc = hf(standin_env, "download", "not a repo")
    assert proc.returncode == 1 and "Repo id must" in proc.stderr


def test_slow_download_knob(standin_env):
    import time  # pylint: disable=import-outside-toplevel
    standin_env["STANDIN_DOWNLOAD_SECONDS"] = "1"
    started = time.time()
    assert hf(standin_env, "download", PUBLIC).returncode == 0
    assert time.time() - started >= 1.0


def test_huggingface_cli_alias_and_usage(standin_env):
    proc = hf(standin_env, "download", PUBLIC, "--quiet", prog="huggingface-cli")
    assert proc.returncode == 0 and proc.stderr == ""
    proc = hf(standin_env, "upload", "x", prog="huggingface-cli")
    assert proc.returncode == 2 and "huggingface-cli" in proc.stderr
    proc = hf(standin_env)
    assert proc.returncode == 2


# -- the stand-in hub's policy (trtllm_standin/hub.py): grants per token, private repositories, revisions, a full disk

NO_GRANTS = "hf_LabNoGrants00000000000000000000001"
LLAMA_ONLY = "hf_LabLlamaOnly0000000000000000000001"


@pytest.mark.parametrize("token,repo,expected", [
    (NO_GRANTS, GATED, "GatedRepoError: 403 Client Error"),
    (LLAMA_ONLY, "nvidia/Llama-3.3-70B-Instruct-FP4", "GatedRepoError: 403 Client Error"),
    (LLAMA_ONLY, "spark-lab/private-draft", "RepositoryNotFoundError: 401"),
    (None, "spark-lab/private-draft", "RepositoryNotFoundError: 401"),
    ("hf_LabFineGrained00000000000000000001", GATED, "HfHubHTTPError: 403 Forbidden"),
    ("hf_LabRevoked000000000000000000000001", PUBLIC, "Invalid credentials in Authorization header"),
    (TOKEN, "nvidai/Qwen3-8B-FP4", "RepositoryNotFoundError: 401"),
])
def test_the_hub_refuses_as_huggingface_co_does(standin_env, token, repo, expected):
    if token:
        standin_env["HF_TOKEN"] = token
    proc = hf(standin_env, "download", repo, "--quiet")
    assert proc.returncode == 1 and expected in proc.stderr, proc.stderr


def test_grants_and_revisions(standin_env):
    standin_env["HF_TOKEN"] = LLAMA_ONLY
    assert hf(standin_env, "download", GATED, "--quiet").returncode == 0
    standin_env["HF_TOKEN"] = TOKEN  # any other well-formed token reads everything, private repositories too
    assert hf(standin_env, "download", "spark-lab/private-draft", "--revision", "v1.0", "--quiet").returncode == 0
    proc = hf(standin_env, "download", PUBLIC, "--revision", "v9.9", "--quiet")
    assert proc.returncode == 1 and "RevisionNotFoundError: 404" in proc.stderr and "Invalid rev id: v9.9" in proc.stderr


def test_a_full_disk(standin_env):
    proc = hf(standin_env, "download", "spark-lab/huge-FP4", "--quiet")
    assert proc.returncode == 1 and "[Errno 28] No space left on device" in proc.stderr


def test_the_stand_in_huggingface_hub_package_answers_from_the_same_policy(standin_env):
    """What the collection's pre-flight calls in the image: HfApi.whoami, auth_check and model_info."""
    here = os.path.dirname(os.path.abspath(__file__))
    image = os.path.join(here, "..", "..", "molecule", "resources", "lab", "images", "trtllm-standin")
    env = dict(standin_env, PYTHONPATH=os.pathsep.join([os.path.join(image, "files", "usr", "local", "lib",
                                                                     "python3.11", "dist-packages"),
                                                        standin_env.get("PYTHONPATH", "")]))
    code = ("import huggingface_hub as h, json\n"
            "api = h.HfApi()\n"
            "out = {'version': h.__version__, 'user': api.whoami(token='%s')['name']}\n"
            "for repo, token in (('%s', False), ('%s', '%s'), ('nvidai/x', '%s')):\n"
            "    try:\n"
            "        api.auth_check(repo, token=token); api.model_info(repo, revision='main', token=token)\n"
            "        out[repo] = 'ok'\n"
            "    except h.errors.HfHubHTTPError as exc:\n"
            "        out[repo] = '%%s %%s' %% (type(exc).__name__, exc.response.status_code)\n"
            "print(json.dumps(out))\n" % (TOKEN, GATED, "spark-lab/private-draft", NO_GRANTS, TOKEN))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"version": "0.35.3", "user": "spark-lab", GATED: "GatedRepoError 401",
                                       "spark-lab/private-draft": "RepositoryNotFoundError 401",
                                       "nvidai/x": "RepositoryNotFoundError 401"}
