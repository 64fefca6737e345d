"""The stand-in's own judge of the options file (trtllm_standin/release.py): one accept and one reject
per rule, per release where the rule differs. Pure in-process checks; no docker, no collection code.

The expectations follow the release sources as read (each release's rendered ``llm_args.py`` source page,
https://nvidia.github.io/TensorRT-LLM/<release>/_modules/tensorrt_llm/llmapi/llm_args.html), not the
collection's option tables.
"""

import ast
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN_DIR = os.path.join(REPO, "molecule", "resources", "lab", "images", "trtllm-standin")
if STANDIN_DIR not in sys.path:
    sys.path.insert(0, STANDIN_DIR)

from trtllm_standin import release  # noqa: E402  pylint: disable=wrong-import-position
from trtllm_standin.release import KNOWN, ReleaseError, check  # noqa: E402  pylint: disable=wrong-import-position

R12 = ("1.2.0rc1", "1.2.0rc6")
R13 = ("1.3.0rc12", "1.3.0rc13")
DRAFT = "nvidia/Qwen3-8B-Eagle3"


def accept(options, version):
    return check(options, version)


def reject(options, version):
    with pytest.raises(ReleaseError) as info:
        check(options, version)
    return str(info.value)


def spec(decoding_type, **fields):
    return {"speculative_config": dict({"decoding_type": decoding_type}, **fields)}


def eagle(decoding_type="Eagle", **fields):
    base = {"max_draft_len": 4, "speculative_model_dir": DRAFT}
    base.update(fields)
    return spec(decoding_type, **base)


# -- interface ---------------------------------------------------------------------------------------

def test_known_releases():
    assert KNOWN == ("1.2.0rc1", "1.2.0rc6", "1.2.0", "1.2.1", "1.3.0rc12", "1.3.0rc13")
    assert issubclass(ReleaseError, ValueError)


@pytest.mark.parametrize("version", KNOWN)
def test_empty_file_is_fine(version):
    assert check({}, version) == ({}, [])


@pytest.mark.parametrize("version", ["1.3.0", "1.2.0rc5", "1.4.0rc1", ""])
def test_unknown_version_is_an_error(version):
    with pytest.raises(ReleaseError, match="not a release the stand-in models"):
        check({}, version)


def test_no_collection_code_is_imported():
    tree = ast.parse(open(release.__file__, encoding="utf-8").read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"ast", "contextvars", "copy", "enum", "functools", "math", "pathlib", "typing",
                        "typing_extensions", "pydantic"}


def test_non_pytorch_backend_is_passed_through_with_a_warning():
    options = {"anything": 1}
    normalized, warnings = check(options, "1.3.0rc13", backend="tensorrt")
    assert normalized == options and normalized is not options
    assert "only the PyTorch backend" in warnings[0]


def test_input_is_not_modified():
    options = eagle()
    before = repr(options)
    check(options, "1.2.0rc6")
    check(options, "1.3.0rc13")
    assert repr(options) == before


# -- top level: extra keys, coercion, ranges -----------------------------------------------------------

@pytest.mark.parametrize("version", KNOWN)
def test_unknown_top_level_key_is_extra_forbidden(version):
    message = reject({"max_batch_sizes": 8}, version)
    assert message.startswith("1 validation error for TorchLlmArgs\nmax_batch_sizes\n")
    assert "extra_forbidden" in message


@pytest.mark.parametrize("version", KNOWN)
def test_lax_coercion_like_pydantic(version):
    options = {"max_batch_size": "4", "enable_chunked_prefill": "false", "print_iter_log": "yes",
               "kv_cache_config": {"free_gpu_memory_fraction": "0.9"}}
    normalized, _warnings = accept(options, version)
    assert normalized == {"max_batch_size": 4, "enable_chunked_prefill": False, "print_iter_log": True,
                          "kv_cache_config": {"free_gpu_memory_fraction": 0.9}}


@pytest.mark.parametrize("version", KNOWN)
def test_type_errors_name_the_key_value_and_error_type(version):
    message = reject({"max_num_tokens": "lots"}, version)
    assert "max_num_tokens\n" in message and "int_parsing" in message and "input_value='lots'" in message
    message = reject({"enable_autotuner": "perhaps"}, version)
    assert "enable_autotuner\n" in message and "bool_parsing" in message


@pytest.mark.parametrize("version", KNOWN)
def test_no_ranges_the_source_does_not_have(version):
    # plain ints/floats in the source (the llm_args pages)
    options = {"kv_cache_config": {"max_tokens": 0, "event_buffer_max_size": -1, "cross_kv_cache_fraction": 1.5},
               "moe_config": {"max_num_tokens": 0}, "max_seq_len": 0,
               "attention_dp_config": {"timeout_iters": -1, "batching_wait_iters": -5}}
    normalized, _warnings = accept(options, version)
    assert normalized["kv_cache_config"]["event_buffer_max_size"] == -1
    assert normalized["attention_dp_config"] == {"timeout_iters": -1, "batching_wait_iters": -5}


@pytest.mark.parametrize("version", KNOWN)
def test_attention_dp_iterations_only_checked_with_balance(version):
    message = reject({"attention_dp_config": {"enable_balance": True, "timeout_iters": -1}}, version)
    assert "attention_dp_config.timeout_iters must be greater or equal to 0 when enable_balance is true" in message
    accept({"attention_dp_config": {"enable_balance": True, "timeout_iters": 0, "batching_wait_iters": 0}}, version)


@pytest.mark.parametrize("version", KNOWN)
def test_literal_choices(version):
    accept({"allreduce_strategy": "NCCL_SYMMETRIC", "tokenizer_mode": "slow",
            "guided_decoding_backend": "llguidance", "orchestrator_type": "rpc"}, version)
    message = reject({"allreduce_strategy": "RING"}, version)
    assert "allreduce_strategy\n" in message and "literal_error" in message


@pytest.mark.parametrize("version", KNOWN)
def test_sampler_type_takes_any_string_as_in_the_source(version):
    # Union[str, SamplerType]: the str member accepts anything at validation time
    normalized, _warnings = accept({"sampler_type": "TorchSampler"}, version)
    assert normalized == {"sampler_type": "TorchSampler"}
    accept({"sampler_type": "whatever"}, version)
    assert "sampler_type" in reject({"sampler_type": 3}, version)


@pytest.mark.parametrize("version", KNOWN)
def test_stream_interval_must_be_positive(version):
    accept({"stream_interval": 2}, version)
    message = reject({"stream_interval": 0}, version)
    assert ("stream_interval must be positive, got 0" in message) if version.startswith("1.2.") else ("greater_than" in message)


@pytest.mark.parametrize("version", KNOWN)
def test_batch_wait_ranges(version):
    accept({"batch_wait_max_tokens_ratio": 0.5, "batch_wait_timeout_iters": 3, "batch_wait_timeout_ms": 1.5}, version)
    message = reject({"batch_wait_max_tokens_ratio": 1.5}, version)
    assert ("must be in range [0, 1], got 1.5" in message) if version.startswith("1.2.") else ("less_than_equal" in message)
    assert "batch_wait_timeout_iters" in reject({"batch_wait_timeout_iters": -1}, version)


# -- top-level key sets per release (TorchLlmArgs/BaseLlmArgs/TrtLlmArgs on each page) ----------------

ROW2_KEYS = {
    "nvfp4_gemm_config": {"allowed_backends": ["cutlass"]},
    "sampler_force_async_worker": True,
    "ray_worker_extension_cls": "my.Ext",
    "ray_placement_config": {"defer_workers_init": True},
    "enable_sleep": True,
    "disable_flashinfer_sampling": True,
    "pp_partition": [10, 20],
    "otlp_traces_endpoint": "http://otel:4317",
    "env_overrides": {"NCCL_DEBUG": "INFO"},
}


@pytest.mark.parametrize("key", sorted(ROW2_KEYS))
def test_row2_keys_exist_on_rc6_not_on_rc1(key):
    options = {key: ROW2_KEYS[key]}
    if key.startswith("ray_"):
        options["orchestrator_type"] = "ray"
    normalized, _warnings = accept(options, "1.2.0rc6")
    assert key in normalized
    message = reject({key: ROW2_KEYS[key]}, "1.2.0rc1")
    assert key in message and "extra_forbidden" in message


@pytest.mark.parametrize("version", R13)
def test_1_3_top_level_keys(version):
    accept({"nvfp4_gemm_config": {"allowed_backends": ["cutedsl"]}, "env_overrides": {"A": "1"},
            "video_pruning_rate": 0.5, "custom_tokenizer": "x.Y", "max_stats_len": 10,
            "dwdp_config": {"dwdp_size": 2}, "use_cute_dsl_blockscaling_mm": True}, version)
    assert "extra_forbidden" in reject({"enable_sleep": True}, version)  # sleep_config replaced it
    assert "less_than" in reject({"video_pruning_rate": 1.0}, version)
    assert "literal_error" in reject({"nvfp4_gemm_config": {"allowed_backends": ["cudnn"]}}, version)


def test_env_overrides_values_become_strings_on_rc6():
    normalized, _warnings = accept({"env_overrides": {"NCCL_P2P_LEVEL": 5}}, "1.2.0rc6")
    assert normalized == {"env_overrides": {"NCCL_P2P_LEVEL": "5"}}


@pytest.mark.parametrize("version", ["1.2.0rc6"] + list(R13))
def test_ray_keys_need_the_ray_orchestrator(version):
    message = reject({"ray_worker_extension_cls": "my.Ext"}, version)
    assert "ray_worker_extension_cls is only supported with orchestrator_type='ray'" in message
    accept({"ray_worker_extension_cls": "my.Ext", "orchestrator_type": "ray"}, version)


def test_build_config_only_on_rc1_pytorch_args():
    accept({"build_config": {"max_batch_size": 8}}, "1.2.0rc1")
    for version in ("1.2.0rc6",) + R13:
        assert "extra_forbidden" in reject({"build_config": {"max_batch_size": 8}}, version)


def test_hf_revision_becomes_revision_on_1_3():
    normalized, _warnings = accept({"hf_revision": "main"}, "1.3.0rc13")
    assert normalized == {"revision": "main"}
    assert "extra_forbidden" in reject({"hf_revision": "main"}, "1.2.0rc6")


@pytest.mark.parametrize("version", KNOWN)
def test_prebuilt_blocks_must_be_mappings(version):
    # update_llm_args_with_extra_dict does Class(**value) for these keys
    message = reject({"moe_config": None}, version)
    assert message == "TypeError: MoeConfig() argument after ** must be a mapping, not NoneType"


# -- load_format (TorchLlmArgs' validator on the 1.2.0rc6.post1 and 1.3.0rc13 pages) -------------------

@pytest.mark.parametrize("version", KNOWN)
def test_load_format_upper_cased_must_be_a_member(version):
    for value, name in (("dummy", "DUMMY"), ("AUTO", "AUTO"), ("Vision_Only", "VISION_ONLY")):
        assert accept({"load_format": value}, version)[0] == {"load_format": name}
    message = reject({"load_format": "safetensors"}, version)
    assert "load_format\n" in message and "Invalid LoadFormat: safetensors" in message


# -- kv_cache_config (the 1.3.0rc13 page's dtype validator) --------------------------------------------

@pytest.mark.parametrize("version", R13)
def test_kv_cache_dtype_is_checked_on_1_3(version):
    assert accept({"kv_cache_config": {"dtype": "FP8"}}, version)[0] == {"kv_cache_config": {"dtype": "fp8"}}
    accept({"kv_cache_config": {"dtype": "nvfp4"}}, version)
    accept({"kv_cache_config": {"dtype": "bfloat16"}}, version)
    message = reject({"kv_cache_config": {"dtype": "int4"}}, version)
    assert message.startswith("1 validation error for KvCacheConfig\ndtype\n")
    assert 'kv_cache_config.dtype must be one of "auto", "fp8", "nvfp4"' in message


@pytest.mark.parametrize("version", R12)
def test_kv_cache_dtype_is_free_text_on_1_2(version):
    assert accept({"kv_cache_config": {"dtype": "int4"}}, version)[0] == {"kv_cache_config": {"dtype": "int4"}}


def test_kv_cache_key_sets():
    for version in R12:
        accept({"kv_cache_config": {"onboard_blocks": False}}, version)
        assert "extra_forbidden" in reject({"kv_cache_config": {"iteration_stats_interval": 2}}, version)
    for version in R13:
        assert "extra_forbidden" in reject({"kv_cache_config": {"onboard_blocks": False}}, version)
        accept({"kv_cache_config": {"iteration_stats_interval": 2, "use_kv_cache_manager_v2": True,
                                    "max_util_for_resume": 0.5, "mamba_ssm_philox_rounds": 1}}, version)
        assert "greater_than_equal" in reject({"kv_cache_config": {"mamba_ssm_philox_rounds": 0}}, version)
    assert len(release.models("1.3.0rc13")["KvCacheConfig"].model_fields) == 22


def test_kv_cache_errors_are_titled_where_the_release_builds_the_block():
    # rc1 leaves kv_cache_config to TorchLlmArgs; rc6 and 1.3 build KvCacheConfig(**value) first
    assert reject({"kv_cache_config": {"foo": 1}}, "1.2.0rc1").startswith(
        "1 validation error for TorchLlmArgs\nkv_cache_config.foo\n")
    for version in ("1.2.0rc6",) + R13:
        assert reject({"kv_cache_config": {"foo": 1}}, version).startswith("1 validation error for KvCacheConfig\nfoo\n")


def test_free_gpu_memory_fraction_range():
    accept({"kv_cache_config": {"free_gpu_memory_fraction": 1.5}}, "1.2.0rc1")  # no check on rc1
    message = reject({"kv_cache_config": {"free_gpu_memory_fraction": 1.5}}, "1.2.0rc6")
    assert "must be a float between 0 and 1" in message
    for version in R13:
        assert "less_than_equal" in reject({"kv_cache_config": {"free_gpu_memory_fraction": 1.5}}, version)
        accept({"kv_cache_config": {"free_gpu_memory_fraction": 0.0}}, version)


@pytest.mark.parametrize("version", KNOWN)
def test_max_attention_window_positive_ints(version):
    accept({"kv_cache_config": {"max_attention_window": [4096, 32768]}}, version)
    message = reject({"kv_cache_config": {"max_attention_window": [0]}}, version)
    assert ("values must be positive" in message) if version.startswith("1.2.") else ("greater_than" in message)


# -- moe / scheduler / attention DP per release ----------------------------------------------------------

@pytest.mark.parametrize("backend", ["AUTO", "DENSEGEMM"])
def test_moe_backends(backend):
    for version in R12:
        message = reject({"moe_config": {"backend": backend}}, version)
        assert message.startswith("1 validation error for MoeConfig\nbackend\n") and "literal_error" in message
    for version in R13:
        accept({"moe_config": {"backend": backend}}, version)
    accept({"moe_config": {"backend": "CUTLASS"}}, "1.2.0rc1")


def test_scheduler_config_per_release():
    for version in R13:
        options = {"scheduler_config": {"context_chunking_policy": "FORCE_CHUNK", "waiting_queue_policy": "priority",
                                        "use_python_scheduler": True, "dynamic_batch_config": {}}}
        normalized, _warnings = accept(options, version)
        assert normalized["scheduler_config"]["context_chunking_policy"] == "FORCE_CHUNK"
        assert "enum" in reject({"scheduler_config": {"capacity_scheduler_policy": "FIFO"}}, version)
    for version in R12:
        accept({"scheduler_config": {"capacity_scheduler_policy": "MAX_UTILIZATION",
                                     "context_chunking_policy": "EQUAL_PROGRESS"}}, version)
        message = reject({"scheduler_config": {"context_chunking_policy": "FORCE_CHUNK"}}, version)
        assert "scheduler_config.context_chunking_policy" in message and "enum" in message
        assert "extra_forbidden" in reject({"scheduler_config": {"waiting_queue_policy": "fcfs"}}, version)
        # DynamicBatchConfig has no defaults on 1.2
        assert "missing" in reject({"scheduler_config": {"dynamic_batch_config": {}}}, version)


def test_attention_dp_config_key_sets():
    for version in R13:
        accept({"attention_dp_config": {"enable_kv_cache_aware_routing": True}}, version)
    for version in R12:
        message = reject({"attention_dp_config": {"enable_kv_cache_aware_routing": True}}, version)
        assert message.startswith("1 validation error for AttentionDpConfig\n") and "extra_forbidden" in message


# -- cuda_graph_config ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", R13)
def test_cuda_graph_max_batch_size_must_be_max_of_batch_sizes_on_1_3(version):
    normalized, _warnings = accept({"cuda_graph_config": {"batch_sizes": [8, 1, 2, 4], "max_batch_size": 8}}, version)
    assert normalized == {"cuda_graph_config": {"batch_sizes": [1, 2, 4, 8], "max_batch_size": 8}}
    normalized, _warnings = accept({"cuda_graph_config": {"batch_sizes": [1, 3], "max_batch_size": 0}}, version)
    assert normalized["cuda_graph_config"]["max_batch_size"] == 3
    message = reject({"cuda_graph_config": {"batch_sizes": [1, 2, 4, 8], "max_batch_size": 16}}, version)
    assert "cuda_graph_config\n" in message and "max_batch_size must equal max(batch_sizes)" in message


@pytest.mark.parametrize("version", R12)
def test_cuda_graph_rule_on_1_2_is_the_generated_list(version):
    # Both 1.2 pages (rc1 treated like rc6): with both keys set, the sorted batch_sizes must be the
    # very list the release generates for max_batch_size; padding generates 1, 2, 4, 8, 16, ...
    options = {"cuda_graph_config": {"batch_sizes": [8, 4, 2, 1], "max_batch_size": 8, "enable_padding": True}}
    normalized, _warnings = accept(options, version)
    assert normalized["cuda_graph_config"]["batch_sizes"] == [1, 2, 4, 8]
    accept({"cuda_graph_config": {"batch_sizes": [1, 2, 4, 8], "max_batch_size": 0}}, version)
    message = reject({"cuda_graph_config": {"batch_sizes": [1, 2, 4, 8], "max_batch_size": 8}}, version)
    assert "Please don't set both cuda_graph_config.batch_sizes and cuda_graph_config.max_batch_size." in message


@pytest.mark.parametrize("version", KNOWN)
def test_cuda_graph_max_batch_size_not_negative(version):
    message = reject({"cuda_graph_config": {"max_batch_size": -1}}, version)
    assert ("must be non-negative" in message) if version.startswith("1.2.") else ("greater_than_equal" in message)


@pytest.mark.parametrize("version, expected", [
    ("1.2.0rc6", [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 256, 300]),
    ("1.3.0rc13", [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 192, 256, 300]),
])
def test_generated_cuda_graph_batch_sizes(version, expected):
    normalized, _warnings = accept({"cuda_graph_config": {"enable_padding": True, "max_batch_size": 300}}, version)
    assert normalized["cuda_graph_config"]["batch_sizes"] == expected


# -- speculative_config on 1.2: DecodingBaseConfig.from_dict ------------------------------------------------

@pytest.mark.parametrize("version", R12)
@pytest.mark.parametrize("tag", ["Eagle3", "Draft_Target", "User_Provided", "eagle", "DFlash"])
def test_1_2_unknown_decoding_type(version, tag):
    assert reject(eagle(tag), version) == "ValueError: Invalid decoding type: %s" % tag


@pytest.mark.parametrize("version", R12)
def test_1_2_decoding_type_missing(version):
    assert reject({"speculative_config": {"max_draft_len": 4}}, version) == "ValueError: Invalid decoding type: None"
    assert reject({"speculative_config": None}, version).startswith("AttributeError:")


@pytest.mark.parametrize("version", R12)
def test_1_2_eagle_accepted_with_draft_model(version):
    normalized, warnings = accept(eagle(), version)
    assert normalized["speculative_config"]["decoding_type"] == "Eagle"
    assert normalized["speculative_config"]["max_draft_len"] == 4
    assert normalized["speculative_config"]["speculative_model_dir"] == DRAFT
    assert normalized["speculative_config"]["num_eagle_layers"] == 4  # set by the release
    assert warnings == []


@pytest.mark.parametrize("version", R12)
def test_1_2_eagle_is_not_validated_so_a_string_draft_len_fails_late(version):
    assert reject(eagle(max_draft_len="4"), version) == \
        "TypeError: '>' not supported between instances of 'str' and 'int'"


@pytest.mark.parametrize("version", R12)
def test_1_2_eagle_values_are_kept_as_written(version):
    # no coercion on the 1.2 Eagle path: "false" stays a (truthy) string, and rc6's draft_len_schedule
    # rule never runs for Eagle because nothing is validated
    normalized, _warnings = accept(eagle(greedy_sampling="false"), version)
    assert normalized["speculative_config"]["greedy_sampling"] == "false"
    if version == "1.2.0rc6":
        accept(eagle(draft_len_schedule={2: 9}), version)


@pytest.mark.parametrize("version", R12)
def test_1_2_eagle_asserts(version):
    message = reject(eagle(speculative_model_dir=None), version)
    assert "Assertion failed, Path to EAGLE3 weights must be specified." in message and "assertion_error" in message
    assert "assertion_error" in reject(eagle(max_draft_len=0), version)
    no_len = {"speculative_config": {"decoding_type": "Eagle", "speculative_model_dir": DRAFT}}
    assert reject(no_len, version) == "AssertionError: max_draft_len is required for Eagle"


@pytest.mark.parametrize("version", R12)
def test_1_2_eagle_unknown_key_and_speculative_model(version):
    assert reject(eagle(speculative_model=DRAFT), version) == \
        'ValueError: "EagleDecodingConfig" object has no field "speculative_model"'
    assert "eagle3_model_arch" in reject(eagle(eagle3_model_arch="llama3"), version)


@pytest.mark.parametrize("version", R12)
def test_1_2_eagle_dynamic_tree(version):
    message = reject(eagle(use_dynamic_tree=True), version)
    assert message == "AssertionError: dynamic_tree_max_topK should be provided, which indicates the number of " \
                      "nodes to expand each time"
    # no upper bound on the total on 1.2 (the 1.2.0rc6.post1 page)
    accept(eagle(max_draft_len=3, use_dynamic_tree=True, dynamic_tree_max_topK=4, max_total_draft_tokens=20), version)


@pytest.mark.parametrize("version", R12)
def test_1_2_eagle_choices(version):
    normalized, warnings = accept(eagle(eagle_choices="[[0], [1], [0, 0]]"), version)
    assert normalized["speculative_config"]["eagle_choices"] == [[0], [1], [0, 0]]
    assert normalized["speculative_config"]["max_draft_len"] == 2
    assert any("PLEASE DO NOT USE IT" in w for w in warnings)
    assert "is not connected" in reject(eagle(eagle_choices=[[0], [1, 1]]), version)


@pytest.mark.parametrize("version", R12)
def test_1_2_mtp_max_draft_len_is_overwritten(version):
    normalized, _warnings = accept(spec("MTP", max_draft_len=5, num_nextn_predict_layers=3), version)
    assert normalized["speculative_config"]["max_draft_len"] == 3
    assert normalized["speculative_config"]["decoding_type"] == "MTP"
    accept(spec("MTP", num_nextn_predict_layers_from_model_config=2), version)  # a plain field on the pages
    assert "assertion_error" in reject(spec("MTP", num_nextn_predict_layers=0), version)
    message = reject(spec("MTP", relaxed_topk="many"), version)
    assert message.startswith("1 validation error for MTPDecodingConfig\nrelaxed_topk\n") and "int_parsing" in message


def test_1_2_mtp_thinking_token_spelling():
    accept(spec("MTP", BEGIN_THINKING_PHASE_TOKEN=1, END_THINKING_PHASE_TOKEN=2), "1.2.0rc1")
    assert "extra_forbidden" in reject(spec("MTP", begin_thinking_phase_token=1), "1.2.0rc1")
    accept(spec("MTP", begin_thinking_phase_token=1, end_thinking_phase_token=2), "1.2.0rc6")
    message = reject(spec("MTP", BEGIN_THINKING_PHASE_TOKEN=1), "1.2.0rc6")
    assert message.startswith("1 validation error for MTPDecodingConfig\nBEGIN_THINKING_PHASE_TOKEN\n")


@pytest.mark.parametrize("version", R12)
def test_1_2_draft_target(version):
    normalized, _warnings = accept(spec("DraftTarget", max_draft_len=4, speculative_model_dir=DRAFT), version)
    assert normalized["speculative_config"]["decoding_type"] == "DraftTarget"
    message = reject(spec("DraftTarget", max_draft_len=4), version)
    assert "Assertion failed, Path to draft model must be specified." in message
    assert reject(spec("DraftTarget", speculative_model_dir=DRAFT), version) == \
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'"
    message = reject(spec("DraftTarget", max_draft_len=4, speculative_model=DRAFT), version)
    assert message.startswith("1 validation error for DraftTargetDecodingConfig\nspeculative_model\n")


@pytest.mark.parametrize("version", R12)
def test_1_2_ngram_needs_a_positive_ngram_size(version):
    accept(spec("NGram", max_draft_len=4, max_matching_ngram_size=3), version)
    assert "assertion_error" in reject(spec("NGram", max_draft_len=4), version)  # default 0


@pytest.mark.parametrize("version", R12)
def test_1_2_medusa_not_on_pytorch(version):
    message = reject(spec("Medusa", max_draft_len=4), version)
    assert "Speculation type Medusa does not support backend pytorch" in message


def test_rc6_only_decoding_fields():
    options = spec("DraftTarget", max_draft_len=4, speculative_model_dir=DRAFT, max_total_draft_tokens=4,
                   allow_advanced_sampling=True, draft_len_schedule={1: 4, 8: 2})
    normalized, _warnings = accept(options, "1.2.0rc6")
    assert normalized["speculative_config"]["draft_len_schedule"] == {1: 4, 8: 2}
    message = reject(options, "1.2.0rc1")
    assert message.startswith("3 validation errors for DraftTargetDecodingConfig\n") and "extra_forbidden" in message


def test_rc6_draft_len_schedule_key_1_is_max_draft_len():
    base = {"max_draft_len": 4, "speculative_model_dir": DRAFT}
    accept(spec("NGram", max_matching_ngram_size=2, draft_len_schedule={1: 4, 16: 0}, **base), "1.2.0rc6")
    assert "draft_len_schedule must include batch_size=1" in \
        reject(spec("DraftTarget", draft_len_schedule={2: 4}, **base), "1.2.0rc6")
    assert "draft_len_schedule[1] must equal max_draft_len" in \
        reject(spec("DraftTarget", draft_len_schedule={1: 3}, **base), "1.2.0rc6")


@pytest.mark.parametrize("version", R12)
def test_1_2_speculative_rules_run_before_the_cuda_graph_rule(version):
    # SaveState drops cuda_graph_config before TorchLlmArgs looks at it, as in the release's validator order
    options = dict(spec("SaveState", output_directory="/tmp/hidden"),
                   cuda_graph_config={"batch_sizes": [1, 3], "max_batch_size": 8})
    assert accept(options, version)[0]["cuda_graph_config"] is None
    assert "Please don't set both" in reject({"cuda_graph_config": options["cuda_graph_config"]}, version)


@pytest.mark.parametrize("version", R12)
def test_1_2_save_state(version):
    normalized, warnings = accept(spec("SaveState", output_directory="/tmp/hidden"), version)
    assert normalized["max_batch_size"] == 1 and normalized["cuda_graph_config"] is None
    assert normalized["disable_overlap_scheduler"] is True
    assert "SaveHiddenStatesDecodingConfig is active" in warnings[0]
    assert "missing" in reject(spec("SaveState"), version)


# -- speculative_config on 1.3: a discriminated union -----------------------------------------------------

@pytest.mark.parametrize("version", R13)
@pytest.mark.parametrize("tag", ["DraftTarget", "UserProvided", "Eagle 3", "DFlash"])
def test_1_3_tags_outside_the_union(version, tag):
    message = reject(spec(tag, max_draft_len=4, speculative_model_dir=DRAFT), version)
    assert message.startswith("1 validation error for TorchLlmArgs\nspeculative_config\n")
    assert "union_tag_invalid" in message
    assert "'Draft_Target', 'Eagle3', 'Eagle', 'Lookahead', 'Medusa', 'MTP', 'NGram', 'SA', 'User_Provided', " \
           "'SaveState', 'PARD', 'AUTO'" in message


@pytest.mark.parametrize("version", R13)
def test_1_3_tag_missing(version):
    assert "union_tag_not_found" in reject({"speculative_config": {"max_draft_len": 4}}, version)
    assert accept({"speculative_config": None}, version)[0] == {"speculative_config": None}


@pytest.mark.parametrize("version", R13)
def test_1_3_draft_target(version):
    normalized, _warnings = accept(spec("Draft_Target", max_draft_len=4, speculative_model_dir=DRAFT), version)
    assert normalized["speculative_config"] == {"decoding_type": "Draft_Target", "max_draft_len": 4,
                                                "max_total_draft_tokens": 4, "speculative_model": DRAFT}
    assert "speculative_model must be specified for DraftTarget" in reject(spec("Draft_Target", max_draft_len=4),
                                                                           version)
    assert "max_draft_len must be > 0 for DraftTarget" in reject(spec("Draft_Target", speculative_model=DRAFT),
                                                                 version)


@pytest.mark.parametrize("version", R13)
def test_1_3_speculative_model_alias(version):
    for key in ("speculative_model", "speculative_model_dir"):
        normalized, _warnings = accept(spec("Eagle3", max_draft_len=4, **{key: DRAFT}), version)
        assert normalized["speculative_config"]["speculative_model"] == DRAFT
    message = reject(eagle("Eagle3", speculative_model=DRAFT), version)  # both names at once
    assert "speculative_config.Eagle3.speculative_model_dir\n" in message and "extra_forbidden" in message


@pytest.mark.parametrize("version", R13)
def test_1_3_eagle_becomes_eagle3_with_a_warning(version):
    normalized, warnings = accept(eagle(), version)
    assert normalized["speculative_config"]["decoding_type"] == "Eagle3"
    assert normalized["speculative_config"]["speculative_model"] == DRAFT
    assert "greedy_sampling" not in normalized["speculative_config"]  # only what the file set, plus changes
    assert any("'Eagle' is treated as 'Eagle3'" in w for w in warnings)
    normalized, warnings = accept(eagle("Eagle3"), version)
    assert normalized["speculative_config"]["decoding_type"] == "Eagle3" and warnings == []


@pytest.mark.parametrize("version", R13)
@pytest.mark.parametrize("field, value", [("max_batch_size", 8), ("sa_config", {"threshold": 2})])
def test_1_3_eagle3_only_fields(version, field, value):
    accept(eagle("Eagle3", **{field: value}), version)
    message = reject(eagle("Eagle", **{field: value}), version)  # EagleDecodingConfig has neither field
    assert "speculative_config.Eagle.%s\n" % field in message and "extra_forbidden" in message


@pytest.mark.parametrize("version", R13)
def test_1_3_eagle_rules(version):
    assert "Draft model must be provided for EAGLE" in reject(spec("Eagle3", max_draft_len=4), version)
    assert "max_draft_len must be > 0 for Eagle" in reject(eagle("Eagle3", max_draft_len=0), version)
    assert "greater_than_equal" in reject(eagle("Eagle3", max_draft_len=-1), version)
    normalized, _warnings = accept(eagle("Eagle3", max_draft_len="4"), version)  # validated: "4" -> 4
    assert normalized["speculative_config"]["max_draft_len"] == 4
    message = reject(eagle("Eagle3", eagle3_model_arch="qwen3"), version)
    assert "speculative_config.Eagle3.eagle3_model_arch" in message and "literal_error" in message
    _normalized, warnings = accept(eagle("Eagle3", eagle3_one_model=False), version)
    assert "Eagle3 2-model is deprecated and will be removed in release 1.4." in warnings


@pytest.mark.parametrize("version", R13)
def test_1_3_dynamic_tree_entered_by_top_k_alone(version):
    # 1.3.0rc13 page: dynamic_tree_max_topK alone switches the dynamic tree on, with its bounds
    normalized, warnings = accept(eagle("Eagle3", max_draft_len=3, dynamic_tree_max_topK=4), version)
    assert normalized["speculative_config"]["use_dynamic_tree"] is True
    assert normalized["speculative_config"]["max_total_draft_tokens"] == 12
    assert any("use the default value 12" in w for w in warnings)
    accept(eagle("Eagle3", max_draft_len=3, dynamic_tree_max_topK=4, max_total_draft_tokens=12), version)
    message = reject(eagle("Eagle3", max_draft_len=3, dynamic_tree_max_topK=4, max_total_draft_tokens=13), version)
    assert "max_total_draft_tokens (13) should be <= dynamic_tree_max_topK * max_draft_len (12)" in message
    message = reject(eagle("Eagle3", max_draft_len=3, dynamic_tree_max_topK=4, max_total_draft_tokens=2), version)
    assert "max_total_draft_tokens (2) should be >= max_draft_len (3)" in message
    assert "dynamic_tree_max_topK should be provided" in reject(eagle("Eagle3", use_dynamic_tree=True), version)


@pytest.mark.parametrize("version", R13)
def test_1_3_eagle_choices_and_dynamic_tree_exclude_each_other(version):
    normalized, warnings = accept(eagle("Eagle3", eagle_choices=[[0], [0, 0]]), version)
    assert normalized["speculative_config"]["max_draft_len"] == 2
    assert any("deprecated and will be removed in release 1.4" in w for w in warnings)
    message = reject(eagle("Eagle3", eagle_choices=[[0]], use_dynamic_tree=True), version)
    assert "If eagle_choices is provided, use_dynamic_tree should be False" in message


@pytest.mark.parametrize("version", R13)
def test_1_3_draft_len_schedule(version):
    options = eagle("Eagle3", draft_len_schedule={2: 4, 16: 2})
    options["cuda_graph_config"] = {"batch_sizes": [1, 8, 32]}
    normalized, _warnings = accept(options, version)
    # smallest key (2) == max_draft_len; the schedule forces padding and adds its keys to the graphs
    assert normalized["cuda_graph_config"] == {"batch_sizes": [1, 2, 8, 16, 32], "max_batch_size": 32,
                                               "enable_padding": True}
    message = reject(eagle("Eagle3", draft_len_schedule={2: 3}), version)
    assert "draft_len_schedule[2] must equal max_draft_len because it is the smallest batch-size key" in message
    message = reject(eagle("Eagle3", draft_len_schedule={1: 4}, max_concurrency=8), version)
    assert "max_concurrency and draft_len_schedule are mutually exclusive" in message
    accept(eagle("Eagle3", max_concurrency=8), version)
    assert "greater_than" in reject(eagle("Eagle3", max_concurrency=0), version)


@pytest.mark.parametrize("version", R13)
def test_1_3_sa_rules(version):
    # SA rules of the 1.3.0rc13 page
    sa = {"max_draft_len": 4}
    accept(spec("SA", **sa), version)
    accept(dict(spec("SA", enable_global_pool=True, global_pool_size=64, **sa), max_batch_size=64), version)
    assert "Got 0." in reject(spec("SA", max_matching_ngram_size=0, **sa), version)
    assert "in [1, 64] when enable_global_pool is True. Got 65." in \
        reject(spec("SA", max_matching_ngram_size=65, enable_global_pool=True, **sa), version)
    accept(spec("SA", max_matching_ngram_size=65, **sa), version)
    assert "global_pool_size requires enable_global_pool=True" in reject(spec("SA", global_pool_size=4096, **sa),
                                                                         version)
    message = reject(spec("SA", enable_global_pool=True, global_pool_size=64, **sa), version)
    assert "global_pool_size (64) must be >= max_batch_size (2048)" in message
    assert "max_draft_len must be > 0 for SA" in reject(spec("SA"), version)


@pytest.mark.parametrize("version", R13)
def test_1_3_mtp(version):
    normalized, _warnings = accept(spec("MTP", max_draft_len=5, num_nextn_predict_layers=3), version)
    assert normalized["speculative_config"]["max_draft_len"] == 3  # overwritten, never an error
    accept(spec("MTP", num_nextn_predict_layers_from_model_config=3, sa_config={"enable_global_pool": True}), version)
    assert "int_type" in reject(spec("MTP", begin_thinking_phase_token=None), version)  # plain int (1.3.0rc13 page)
    assert "greater_than" in reject(spec("MTP", num_nextn_predict_layers=0), version)
    assert "extra_forbidden" in reject(spec("MTP", BEGIN_THINKING_PHASE_TOKEN=1), version)
    _normalized, warnings = accept(spec("MTP", mtp_eagle_one_model=False), version)
    assert warnings == ["2-model style MTP is deprecated and will be removed in release 1.4."]


@pytest.mark.parametrize("version", R13)
def test_1_3_ngram(version):
    accept(spec("NGram", max_draft_len=4), version)  # max_matching_ngram_size defaults to 2 now
    assert "max_draft_len must be > 0 for NGram" in reject(spec("NGram"), version)
    message = reject(spec("NGram", max_draft_len=4, max_matching_ngram_size=0), version)
    assert "speculative_config.NGram.max_matching_ngram_size" in message and "greater_than" in message


@pytest.mark.parametrize("version", R13)
def test_1_3_other_types(version):
    message = reject(spec("Medusa", max_draft_len=4), version)
    assert "Speculation type Medusa does not support backend pytorch" in message
    assert "Speculation type Lookahead does not support backend pytorch" in reject(spec("Lookahead"), version)
    accept(spec("PARD", max_draft_len=4, mask_token_id=5), version)
    assert reject(spec("PARD"), version) == "TypeError: '>' not supported between instances of 'NoneType' and 'int'"
    assert "assertion_error" in reject(spec("PARD", max_draft_len=0), version)
    accept(spec("AUTO"), version)
    assert "speculative_config.User_Provided.drafter" in reject(spec("User_Provided"), version)
    normalized, warnings = accept(spec("SaveState", output_directory="/tmp/hidden"), version)
    assert normalized["speculative_config"]["max_draft_len"] == 1 and normalized["cuda_graph_config"] is None
    assert "SaveHiddenStatesDecodingConfig is active" in warnings[0]


def test_rc12_is_modelled_as_rc13():
    for options in (eagle(), spec("SA", max_draft_len=4), {"kv_cache_config": {"dtype": "FP8"}}):
        assert check(options, "1.3.0rc12") == check(options, "1.3.0rc13")
    assert release.SOURCES["1.3.0rc12"].startswith("modelled as 1.3.0rc13")


# -- the models against the transcribed release excerpts (only where build/llm_args exists) ----------

EXCERPTS = os.path.join(REPO, "build", "llm_args")
EXCERPT_OF = {"1.2.0rc1": "1.2.0rc1", "1.2.0rc6": "1.2.0rc6", "1.2.0": "1.2.0", "1.2.1": "1.2.1", "1.3.0rc12": "1.3.0rc13",
              "1.3.0rc13": "1.3.0rc13"}


def _excerpt_classes(version):
    path = os.path.join(EXCERPTS, EXCERPT_OF[version] + ".py")
    if not os.path.isfile(path):
        pytest.skip("no transcribed excerpt %s" % path)
    return {node.name: node for node in ast.parse(open(path, encoding="utf-8").read()).body
            if isinstance(node, ast.ClassDef)}


def _excerpt_fields(classes, name):
    node = classes[name]
    fields = set()
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            fields |= _excerpt_fields(classes, base.id)
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            annotation = ast.unparse(item.annotation)
            value = ast.unparse(item.value) if item.value is not None else ""
            if item.target.id.startswith("_") or annotation.startswith("ClassVar") or "PrivateAttr" in value:
                continue
            fields.add(item.target.id)
    return fields


@pytest.mark.parametrize("version", KNOWN)
def test_field_names_match_the_release_excerpt(version):
    classes = _excerpt_classes(version)
    mine = release.models(version)
    for name, model in mine.items():
        if name == "TorchLlmArgs":
            expected = _excerpt_fields(classes, "TorchLlmArgs")
        else:
            expected = _excerpt_fields(classes, name)
        assert set(model.model_fields) == expected, name


@pytest.mark.parametrize("version", R12)
def test_from_dict_table_matches_the_release_excerpt(version):
    classes = _excerpt_classes(version)
    from_dict = next(item for item in classes["DecodingBaseConfig"].body
                     if isinstance(item, ast.FunctionDef) and item.name == "from_dict")
    table = next(node for node in ast.walk(from_dict) if isinstance(node, ast.Dict))
    expected = {key.value: value.id for key, value in zip(table.keys, table.values)}
    mine = release.models(version)
    for tag, class_name in expected.items():
        message = reject(spec(tag, not_a_field=1), version)
        assert "Invalid decoding type" not in message, tag
        assert class_name in mine
