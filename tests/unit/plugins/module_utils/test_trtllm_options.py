"""Unit tests for the TRT-LLM option tables: the published configurations the playbooks reproduce and each
class of bad input."""

import pytest
import yaml

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_options as t
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_releases as rel

EAGLE3_ONE_SPARK = {
    "enable_attention_dp": False,
    "disable_overlap_scheduler": False,
    "enable_autotuner": False,
    "cuda_graph_config": {"max_batch_size": 1},
    "speculative_config": {"decoding_type": "Eagle", "max_draft_len": 5,
                           "speculative_model_dir": "/opt/gpt-oss-120b-Eagle3/"},
    "kv_cache_config": {"free_gpu_memory_fraction": 0.9, "enable_block_reuse": False},
}
DRAFT_TARGET = {
    "print_iter_log": False,
    "disable_overlap_scheduler": True,
    "speculative_config": {"decoding_type": "DraftTarget", "max_draft_len": 4,
                           "speculative_model_dir": "/opt/Llama-3.1-8B-Instruct-FP4/"},
    "kv_cache_config": {"enable_block_reuse": False},
}
TWO_SPARK = dict(EAGLE3_ONE_SPARK, enable_chunked_prefill=False,
                 speculative_config={"decoding_type": "Eagle", "max_draft_len": 3,
                                     "speculative_model_dir": "/opt/Qwen3-235B-A22B-Eagle3/"})
LOW_LATENCY = {
    "enable_attention_dp": False,
    "cuda_graph_config": {"max_batch_size": 1, "enable_padding": True},
    "moe_config": {"backend": "CUTLASS"},
}
LOW_LATENCY_SPEC = dict(
    LOW_LATENCY,
    disable_overlap_scheduler=True,
    enable_autotuner=False,
    speculative_config={"decoding_type": "Eagle", "max_draft_len": 3,
                        "speculative_model_dir": "/models/original/gpt-oss-120b-Eagle3/"},
    kv_cache_config={"enable_block_reuse": False},
)
TRITON_13 = {"speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3,
                                    "speculative_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}}

# The option files as published: NVIDIA's DGX Spark speculative-decoding playbook
# (https://github.com/NVIDIA/dgx-spark-playbooks/tree/main/nvidia/speculative-decoding: EAGLE-3, Draft-Target and
# "Run on Two Sparks"), the low-latency gpt-oss-120b recipe on 1.2.0rc1 (low_latency.yaml and
# low_latency_speculative.yaml) and Triton's tutorial "Speculative Decoding with TensorRT-LLM" (model.yaml).
PUBLISHED_CONFIGS = [
    ("a-eagle3-one-spark", "1.2.0rc6", EAGLE3_ONE_SPARK),
    ("b-draft-target", "1.2.0rc6", DRAFT_TARGET),
    ("c-two-sparks", "1.2.0rc6", TWO_SPARK),
    ("d-low-latency", "1.2.0rc1", LOW_LATENCY),
    ("d-low-latency-speculative", "1.2.0rc1", LOW_LATENCY_SPEC),
    ("e-triton-1.3", "1.3.0rc12", TRITON_13),
]


def errors_of(options, version=t.DEFAULT_VERSION):
    with pytest.raises(t.OptionsError) as info:
        t.validate(options, version)
    return info.value.errors


@pytest.mark.parametrize("name,version,options", PUBLISHED_CONFIGS, ids=[s[0] for s in PUBLISHED_CONFIGS])
def test_published_configurations_round_trip(name, version, options):
    result = t.validate(options, version)
    text = t.render(result.options, version)
    assert yaml.safe_load(text) == options, name
    assert result.warnings == []


def test_eagle3_file_reads_like_the_playbook():
    text = t.render(t.validate(EAGLE3_ONE_SPARK).options)
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body == [
        "enable_attention_dp: false",
        "disable_overlap_scheduler: false",
        "enable_autotuner: false",
        "cuda_graph_config:",
        "  max_batch_size: 1",
        "speculative_config:",
        "  decoding_type: Eagle",
        "  max_draft_len: 5",
        "  speculative_model_dir: /opt/gpt-oss-120b-Eagle3/",
        "kv_cache_config:",
        "  free_gpu_memory_fraction: 0.9",
        "  enable_block_reuse: false",
    ]


def test_key_order_is_stable_whatever_the_input_order():
    shuffled = dict(reversed(list(EAGLE3_ONE_SPARK.items())))
    shuffled["kv_cache_config"] = {"enable_block_reuse": False, "free_gpu_memory_fraction": 0.9}
    assert t.render(t.validate(shuffled).options) == t.render(t.validate(EAGLE3_ONE_SPARK).options)


@pytest.mark.parametrize("version", rel.SUPPORTED_VERSIONS)
def test_every_release_accepts_the_two_spark_file(version):
    # speculative_model_dir and decoding_type Eagle are accepted by all three (aliases on 1.3).
    t.validate(TWO_SPARK, version)


def test_unknown_top_level_key_names_path_value_accepted_and_replacement():
    (error,) = errors_of({"use_cuda_graph": True})
    assert error.startswith("use_cuda_graph: unknown key")
    assert "1.2.0rc6" in error and "forbids extra keys" in error
    assert "replaced by 'cuda_graph_config'" in error
    assert "Accepted keys here:" in error and "kv_cache_config" in error


def test_unknown_nested_key_has_full_path_and_close_match():
    (error,) = errors_of({"kv_cache_config": {"enable_block_reuze": False}})
    assert error.startswith("kv_cache_config.enable_block_reuze: unknown key")
    assert "Did you mean 'enable_block_reuse'?" in error


def test_unknown_key_inside_speculative_config():
    (error,) = errors_of({"speculative_config": dict(EAGLE3_ONE_SPARK["speculative_config"], draft_tokens=3)})
    assert error.startswith("speculative_config.draft_tokens: unknown key")
    assert 'with decoding_type "Eagle"' in error


@pytest.mark.parametrize("version", ["1.2.0rc1", "1.2.0rc6"])
def test_eagle3_spelling_rejected_on_12_with_hint(version):
    spec = dict(EAGLE3_ONE_SPARK["speculative_config"], decoding_type="Eagle3")
    (error,) = errors_of({"speculative_config": spec}, version)
    assert error.startswith("speculative_config.decoding_type: \"Eagle3\" is not accepted by TensorRT-LLM " + version)
    assert "Eagle," in error and "DraftTarget" in error
    assert "did you mean 'Eagle'?" in error


def test_draft_target_underscore_rejected_on_12():
    spec = dict(DRAFT_TARGET["speculative_config"], decoding_type="Draft_Target")
    (error,) = errors_of({"speculative_config": spec})
    assert "did you mean 'DraftTarget'?" in error


@pytest.mark.parametrize("version", ["1.3.0rc12", "1.3.0rc13"])
def test_13_renders_the_canonical_tag_of_12_spellings_with_a_warning(version):
    # DraftTarget is not a tag of the 1.3 union (unsettled whether something maps it): the file says
    # Draft_Target, which starts either way. NVIDIA's DGX Spark playbook writes DraftTarget and Eagle.
    result = t.validate(DRAFT_TARGET, version)
    assert result.options["speculative_config"]["decoding_type"] == "Draft_Target"
    assert any('"DraftTarget" is written as "Draft_Target"' in w for w in result.warnings)
    result = t.validate(EAGLE3_ONE_SPARK, version)
    assert result.options["speculative_config"]["decoding_type"] == "Eagle3"
    assert any("converts decoding_type Eagle to Eagle3" in w for w in result.warnings)


def test_eagle_on_13_is_validated_with_the_eagle_class_fields():
    # rc13 picks EagleDecodingConfig from the union before converting it: Eagle3-only fields are extra there.
    spec = dict(EAGLE3_ONE_SPARK["speculative_config"], max_batch_size=4)
    (error,) = errors_of({"speculative_config": spec}, "1.3.0rc13")
    assert error.startswith("speculative_config.max_batch_size: unknown key")
    t.validate({"speculative_config": dict(spec, decoding_type="Eagle3")}, "1.3.0rc13")


def test_speculative_model_key_rejected_on_12():
    spec = {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    errors = errors_of({"speculative_config": spec}, "1.2.0rc6")
    assert any(e.startswith("speculative_config.speculative_model: unknown key")
               and "Did you mean 'speculative_model_dir'?" in e for e in errors)


def test_both_path_keys_on_13_is_an_error():
    spec = dict(TRITON_13["speculative_config"], speculative_model_dir="/opt/x")
    errors = errors_of({"speculative_config": spec}, "1.3.0rc12")
    assert any("set only one of speculative_model, speculative_model_dir" in e for e in errors)


def test_draft_model_required_for_eagle_and_draft_target():
    for dtype in ("Eagle", "DraftTarget"):
        errors = errors_of({"speculative_config": {"decoding_type": dtype, "max_draft_len": 3}})
        assert any(e.startswith("speculative_config.speculative_model_dir: is required") for e in errors), dtype


def test_max_draft_len_required_and_positive_on_13():
    errors = errors_of({"speculative_config": {"decoding_type": "Eagle", "speculative_model_dir": "/d"}})
    assert "speculative_config.max_draft_len: is required for decoding_type \"Eagle\" and must be > 0" in errors
    errors = errors_of({"speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 0,
                                               "speculative_model": "/d"}}, "1.3.0rc12")
    assert any(e.startswith("speculative_config.max_draft_len: 0 must be > 0") for e in errors)


@pytest.mark.parametrize("version", ["1.2.0rc1", "1.2.0rc6", "1.3.0rc12", "1.3.0rc13"])
def test_mtp_max_draft_len_is_replaced_not_rejected(version):
    # Every release overwrites it with num_nextn_predict_layers (from_dict, __init__ or a validator);
    # NVIDIA's curated configs set it. Only a differing value is worth a warning.
    result = t.validate({"speculative_config": {"decoding_type": "MTP", "max_draft_len": 3,
                                                "num_nextn_predict_layers": 3}}, version)
    assert result.warnings == []
    result = t.validate({"speculative_config": {"decoding_type": "MTP", "max_draft_len": 2}}, version)
    assert any("replaced by num_nextn_predict_layers (1)" in w for w in result.warnings)


def test_missing_decoding_type():
    (error,) = errors_of({"speculative_config": {"max_draft_len": 3}})
    assert error.startswith("speculative_config.decoding_type: is required")


def test_medusa_not_supported_on_pytorch():
    errors = errors_of({"speculative_config": {"decoding_type": "Medusa", "num_medusa_heads": 4}})
    assert any("not supported on the PyTorch backend" in e for e in errors)


def test_string_where_integer_expected():
    spec = dict(EAGLE3_ONE_SPARK["speculative_config"], max_draft_len="4")
    (error,) = errors_of({"speculative_config": spec})
    assert error.startswith('speculative_config.max_draft_len: "4" (str) must be an integer')


@pytest.mark.parametrize("version", ["1.2.0rc6", "1.3.0rc12"])
def test_quoted_values_are_read_as_the_release_reads_them(version):
    # pydantic's lax mode: Ansible-templated strings become the typed value, and the file says so.
    result = t.validate({"cuda_graph_config": {"max_batch_size": "4"}, "enable_autotuner": "false",
                         "kv_cache_config": {"free_gpu_memory_fraction": "0.9"}}, version)
    assert result.options["cuda_graph_config"]["max_batch_size"] == 4
    assert result.options["enable_autotuner"] is False
    assert result.options["kv_cache_config"]["free_gpu_memory_fraction"] == 0.9
    assert "max_batch_size: 4\n" in t.render(result.options)
    assert len(result.warnings) == 3


def test_values_the_release_cannot_read_are_rejected():
    errors = errors_of({"cuda_graph_config": {"max_batch_size": "four"}, "enable_autotuner": "maybe",
                        "print_iter_log": 2, "max_batch_size": 1.5}, "1.3.0rc13")
    assert any(e.startswith('cuda_graph_config.max_batch_size: "four" (str) must be an integer') for e in errors)
    assert len(errors) == 4


def test_quoted_eagle_draft_len_is_rejected_on_12_with_the_reason():
    # 1.2's EagleDecodingConfig.__init__ sets attributes without validation: "4" would fail at start-up.
    spec = dict(EAGLE3_ONE_SPARK["speculative_config"], max_draft_len="4")
    (error,) = errors_of({"speculative_config": spec}, "1.2.0rc6")
    assert "sets this class's fields without validation" in error
    result = t.validate({"speculative_config": spec}, "1.3.0rc12")
    assert result.options["speculative_config"]["max_draft_len"] == 4


@pytest.mark.parametrize("fraction", [-0.1, 1.01, 2])
def test_free_gpu_memory_fraction_range(fraction):
    (error,) = errors_of({"kv_cache_config": {"free_gpu_memory_fraction": fraction}})
    assert error.startswith("kv_cache_config.free_gpu_memory_fraction: %s is out of range" % fraction)
    assert "between 0 and 1" in error


@pytest.mark.parametrize("fraction", [0, 0.5, 1])
def test_free_gpu_memory_fraction_bounds_accepted(fraction):
    t.validate({"kv_cache_config": {"free_gpu_memory_fraction": fraction}})


def test_cuda_graph_max_batch_size_must_match_batch_sizes():
    (error,) = errors_of({"cuda_graph_config": {"max_batch_size": 4, "batch_sizes": [1, 2, 8]}}, "1.3.0rc13")
    assert error.startswith("cuda_graph_config.max_batch_size: 4 must equal max(batch_sizes) = 8")
    t.validate({"cuda_graph_config": {"max_batch_size": 8, "batch_sizes": [1, 2, 8]}}, "1.3.0rc13")


def test_cuda_graph_null_turns_graphs_off():
    result = t.validate({"cuda_graph_config": None})
    assert "cuda_graph_config: null" in t.render(result.options)


def test_moe_backend_per_release():
    (error,) = errors_of({"moe_config": {"backend": "AUTO"}}, "1.2.0rc6")
    assert error.startswith('moe_config.backend: "AUTO" is not accepted by TensorRT-LLM 1.2.0rc6')
    assert "CUTLASS" in error
    t.validate({"moe_config": {"backend": "AUTO"}}, "1.3.0rc12")
    (error,) = errors_of({"moe_config": {"backend": "cutlass"}}, "1.2.0rc1")
    assert "did you mean 'CUTLASS'?" in error


def test_draft_len_schedule_rules_differ_by_release():
    base = {"decoding_type": "Eagle", "max_draft_len": 4, "speculative_model_dir": "/d"}
    (error,) = errors_of({"speculative_config": dict(base, draft_len_schedule={2: 4, 8: 2})}, "1.2.0rc6")
    assert "must contain batch size 1 mapped to max_draft_len (4)" in error
    t.validate({"speculative_config": dict(base, draft_len_schedule={2: 4, 8: 2})}, "1.3.0rc12")
    errors = errors_of({"speculative_config": dict(base, draft_len_schedule={1: 4})}, "1.2.0rc1")
    assert errors[0].startswith("speculative_config.draft_len_schedule: unknown key")


def test_eagle_tree_rules():
    base = {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": "/d"}
    errors = errors_of({"speculative_config": dict(base, use_dynamic_tree=True, eagle_choices=[[0]])})
    assert any("cannot be combined with use_dynamic_tree" in e for e in errors)
    big_tree = dict(base, decoding_type="Eagle3", use_dynamic_tree=True, dynamic_tree_max_topK=2,
                    max_total_draft_tokens=7)
    errors = errors_of({"speculative_config": big_tree}, "1.3.0rc13")
    assert any("max_total_draft_tokens: 7 must be between max_draft_len (3)" in e for e in errors)
    # 1.2.0rc6 has no upper bound on the tree (its __init__ checks only that the sizes are > 0).
    t.validate({"speculative_config": dict(big_tree, decoding_type="Eagle")}, "1.2.0rc6")


def test_dynamic_tree_is_entered_by_top_k_alone_on_13():
    base = {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "/d"}
    errors = errors_of({"speculative_config": dict(base, dynamic_tree_max_topK=0)}, "1.3.0rc13")
    assert any(e.startswith("speculative_config.dynamic_tree_max_topK: must be > 0") for e in errors)
    t.validate({"speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": "/d",
                                       "dynamic_tree_max_topK": 0}}, "1.2.0rc6")


def test_every_problem_is_reported_at_once():
    bad = {"use_cuda_graph": True, "moe_config": {"backend": "AUTO"},
           "kv_cache_config": {"free_gpu_memory_fraction": 1.5},
           "speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model_dir": "/d"}}
    assert len(errors_of(bad)) == 4


def test_unsupported_version():
    with pytest.raises(t.OptionsError) as info:
        t.validate({}, "0.9.0")
    message = str(info.value)
    assert "Known releases: 1.2.0rc1, 1.2.0rc6, 1.2.0, 1.2.1, 1.3.0rc11, 1.3.0rc12, 1.3.0rc13" in message
    assert "tools/llm_args_table.py" in message and "_trtllm_releases.py" in message
    with pytest.raises(t.OptionsError) as info:
        t.validate({}, "1.4.0rc1")
    assert "no documentation of its llm_args.py is published" in str(info.value)
    with pytest.raises(t.OptionsError) as info:
        t.validate({}, "1.3.0rc27")
    assert "class reference pages only" in str(info.value) and "Open MPI 5" in str(info.value)


@pytest.mark.parametrize("version,expected", [("1.2.0rc1", "Eagle"), ("1.2.0rc6", "Eagle"), ("1.3.0rc12", "Eagle3")])
def test_method_spelling_per_release(version, expected):
    config = t.speculative_config("eagle3", version, draft_model="/opt/d/", max_draft_len=3)
    assert config == {"decoding_type": expected, "max_draft_len": 3, "speculative_model_dir": "/opt/d/"}
    result = t.validate({"speculative_config": config}, version)
    assert result.warnings == []


def test_method_draft_target_per_release():
    assert t.speculative_config("draft_target", "1.2.0rc6")["decoding_type"] == "DraftTarget"
    assert t.speculative_config("draft_target", "1.3.0rc12")["decoding_type"] == "Draft_Target"
    assert t.speculative_config("none") is None


def test_merge_is_deep_and_does_not_mutate():
    base = {"speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3}}
    merged = t.merge(base, {"speculative_config": {"max_draft_len": 5}, "print_iter_log": True})
    assert merged == {"speculative_config": {"decoding_type": "Eagle", "max_draft_len": 5}, "print_iter_log": True}
    assert base["speculative_config"]["max_draft_len"] == 3


@pytest.mark.parametrize("value", ["yes", "No", "on", "null", "~", "8B", "1.5", "a: b", "#x", "-x", "", " x", "tcp://h:1"])
def test_strings_that_yaml_would_misread_are_quoted(value):
    text = t.render({"tokenizer": value})
    assert yaml.safe_load(text) == {"tokenizer": value}


def test_float_exponent_stays_a_float():
    text = t.render({"batch_wait_timeout_ms": 1e-05})
    assert yaml.safe_load(text) == {"batch_wait_timeout_ms": 1e-05}


def test_empty_options_render_an_empty_mapping():
    assert yaml.safe_load(t.render({})) == {}


@pytest.mark.parametrize("version", ["1.2.0rc1", "1.2.0rc6"])
def test_cuda_graph_rule_of_12_is_the_generated_list(version):
    # 1.2 compares batch_sizes with the list it generates; max(batch_sizes) alone is not enough (1.3's rule).
    (error,) = errors_of({"cuda_graph_config": {"max_batch_size": 8, "batch_sizes": [1, 2, 4, 8]}}, version)
    assert error.startswith("cuda_graph_config: set only one of batch_sizes and max_batch_size on TensorRT-LLM " + version)
    assert "[1, 2, 3, 4, 5, 6, 7, 8]" in error
    t.validate({"cuda_graph_config": {"max_batch_size": 8, "batch_sizes": [1, 2, 4, 8]}}, "1.3.0rc13")
    t.validate({"cuda_graph_config": {"max_batch_size": 4, "batch_sizes": [4, 3, 2, 1]}}, version)
    t.validate({"cuda_graph_config": {"max_batch_size": 8, "batch_sizes": [1, 2, 4, 8], "enable_padding": True}}, version)


def test_generated_batch_sizes_with_padding():
    assert t.cuda_graph_batch_sizes_12(20, True) == [1, 2, 4, 8, 16, 20]
    assert t.cuda_graph_batch_sizes_12(512, False)[-3:] == [128, 256, 512]


def test_ngram_on_12_needs_max_matching_ngram_size():
    errors = errors_of({"speculative_config": {"decoding_type": "NGram", "max_draft_len": 4}}, "1.2.0rc6")
    assert ("speculative_config.max_matching_ngram_size: must be set > 0 for decoding_type \"NGram\" on "
            "TensorRT-LLM 1.2.0rc6 (its default is 0)") in errors
    t.validate({"speculative_config": {"decoding_type": "NGram", "max_draft_len": 4}}, "1.3.0rc12")


def test_keys_removed_and_added_between_releases():
    t.validate({"kv_cache_config": {"onboard_blocks": True}}, "1.2.0rc6")
    (error,) = errors_of({"kv_cache_config": {"onboard_blocks": True}}, "1.3.0rc12")
    assert error.startswith("kv_cache_config.onboard_blocks: unknown key")
    t.validate({"env_overrides": {"NCCL_DEBUG": "INFO"}}, "1.3.0rc12")
    (error,) = errors_of({"env_overrides": {"NCCL_DEBUG": "INFO"}}, "1.2.0rc1")
    assert error.startswith("env_overrides: unknown key")


def test_exclusive_upper_bound():
    (error,) = errors_of({"video_pruning_rate": 1.0}, "1.3.0rc12")
    assert "< 1" in error


def test_type_names_of_subclasses_are_the_plain_ones():
    class TaggedStr(str):
        pass

    with pytest.raises(t.OptionsError) as info:
        t.validate({"kv_cache_config": {"free_gpu_memory_fraction": TaggedStr("lots")}})
    assert '"lots" (str)' in str(info.value) and "TaggedStr" not in str(info.value)


# -- Rules where the tables once differed from a release's llm_args.py, as rendered in its documentation --------
# (https://nvidia.github.io/TensorRT-LLM/<release>/_modules/tensorrt_llm/llmapi/llm_args.html)

RC6_KEYS = {"nvfp4_gemm_config": {}, "sampler_force_async_worker": True, "ray_worker_extension_cls": "m.C",
            "ray_placement_config": None, "enable_sleep": True, "disable_flashinfer_sampling": True,
            "pp_partition": [40, 40], "otlp_traces_endpoint": "http://otel:4317", "env_overrides": {"NCCL_DEBUG": "INFO"}}


def test_keys_of_12rc6_that_12rc1_lacks():
    t.validate(RC6_KEYS, "1.2.0rc6")
    assert len(errors_of(RC6_KEYS, "1.2.0rc1")) == len(RC6_KEYS)


def test_mtp_thinking_token_names_per_release():
    upper = {"decoding_type": "MTP", "BEGIN_THINKING_PHASE_TOKEN": 1, "END_THINKING_PHASE_TOKEN": 2}
    lower = {"decoding_type": "MTP", "begin_thinking_phase_token": 1, "end_thinking_phase_token": 2}
    t.validate({"speculative_config": upper}, "1.2.0rc1")
    assert len(errors_of({"speculative_config": lower}, "1.2.0rc1")) == 2
    t.validate({"speculative_config": lower}, "1.2.0rc6")
    assert len(errors_of({"speculative_config": upper}, "1.2.0rc6")) == 2


def test_sa_ngram_size_and_global_pool_rules_on_13():
    base = {"decoding_type": "SA", "max_draft_len": 4}
    t.validate({"speculative_config": base}, "1.3.0rc13")
    assert "0 is not accepted" in errors_of({"speculative_config": dict(base, max_matching_ngram_size=0)}, "1.3.0rc13")[0]
    (error,) = errors_of({"speculative_config": dict(base, enable_global_pool=True, max_matching_ngram_size=65)},
                         "1.3.0rc13")
    assert "must be -1 or between 1 and 64" in error
    errors = errors_of({"speculative_config": dict(base, global_pool_size=4096)}, "1.3.0rc13")
    assert len(errors) == 1 and "requires enable_global_pool: true" in errors[0]
    (error,) = errors_of({"max_batch_size": 16, "speculative_config": dict(base, enable_global_pool=True,
                                                                           global_pool_size=8)}, "1.3.0rc13")
    assert "global_pool_size: 8 must be >= max_batch_size (16, the options file's)" in error


def test_sa_global_pool_against_the_max_batch_size_the_server_ends_up_with():
    """1.3.0rc13 llm_args.html #TorchLlmArgs.validate_speculative_config (SA branch, ~595k): an explicit
    global_pool_size against the merged max_batch_size, whose default is 2048 (BaseLlmArgs, ~443k) or the flag's."""
    spec = {"decoding_type": "SA", "max_draft_len": 4, "enable_global_pool": True, "global_pool_size": 1024}
    (error,) = errors_of({"speculative_config": spec}, "1.3.0rc13")
    assert "1024 must be >= max_batch_size (2048, the release's default)" in error
    (error,) = errors_of({"speculative_config": spec}, "1.3.0rc24")
    assert "(2048, the release's default)" in error
    with pytest.raises(t.OptionsError) as info:
        t.validate({"speculative_config": spec}, "1.3.0rc13", flags={"max_batch_size": 4096})
    assert "(4096, the trtllm-serve flag's)" in str(info.value)
    t.validate({"speculative_config": spec}, "1.3.0rc13", flags={"max_batch_size": 512})
    t.validate({"speculative_config": dict(spec, global_pool_size=None)}, "1.3.0rc13")  # unset: the server sizes it


def test_kv_cache_dtype_is_checked_on_13_only():
    (error,) = errors_of({"kv_cache_config": {"dtype": "fp4"}}, "1.3.0rc13")
    assert error.startswith('kv_cache_config.dtype: "fp4" is not accepted')
    t.validate({"kv_cache_config": {"dtype": "FP8"}}, "1.3.0rc13")
    t.validate({"kv_cache_config": {"dtype": "fp4"}}, "1.2.0rc6")  # 1.2's KvCacheConfig has no dtype validator


@pytest.mark.parametrize("version", ["1.2.0rc1", "1.2.0rc6", "1.3.0rc13"])
def test_load_format_is_auto_dummy_or_vision_only(version):
    t.validate({"load_format": "dummy"}, version)
    (error,) = errors_of({"load_format": "safetensors"}, version)
    assert "AUTO, DUMMY, VISION_ONLY" in error


def test_only_the_ranges_the_release_has():
    t.validate({"moe_config": {"max_num_tokens": 0}, "kv_cache_config": {"max_tokens": 0},
                "speculative_config": {"decoding_type": "MTP", "relaxed_topk": 0, "relaxed_delta": -1.0}}, "1.3.0rc13")
    # ...and the ranges it has (Field bounds, or field validators such as max_gpu_total_bytes >= 0).
    assert len(errors_of({"kv_cache_config": {"max_gpu_total_bytes": -1, "max_attention_window": [0]}},
                         "1.3.0rc13")) == 2


def test_build_config_only_where_the_pytorch_args_have_it():
    t.validate({"build_config": {"max_batch_size": 8}}, "1.2.0rc1")
    (error,) = errors_of({"build_config": {"max_batch_size": 8}}, "1.3.0rc13")
    assert "replaced by 'the top-level max_batch_size" in error


def test_save_state_without_layers_warns_on_12rc6():
    result = t.validate({"speculative_config": {"decoding_type": "SaveState", "output_directory": "/tmp/s"}}, "1.2.0rc6")
    assert any("eagle3_layers_to_capture" in w for w in result.warnings)
    (error,) = errors_of({"speculative_config": {"decoding_type": "SaveState"}}, "1.3.0rc13")
    assert error.startswith("speculative_config.output_directory: is required")


def test_mtp_plain_field_and_non_null_thinking_tokens_on_13():
    t.validate({"speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers_from_model_config": 1}},
               "1.3.0rc13")
    (error,) = errors_of({"speculative_config": {"decoding_type": "MTP", "begin_thinking_phase_token": None}},
                         "1.3.0rc13")
    assert error.startswith("speculative_config.begin_thinking_phase_token: null is not allowed")


def test_rc12_warns_about_keys_rc11_lacks():
    result = t.validate({"telemetry_config": {}}, "1.3.0rc12")
    assert any("telemetry_config" in w and "1.3.0rc11 has no telemetry_config" in w for w in result.warnings)
    assert t.validate({"telemetry_config": {}}, "1.3.0rc13").warnings == []
    assert errors_of({"telemetry_config": {}}, "1.3.0rc11")[0].startswith("telemetry_config: unknown key")
