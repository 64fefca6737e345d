"""trtllm-serve stand-in: command line, options file, model checks, MPI world size (no docker)."""

import os
import subprocess
import sys
import time

import pytest

from lab_helpers import (DRAFT, MODEL, hf_download, run_module, running_server,
                         serve_cmd, write_yaml)


def serve(env, *args):
    return run_module("serve", list(args), env)


# -- click-shaped command line ------------------------------------------------------------------

def test_unknown_flag_exits_2_with_click_message(standin_env):
    proc = serve(standin_env, MODEL, "--foo", "1")
    assert proc.returncode == 2
    assert "Error: No such option: --foo" in proc.stderr
    assert "Usage: trtllm-serve serve [OPTIONS] MODEL" in proc.stderr
    assert proc.stdout == ""


def test_misspelled_flag_gets_a_suggestion(standin_env):
    proc = serve(standin_env, MODEL, "--tp_siz", "2")
    assert proc.returncode == 2
    assert "No such option: --tp_siz" in proc.stderr and "--tp_size" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--backend", "vllm"], "Invalid value for '--backend': 'vllm' is not one of 'pytorch', 'tensorrt', '_autodeploy'."),
    (["--port", "http"], "Invalid value for '--port': 'http' is not a valid integer."),
    (["--kv_cache_free_gpu_memory_fraction", "most"], "'most' is not a valid float."),
    (["--log_level", "loud"], "Invalid value for '--log_level'"),
    (["--trust_remote_code=yes"], "Option '--trust_remote_code' does not take a value."),
    (["--port"], "Option '--port' requires an argument."),
])
def test_bad_values_exit_2(standin_env, args, message):
    proc = serve(standin_env, MODEL, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_missing_and_extra_arguments(standin_env):
    proc = serve(standin_env)
    assert proc.returncode == 2 and "Error: Missing argument 'MODEL'." in proc.stderr
    proc = serve(standin_env, MODEL, "other")
    assert proc.returncode == 2 and "Got unexpected extra argument (other)" in proc.stderr


def test_help_lists_release_flags(standin_env):
    proc = serve(standin_env, "serve", "--help")
    assert proc.returncode == 0
    for flag in ("--backend", "--tp_size", "--pp_size", "--ep_size", "--max_batch_size", "--max_num_tokens",
                 "--max_seq_len", "--kv_cache_free_gpu_memory_fraction", "--extra_llm_api_options", "--host",
                 "--port", "--trust_remote_code", "--log_level", "--config"):
        assert flag in proc.stdout


@pytest.mark.parametrize("version, flag, value, known", [
    ("1.2.0rc1", "--config", "x.yml", False),
    ("1.2.0rc6", "--config", "x.yml", True),
    ("1.3.0rc12", "--config", "x.yml", True),
    ("1.2.0rc1", "--tensor_parallel_size", "1", False),
    ("1.2.0rc6", "--tensor_parallel_size", "1", True),
    ("1.2.0rc6", "--free_gpu_memory_fraction", "0.5", True),
    ("1.2.0rc6", "--kv_cache_dtype", "fp8", False),
    ("1.3.0rc12", "--kv_cache_dtype", "fp8", True),
    ("1.2.0rc6", "--enable_attention_dp", None, False),
    ("1.3.0rc12", "--enable_attention_dp", None, True),
])
def test_flags_follow_the_release(standin_env, version, flag, value, known):
    standin_env["TRTLLM_VERSION"] = version
    args = [flag] + ([value] if value is not None else [])
    proc = serve(standin_env, "serve", MODEL, *args)
    if known:
        # Parsing succeeded: it got as far as the options file or the (absent) model.
        assert proc.returncode == 1, proc.stderr
        assert "No such option" not in proc.stderr
    else:
        assert proc.returncode == 2
        assert "Error: No such option: %s" % flag in proc.stderr


def test_short_names_work_in_every_release(standin_env, tmp_path):
    model_dir = hf_download(standin_env, MODEL, "--local-dir", str(tmp_path / "m"))
    for version in ("1.2.0rc1", "1.2.0rc6", "1.3.0rc12"):
        standin_env["TRTLLM_VERSION"] = version
        with running_server(standin_env, [model_dir, "--tp_size", "1", "--pp_size", "1", "--ep_size", "1",
                                          "--kv_cache_free_gpu_memory_fraction", "0.8", "--max_batch_size", "8",
                                          "--max_num_tokens", "1024", "--max_seq_len", "4096",
                                          "--trust_remote_code", "--log_level", "info", "--backend", "pytorch"],
                            tmp_path) as server:
            assert "TensorRT-LLM version: %s" % version in server.log()


# -- options file --------------------------------------------------------------------------------

def test_missing_options_file_fails(standin_env, tmp_path):
    proc = serve(standin_env, MODEL, "--extra_llm_api_options", str(tmp_path / "nope.yml"))
    assert proc.returncode == 1
    assert "No such file or directory" in proc.stderr


def test_options_file_must_be_a_mapping(standin_env, tmp_path):
    path = write_yaml(tmp_path / "o.yml", "- a\n- b\n")
    proc = serve(standin_env, MODEL, "--extra_llm_api_options", path)
    assert proc.returncode == 1 and "mapping" in proc.stderr
    path = write_yaml(tmp_path / "p.yml", "a: [1,\n")
    proc = serve(standin_env, MODEL, "--extra_llm_api_options", path)
    assert proc.returncode == 1 and "not valid YAML" in proc.stderr


@pytest.mark.parametrize("version, text, needle", [
    ("1.2.0rc6", "speculative_config:\n  decoding_type: Eagle3\n  max_draft_len: 3\n"
                 "  speculative_model_dir: /tmp/x\n", "Eagle3"),
    ("1.2.0rc1", "speculative_config:\n  decoding_type: Eagle\n  max_draft_len: 3\n"
                 "  speculative_model: /tmp/x\n", "speculative_model"),
    ("1.2.0rc6", "use_cuda_graph: true\n", "use_cuda_graph"),
    ("1.2.0rc6", "speculative_config:\n  decoding_type: Eagle\n  max_draft_len: \"4\"\n"
                 "  speculative_model_dir: /tmp/x\n", "TypeError"),  # 1.2's Eagle path: no validation
    ("1.3.0rc12", "kv_cache_config:\n  free_gpu_memory_fraction: 1.5\n", "free_gpu_memory_fraction"),
    ("1.2.0rc6", "moe_config:\n  backend: AUTO\n", "AUTO"),
])
def test_invalid_options_rejected_by_release_rules(standin_env, tmp_path, version, text, needle):
    standin_env["TRTLLM_VERSION"] = version
    path = write_yaml(tmp_path / "extra.yml", text)
    proc = serve(standin_env, MODEL, "--extra_llm_api_options", path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert needle in proc.stderr
    assert "invalid extra LLM API options" in proc.stderr  # judged by the stand-in's own models
    assert "Application startup complete." not in proc.stdout


def test_valid_options_for_13_with_alias_warning(standin_env, tmp_path):
    standin_env["TRTLLM_VERSION"] = "1.3.0rc12"
    model = hf_download(standin_env, MODEL)
    draft = hf_download(standin_env, DRAFT, "--local-dir", str(tmp_path / "draft"))
    path = write_yaml(tmp_path / "extra.yml",
                      "speculative_config:\n  decoding_type: Eagle\n  max_draft_len: 3\n"
                      "  speculative_model_dir: %s\n" % draft)
    with running_server(standin_env, [MODEL, "--config", path], tmp_path) as server:
        log = server.log()
    assert model
    assert "[W]" in log and "Eagle3" in log       # alias accepted with a warning


# -- model presence ------------------------------------------------------------------------------

def test_hf_id_not_in_cache_fails_like_offline_hub(standin_env):
    proc = serve(standin_env, "nvidia/Not-Downloaded")
    assert proc.returncode == 1
    assert "LocalEntryNotFoundError" in proc.stderr and "nvidia/Not-Downloaded" in proc.stderr


def test_local_dir_without_config_fails(standin_env, tmp_path):
    (tmp_path / "empty").mkdir()
    proc = serve(standin_env, str(tmp_path / "empty"))
    assert proc.returncode == 1 and "config.json" in proc.stderr


def test_missing_draft_model_fails(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    path = write_yaml(tmp_path / "extra.yml",
                      "speculative_config:\n  decoding_type: Eagle\n  max_draft_len: 3\n"
                      "  speculative_model_dir: %s\n" % (tmp_path / "no-draft"))
    proc = serve(standin_env, MODEL, "--extra_llm_api_options", path)
    assert proc.returncode == 1
    assert "speculative_model_dir" in proc.stderr and "no-draft" in proc.stderr


def test_cached_hf_id_and_local_dir_both_load(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    with running_server(standin_env, [MODEL], tmp_path) as server:
        assert "Loading model %s" % MODEL in server.log()
    local = hf_download(standin_env, DRAFT, "--local-dir", str(tmp_path / "local"))
    with running_server(standin_env, [local], tmp_path) as server:
        assert "Application startup complete." in server.log()


def test_port_in_use_fails(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    with running_server(standin_env, [MODEL], tmp_path) as server:
        proc = serve(standin_env, MODEL, "--host", "127.0.0.1", "--port", str(server.port))
    assert proc.returncode == 1 and "address already in use" in proc.stderr.lower()


# -- MPI world size and trtllm-llmapi-launch -------------------------------------------------------

def launch_cmd(args):
    return [sys.executable, "-m", "trtllm_standin.launch"] + serve_cmd(args)


def test_tp2_without_launcher_refuses(standin_env):
    hf_download(standin_env, MODEL)
    proc = serve(standin_env, MODEL, "--tp_size", "2")
    assert proc.returncode == 1
    assert "MPI world size (1)" in proc.stderr and "tp_size" in proc.stderr


def test_launcher_rank0_passes_world_size(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    standin_env.update({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})
    with running_server(standin_env, [MODEL, "--tp_size", "2"], tmp_path, cmd=launch_cmd) as server:
        log = server.log()
    assert "rank 0/2" in log and "MPI world size 2" in log


def test_launcher_world_size_mismatch_refuses(standin_env):
    hf_download(standin_env, MODEL)
    standin_env.update({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})
    proc = subprocess.run(launch_cmd([MODEL, "--tp_size", "1"]), env=standin_env, capture_output=True,
                          text=True, timeout=30, check=False)
    assert proc.returncode == 1
    assert "MPI world size (2)" in proc.stderr


def test_yaml_tensor_parallel_size_beats_cli(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    path = write_yaml(tmp_path / "extra.yml", "tensor_parallel_size: 2\n")
    proc = serve(standin_env, MODEL, "--tp_size", "1", "--extra_llm_api_options", path)
    assert proc.returncode == 1 and "MPI world size (1)" in proc.stderr


@pytest.mark.parametrize("rank_env", [
    {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"},
    {"PMI_RANK": "1"},
    {"SLURM_PROCID": "1", "SLURM_NTASKS": "2"},
])
def test_launcher_other_ranks_block_until_terminated(standin_env, tmp_path, rank_env):
    marker = tmp_path / "ran"
    standin_env.update(rank_env)
    cmd = [sys.executable, "-m", "trtllm_standin.launch", sys.executable, "-c",
           "open(%r, 'w').write('x')" % str(marker)]
    proc = subprocess.Popen(cmd, env=standin_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.7)
    assert proc.poll() is None, "a worker rank must block"
    proc.terminate()
    out = proc.communicate(timeout=10)[0]
    assert proc.returncode == 0
    assert "worker" in out
    assert not marker.exists(), "only rank 0 runs the command"


def test_launcher_rank_and_size_precedence(standin_env, tmp_path):
    out = tmp_path / "env.txt"
    standin_env.update({"PMI_RANK": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "3", "OMPI_MCA_x": "y"})
    code = ("import os; open(%r, 'w').write('%%s %%s' %% (os.environ['TRTLLM_STANDIN_WORLD_SIZE'], "
            "sorted(k for k in os.environ if k.startswith(('OMPI_', 'PMI_', 'SLURM_')))))" % str(out))
    proc = subprocess.run([sys.executable, "-m", "trtllm_standin.launch", sys.executable, "-c", code],
                          env=standin_env, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    # PMI_RANK (0) is read before SLURM_PROCID; size from SLURM_NTASKS; MPI variables stripped.
    assert out.read_text() == "3 []"


def test_launcher_without_command_is_a_usage_error(standin_env):
    proc = run_module("launch", [], standin_env)
    assert proc.returncode == 2 and "usage" in proc.stderr


def test_bin_wrappers_point_at_the_package():
    bindir = os.path.join(os.path.dirname(__file__), "..", "..", "molecule", "resources", "lab", "images",
                          "trtllm-standin", "bin")
    expected = {"trtllm-serve": "serve", "trtllm-llmapi-launch": "launch", "hf": "hf_cli", "huggingface-cli": "hf_cli"}
    for name, module in expected.items():
        path = os.path.join(bindir, name)
        assert os.access(path, os.X_OK), name
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        assert "from trtllm_standin.%s import main" % module in text
