# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""TensorRT-LLM "extra LLM API options" knowledge: schemas per release, validation, rendering.

Everything a release accepts is data in ``RELEASES``; the code below only interprets it, so
supporting a new release means adding an entry (usually derived from its predecessor with
``_derive``). Pure Python with no third-party imports: it runs inside Ansible modules on the
target, in the unit tests, and in the lab's trtllm-serve stand-in.

Sources: the rendered ``tensorrt_llm/llmapi/llm_args.py`` of each release (see
shared/reference/trtllm-serve-facts.md). Every pydantic model there is ``extra="forbid"``.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import re

DEFAULT_VERSION = "1.2.0rc6"


# ---------------------------------------------------------------------------
# Schema vocabulary. A field spec is a plain dict; these helpers only shorten the tables.
# ---------------------------------------------------------------------------

def _field(kind, **extra):
    spec = {"type": kind}
    spec.update(extra)
    return spec


def BOOL(**kw):
    return _field("bool", **kw)


def INT(**kw):  # kw: ge, gt, le, nullable
    return _field("int", **kw)


def FLOAT(**kw):  # kw: ge, gt, le, nullable
    return _field("float", **kw)


def STR(**kw):  # kw: choices, nullable
    return _field("str", **kw)


def LIST(items, **kw):
    return _field("list", items=items, **kw)


def OBJ(schema, **kw):
    return _field("object", schema=schema, **kw)


def ANY(**kw):
    """Free-form value that the release accepts without a fixed shape (dicts, paths, ...)."""
    return _field("any", **kw)


def MAP_INT_INT(**kw):
    return _field("map_int_int", **kw)


def _derive(base, add=None, remove=(), change=None):
    """Copy an ordered field table, dropping, changing and appending fields."""
    out = {}
    for key, spec in base.items():
        if key in remove:
            continue
        out[key] = copy.deepcopy((change or {}).get(key, spec))
    for key, spec in (add or {}).items():
        out[key] = spec
    return out


# ---------------------------------------------------------------------------
# Release tables.
# Field order is the canonical order of the rendered file: the keys the DGX Spark playbooks
# use come first, so a rendered file reads like NVIDIA's DGX Spark playbooks; the rest follow alphabetically.
# ---------------------------------------------------------------------------

_TOP_12 = {
    "print_iter_log": BOOL(),
    "enable_attention_dp": BOOL(),
    "disable_overlap_scheduler": BOOL(),
    "enable_autotuner": BOOL(),
    "enable_chunked_prefill": BOOL(),
    "cuda_graph_config": OBJ("cuda_graph_config", nullable=True),
    "moe_config": OBJ("moe_config"),
    "speculative_config": OBJ("speculative_config", nullable=True),
    "kv_cache_config": OBJ("kv_cache_config"),
    "allreduce_strategy": STR(choices=("AUTO", "NCCL", "UB", "MINLATENCY", "ONESHOT", "TWOSHOT",
                                       "LOWPRECISION", "MNNVL", "NCCL_SYMMETRIC"), nullable=True),
    "attention_dp_config": OBJ("attention_dp_config", nullable=True),
    "attn_backend": STR(),
    "batch_wait_max_tokens_ratio": FLOAT(ge=0, le=1),
    "batch_wait_timeout_iters": INT(ge=0),
    "batch_wait_timeout_ms": FLOAT(ge=0),
    "context_parallel_size": INT(ge=1),
    "dtype": STR(),
    "enable_iter_perf_stats": BOOL(),
    "enable_iter_req_stats": BOOL(),
    "max_batch_size": INT(ge=1, nullable=True),
    "max_beam_width": INT(ge=1, nullable=True),
    "max_input_len": INT(ge=1, nullable=True),
    "max_num_tokens": INT(ge=1, nullable=True),
    "max_seq_len": INT(ge=1, nullable=True),
    "moe_cluster_parallel_size": INT(nullable=True),
    "moe_expert_parallel_size": INT(nullable=True),
    "moe_tensor_parallel_size": INT(nullable=True),
    "num_postprocess_workers": INT(ge=0),
    "perf_metrics_max_requests": INT(ge=0),
    "pipeline_parallel_size": INT(ge=1),
    "reasoning_parser": STR(nullable=True),
    "return_perf_metrics": BOOL(),
    "revision": STR(nullable=True),
    "sampler_type": STR(choices=("auto", "TRTLLMSampler", "TorchSampler")),
    "scheduler_config": OBJ("scheduler_config"),
    "stream_interval": INT(gt=0),
    "tensor_parallel_size": INT(ge=1),
    "tokenizer": STR(nullable=True),
    "trust_remote_code": BOOL(),
    # Less common fields, alphabetical. Objects TRT-LLM builds from nested mappings whose shape
    # this collection does not model are accepted as they are (ANY).
    "backend": STR(nullable=True),
    "batched_logits_processor": ANY(nullable=True),
    "build_config": ANY(nullable=True),
    "cache_transceiver_config": ANY(nullable=True),
    "checkpoint_format": STR(nullable=True),
    "checkpoint_loader": ANY(nullable=True),
    "cp_config": ANY(nullable=True),
    "decoding_config": ANY(nullable=True),
    "enable_layerwise_nvtx_marker": BOOL(),
    "enable_lm_head_tp_in_adp": BOOL(),
    "enable_lora": BOOL(),
    "enable_min_latency": BOOL(),
    "fail_fast_on_attention_window_too_large": BOOL(),
    "force_dynamic_quantization": BOOL(),
    "garbage_collection_gen0_threshold": INT(),
    "gather_generation_logits": BOOL(),
    "gpus_per_node": INT(ge=1, nullable=True),
    "guided_decoding_backend": STR(choices=("xgrammar", "llguidance"), nullable=True),
    "iter_stats_max_iterations": INT(ge=0, nullable=True),
    "kv_connector_config": ANY(nullable=True),
    "load_format": STR(),
    "lora_config": ANY(nullable=True),
    "mm_encoder_only": BOOL(),
    "model": STR(),
    "orchestrator_type": STR(choices=("rpc", "ray"), nullable=True),
    "peft_cache_config": ANY(nullable=True),
    "postprocess_tokenizer_dir": STR(nullable=True),
    "request_stats_max_iterations": INT(ge=0, nullable=True),
    "skip_tokenizer_init": BOOL(),
    "sparse_attention_config": ANY(nullable=True),
    "tokenizer_mode": STR(choices=("auto", "slow")),
    "tokenizer_revision": STR(nullable=True),
    "torch_compile_config": ANY(nullable=True),
}

# 1.3 drops the TensorRT-engine leftovers from the PyTorch args and adds new knobs.
_TOP_13 = _derive(_TOP_12, remove=("build_config", "fail_fast_on_attention_window_too_large"), add={
    "custom_tokenizer": STR(nullable=True),
    "disable_flashinfer_sampling": BOOL(),
    "dwdp_config": ANY(nullable=True),
    "enable_energy_metrics": BOOL(),
    "env_overrides": ANY(nullable=True),
    "layer_wise_benchmarks_config": ANY(),
    "max_stats_len": INT(ge=0),
    "model_kwargs": ANY(nullable=True),
    "nvfp4_gemm_config": ANY(),
    "otlp_traces_endpoint": STR(nullable=True),
    "pp_partition": LIST(INT(ge=0), nullable=True),
    "prometheus_metrics_config": ANY(nullable=True),
    "ray_placement_config": ANY(nullable=True),
    "ray_worker_extension_cls": STR(nullable=True),
    "ray_worker_nsight_options": ANY(nullable=True),
    "sampler_force_async_worker": BOOL(),
    "sleep_config": ANY(nullable=True),
    "telemetry_config": ANY(),
    "use_cute_dsl_blockscaling_bmm": BOOL(),
    "use_cute_dsl_blockscaling_mm": BOOL(),
    "video_pruning_rate": FLOAT(ge=0, lt=1, nullable=True),
})

_CUDA_GRAPH = {
    "max_batch_size": INT(ge=0),
    "enable_padding": BOOL(),
    "batch_sizes": LIST(INT(ge=1), nullable=True),
}

_KV_CACHE = {
    "free_gpu_memory_fraction": FLOAT(ge=0, le=1, nullable=True),
    "enable_block_reuse": BOOL(),
    "copy_on_partial_reuse": BOOL(),
    "dtype": STR(),
    "enable_partial_reuse": BOOL(),
    "event_buffer_max_size": INT(ge=0),
    "host_cache_size": INT(ge=0, nullable=True),
    "mamba_ssm_cache_dtype": STR(choices=("auto", "float16", "bfloat16", "float32")),
    "max_attention_window": LIST(INT(ge=1), nullable=True),
    "max_gpu_total_bytes": INT(ge=0),
    "max_tokens": INT(ge=1, nullable=True),
    "sink_token_length": INT(ge=0, nullable=True),
    "tokens_per_block": INT(ge=1),
    "attention_dp_events_gather_period_ms": INT(ge=0),
    "cross_kv_cache_fraction": FLOAT(ge=0, le=1, nullable=True),
    "onboard_blocks": BOOL(),
    "secondary_offload_min_priority": INT(nullable=True),
    "use_uvm": BOOL(),
}

_KV_CACHE_13 = _derive(_KV_CACHE, remove=("onboard_blocks",), add={
    "iteration_stats_interval": INT(gt=0),
    "mamba_ssm_philox_rounds": INT(ge=1),
    "mamba_ssm_stochastic_rounding": BOOL(),
    "max_util_for_resume": FLOAT(ge=0, le=1),
    "use_kv_cache_manager_v2": BOOL(),
})

_MOE_BACKENDS_12 = ("CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM", "VANILLA", "TRITON")
_MOE_BACKENDS_13 = ("AUTO",) + _MOE_BACKENDS_12[:5] + ("DENSEGEMM",) + _MOE_BACKENDS_12[5:]

_MOE_12 = {
    "backend": STR(choices=_MOE_BACKENDS_12),
    "disable_finalize_fusion": BOOL(),
    "load_balancer": ANY(nullable=True),
    "max_num_tokens": INT(ge=1, nullable=True),
    "use_low_precision_moe_combine": BOOL(),
}

_SCHEDULER = {
    "capacity_scheduler_policy": STR(choices=("MAX_UTILIZATION", "GUARANTEED_NO_EVICT", "STATIC_BATCH")),
    "context_chunking_policy": STR(choices=("FIRST_COME_FIRST_SERVED", "EQUAL_PROGRESS"), nullable=True),
    "dynamic_batch_config": ANY(nullable=True),
}

_ATTENTION_DP = {
    "enable_balance": BOOL(),
    "timeout_iters": INT(ge=0),
    "batching_wait_iters": INT(ge=0),
}

_SCHEDULER_13 = _derive(_SCHEDULER, change={
    "context_chunking_policy": STR(choices=("FIRST_COME_FIRST_SERVED", "EQUAL_PROGRESS", "FORCE_CHUNK"), nullable=True),
}, add={"waiting_queue_policy": STR(choices=("fcfs", "priority")), "use_python_scheduler": BOOL()})

_ATTENTION_DP_13 = _derive(_ATTENTION_DP, add={
    "enable_kv_cache_aware_routing": BOOL(),
    "kv_cache_routing_load_balance_weight": FLOAT(),
})

# Speculative decoding. `decoding_types` maps each accepted `decoding_type` string to a class
# below; `aliases` are spellings the release still accepts but rewrites (warned about);
# `hints` are spellings it rejects, with the one to use instead.
_SPEC_BASE_12RC1 = {
    "decoding_type": STR(),
    "max_draft_len": INT(ge=0, nullable=True),
    "speculative_model_dir": STR(nullable=True),
    "max_concurrency": INT(nullable=True),
    "load_format": STR(nullable=True),
    "acceptance_window": INT(ge=0, nullable=True),
    "acceptance_length_threshold": FLOAT(ge=0, nullable=True),
}

_EAGLE_12 = {
    "eagle3_one_model": BOOL(),
    "eagle3_layers_to_capture": LIST(INT(), nullable=True),
    "num_eagle_layers": INT(ge=1, nullable=True),
    "eagle_choices": LIST(LIST(INT(ge=0)), nullable=True),
    "use_dynamic_tree": BOOL(),
    "dynamic_tree_max_topK": INT(ge=0, nullable=True),
    "max_non_leaves_per_layer": INT(ge=0, nullable=True),
    "greedy_sampling": BOOL(),
    "posterior_threshold": FLOAT(nullable=True),
}

_NGRAM_12 = {
    "max_matching_ngram_size": INT(gt=0),
    "is_keep_all": BOOL(),
    "is_use_oldest": BOOL(),
    "is_public_pool": BOOL(),
}

_MTP_12 = {
    "num_nextn_predict_layers": INT(ge=1),
    "use_relaxed_acceptance_for_thinking": BOOL(),
    "relaxed_topk": INT(ge=1),
    "relaxed_delta": FLOAT(ge=0),
    "use_mtp_vanilla": BOOL(),
    "mtp_eagle_one_model": BOOL(),
}
# 1.2 spells the thinking-phase tokens in capitals; 1.3 lower-cases them.
_MTP_THINKING_12 = {"BEGIN_THINKING_PHASE_TOKEN": INT(), "END_THINKING_PHASE_TOKEN": INT()}

_SAVE_STATE = {
    "output_directory": STR(),
    "write_interval": INT(ge=1),
    "file_prefix": STR(),
    "eagle3_layers_to_capture": LIST(INT(), nullable=True),
}

_MEDUSA = {"medusa_choices": LIST(LIST(INT(ge=0)), nullable=True), "num_medusa_heads": INT(ge=1, nullable=True)}
_LOOKAHEAD = {"max_window_size": INT(ge=1), "max_ngram_size": INT(ge=1), "max_verification_set_size": INT(ge=1)}

# Per class: extra fields, the rules that apply, and whether the PyTorch backend supports it.
#   draft_model: a draft model path is required      draft_len: "required" | "positive" | "forbidden"
_CLASSES_12RC1 = {
    "eagle": {"fields": dict(_EAGLE_12, max_total_draft_tokens=INT(ge=1, nullable=True)),
              "draft_model": True, "draft_len": "positive", "eagle_tree": True},
    "draft_target": {"fields": {}, "draft_model": True, "draft_len": "positive"},
    "ngram": {"fields": _NGRAM_12, "draft_len": "positive", "required": ("max_matching_ngram_size",)},
    "mtp": {"fields": dict(_MTP_12, **_MTP_THINKING_12), "draft_len": "forbidden"},
    "save_state": {"fields": _SAVE_STATE, "required": ("output_directory",)},
    "user_provided": {"fields": {"drafter": ANY(), "resource_manager": ANY(nullable=True)},
                      "required": ("drafter",)},
    "auto": {"fields": {}},
    "medusa": {"fields": _MEDUSA, "pytorch": False},
    "lookahead": {"fields": _LOOKAHEAD, "pytorch": False},
}

_SPEC_12RC1 = {
    "decoding_types": {"MTP": "mtp", "Medusa": "medusa", "Eagle": "eagle", "Lookahead": "lookahead",
                       "NGram": "ngram", "DraftTarget": "draft_target", "SaveState": "save_state",
                       "UserProvided": "user_provided", "AUTO": "auto"},
    "aliases": {},
    "hints": {"Eagle3": "Eagle", "EAGLE3": "Eagle", "Draft_Target": "DraftTarget", "User_Provided": "UserProvided"},
    # The spelling this collection emits for its high-level methods.
    "methods": {"eagle3": "Eagle", "draft_target": "DraftTarget", "ngram": "NGram", "mtp": "MTP"},
    "path_keys": ("speculative_model_dir",),
    "base": _SPEC_BASE_12RC1,
    "classes": _CLASSES_12RC1,
    # draft_len_schedule rule: None (field absent), "key_one" (1.2.x), "smallest_key" (1.3.x)
    "draft_len_schedule": None,
    # NVIDIA's DGX Spark playbook runs the 1.2 spellings on 1.3.0rc12; the 1.3 schema's tags differ.
    "alias_note": "",
    "max_concurrency_excludes_schedule": False,
}

_SPEC_12RC6 = dict(
    _SPEC_12RC1,
    base=_derive(_SPEC_BASE_12RC1, add={
        "max_total_draft_tokens": INT(ge=1, nullable=True),
        "draft_len_schedule": MAP_INT_INT(nullable=True),
        "allow_advanced_sampling": BOOL(),
    }),
    classes=dict(_CLASSES_12RC1, eagle=dict(_CLASSES_12RC1["eagle"], fields=_EAGLE_12)),
    draft_len_schedule="key_one",
)

_EAGLE3_13 = _derive(_EAGLE_12, add={"eagle3_model_arch": STR(choices=("llama3", "mistral_large3"))})
_SPEC_13 = dict(
    _SPEC_12RC6,
    decoding_types={"Eagle": "eagle3", "Eagle3": "eagle3", "Draft_Target": "draft_target", "MTP": "mtp",
                    "NGram": "ngram", "SA": "sa", "PARD": "pard", "AUTO": "auto", "SaveState": "save_state",
                    "User_Provided": "user_provided", "Medusa": "medusa", "Lookahead": "lookahead"},
    # NVIDIA's DGX Spark playbook runs these 1.2-era spellings on 1.3.0rc12; 1.3 rewrites them.
    aliases={"Eagle": "Eagle3", "DraftTarget": "Draft_Target", "UserProvided": "User_Provided"},
    alias_note=" (NVIDIA's DGX Spark playbook runs it on 1.3.0rc12; the 1.3 schema's own tag is the one to prefer)",
    hints={"EAGLE3": "Eagle3", "Eagle-3": "Eagle3"},
    methods={"eagle3": "Eagle3", "draft_target": "Draft_Target", "ngram": "NGram", "mtp": "MTP"},
    path_keys=("speculative_model", "speculative_model_dir"),
    base=_derive(_SPEC_12RC6["base"], remove=("speculative_model_dir",), change={
        "max_draft_len": INT(ge=0, nullable=True),
        "max_concurrency": INT(gt=0, nullable=True),
    }, add={"speculative_model": STR(nullable=True), "speculative_model_dir": STR(nullable=True)}),
    classes={
        "eagle3": {"fields": dict(_EAGLE3_13, max_batch_size=INT(ge=1, nullable=True), sa_config=ANY(nullable=True)),
                   "draft_model": True, "draft_len": "positive", "eagle_tree": True},
        "draft_target": {"fields": {}, "draft_model": True, "draft_len": "positive"},
        "ngram": {"fields": _derive(_NGRAM_12, change={"max_matching_ngram_size": INT(gt=0)}), "draft_len": "positive"},
        "mtp": {"fields": _derive(_MTP_12, add={"sa_config": ANY(nullable=True),
                                                "begin_thinking_phase_token": INT(nullable=True),
                                                "end_thinking_phase_token": INT(nullable=True)}),
                "draft_len": "forbidden"},
        "sa": {"fields": {"max_matching_ngram_size": INT(), "enable_global_pool": BOOL(),
                          "global_pool_size": INT(gt=0, nullable=True)}, "draft_len": "positive"},
        "pard": {"fields": {"mask_token_id": INT(nullable=True), "sa_config": ANY(nullable=True)}},
        "save_state": _CLASSES_12RC1["save_state"],
        "user_provided": _CLASSES_12RC1["user_provided"],
        "auto": {"fields": {}},
        "medusa": _CLASSES_12RC1["medusa"],
        "lookahead": _CLASSES_12RC1["lookahead"],
    },
    draft_len_schedule="smallest_key",
    max_concurrency_excludes_schedule=True,
)

_OBJECTS_12 = {
    "cuda_graph_config": _CUDA_GRAPH,
    "kv_cache_config": _KV_CACHE,
    "moe_config": _MOE_12,
    "scheduler_config": _SCHEDULER,
    "attention_dp_config": _ATTENTION_DP,
}

RELEASES = {
    "1.2.0rc1": {
        "top": _TOP_12,
        # 1.2.0rc1 requires batch_sizes to equal the list it generates from max_batch_size.
        "cuda_graph_rule": "generated",
        "objects": _OBJECTS_12,
        "speculative": _SPEC_12RC1,
    },
    "1.2.0rc6": {
        "top": _TOP_12,
        "cuda_graph_rule": "max",
        "objects": _OBJECTS_12,
        "speculative": _SPEC_12RC6,
    },
    "1.3.0rc12": {
        "top": _TOP_13,
        "cuda_graph_rule": "max",
        "objects": {
            "cuda_graph_config": _CUDA_GRAPH,
            "kv_cache_config": _KV_CACHE_13,
            "moe_config": _derive(_MOE_12, change={"backend": STR(choices=_MOE_BACKENDS_13)}),
            "scheduler_config": _SCHEDULER_13,
            "attention_dp_config": _ATTENTION_DP_13,
        },
        "speculative": _SPEC_13,
    },
}

SUPPORTED_VERSIONS = tuple(RELEASES)

# Keys that older releases or blog posts used and that no supported release accepts.
RENAMED_KEYS = {
    "use_cuda_graph": "cuda_graph_config",
    "cuda_graph_max_batch_size": "cuda_graph_config.max_batch_size",
    "cuda_graph_padding_enabled": "cuda_graph_config.enable_padding",
    "cuda_graph_batch_sizes": "cuda_graph_config.batch_sizes",
    "autotuner_enabled": "enable_autotuner",
    "pytorch_weights_path": "speculative_config.speculative_model_dir",
    "prompt_lookup_num_tokens": "speculative_config.max_draft_len",
    "kv_cache_free_gpu_memory_fraction": "kv_cache_config.free_gpu_memory_fraction",
    "free_gpu_memory_fraction": "kv_cache_config.free_gpu_memory_fraction",
    "enable_overlap_scheduler": "disable_overlap_scheduler (inverted)",
}

# High-level methods this collection offers (role variable specdec_serve_method).
METHODS = ("eagle3", "draft_target", "ngram", "mtp", "none")


class OptionsError(ValueError):
    """The options are not valid for the release; ``errors`` lists one message per problem."""

    def __init__(self, errors, version):
        self.errors = list(errors)
        self.version = version
        super().__init__(
            "%d problem(s) in the TensorRT-LLM %s extra LLM API options:\n- %s"
            % (len(self.errors), version, "\n- ".join(self.errors)))


class ValidationResult:
    """Outcome of ``validate``: the canonical options and any non-fatal warnings."""

    def __init__(self, options, warnings):
        self.options = options
        self.warnings = warnings


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------

def _type_name(value):
    # isinstance, not type(): Ansible hands over subclasses of str, dict and list (its tagged values).
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (list, "list"),
                       (dict, "mapping"), (type(None), "null")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _show(value):
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _suggest(word, candidates, extra=None):
    if extra and word in extra:
        return extra[word]
    lowered = {c.lower().replace("_", ""): c for c in candidates}
    key = word.lower().replace("_", "").replace("-", "")
    if key in lowered:
        return lowered[key]
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return close[0] if close else None


def _hint(suggestion):
    return "; did you mean '%s'?" % suggestion if suggestion else ""


class _Validator:
    def __init__(self, version, backend):
        if version not in RELEASES:
            raise OptionsError(["trtllm_version: '%s' is not a supported release (supported: %s)"
                                % (version, ", ".join(SUPPORTED_VERSIONS))], version)
        self.version = version
        self.backend = backend
        self.release = RELEASES[version]
        self.errors = []
        self.warnings = []

    def error(self, path, message):
        self.errors.append("%s: %s" % (path or "(top level)", message))

    # -- scalar and container checks ------------------------------------------------
    def check_value(self, path, value, spec):
        if value is None:
            if spec.get("nullable") or spec["type"] == "any":
                return None
            self.error(path, "null is not allowed here (expected %s)" % self.describe(spec))
            return None
        kind = spec["type"]
        if kind == "any":
            return copy.deepcopy(value)
        if kind == "object":
            return self.check_object(path, value, self.fields_of(spec["schema"]), spec["schema"])
        if kind == "list":
            if not isinstance(value, list):
                self.error(path, "%s (%s) must be a list of %s" % (_show(value), _type_name(value), self.describe(spec["items"])))
                return None
            return [self.check_value("%s[%d]" % (path, i), item, spec["items"]) for i, item in enumerate(value)]
        if kind == "map_int_int":
            return self.check_map_int_int(path, value, spec)
        if kind == "bool":
            if not isinstance(value, bool):
                self.error(path, "%s (%s) must be a boolean (true or false)" % (_show(value), _type_name(value)))
            return value
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                self.error(path, "%s (%s) must be an integer%s; emit numbers unquoted"
                           % (_show(value), _type_name(value), self.describe_range(spec)))
                return value
            self.check_range(path, value, spec)
            return value
        if kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                    isinstance(value, float) and not math.isfinite(value)):
                self.error(path, "%s (%s) must be a finite number%s" % (_show(value), _type_name(value), self.describe_range(spec)))
                return value
            self.check_range(path, value, spec)
            return value
        if kind == "str":
            if not isinstance(value, str):
                self.error(path, "%s (%s) must be a string" % (_show(value), _type_name(value)))
                return value
            choices = spec.get("choices")
            if choices and value not in choices:
                self.error(path, "%s is not accepted by TensorRT-LLM %s (accepted: %s)%s"
                           % (_show(value), self.version, ", ".join(choices), _hint(_suggest(value, choices))))
            return value
        raise AssertionError("unknown field type %r" % kind)  # a table bug, not user input

    def check_range(self, path, value, spec):
        bad = (("ge" in spec and value < spec["ge"]) or ("gt" in spec and value <= spec["gt"])
               or ("le" in spec and value > spec["le"]) or ("lt" in spec and value >= spec["lt"]))
        if bad:
            self.error(path, "%s is out of range; TensorRT-LLM %s expects %s"
                       % (_show(value), self.version, self.describe_range(spec).strip(" ,") or "a valid value"))

    @staticmethod
    def describe_range(spec):
        parts = []
        if "ge" in spec and "le" in spec:
            parts.append("between %s and %s" % (spec["ge"], spec["le"]))
        else:
            if "ge" in spec:
                parts.append(">= %s" % spec["ge"])
            if "gt" in spec:
                parts.append("> %s" % spec["gt"])
            if "le" in spec:
                parts.append("<= %s" % spec["le"])
        if "lt" in spec:
            parts.append("< %s" % spec["lt"])
        return (" " + " and ".join(parts)) if parts else ""

    def describe(self, spec):
        kind = spec["type"]
        if kind == "object":
            return "a mapping (%s)" % spec["schema"]
        if kind == "list":
            return "a list of %s" % self.describe(spec["items"])
        if kind == "str" and spec.get("choices"):
            return "one of " + ", ".join(spec["choices"])
        return {"bool": "a boolean", "int": "an integer", "float": "a number", "str": "a string",
                "map_int_int": "a mapping of integers to integers", "any": "a value"}[kind] + self.describe_range(spec)

    def check_map_int_int(self, path, value, spec):
        if not isinstance(value, dict):
            self.error(path, "%s (%s) must be a mapping of batch size to draft length" % (_show(value), _type_name(value)))
            return None
        out = {}
        for key, item in value.items():
            try:
                number = int(key)
                if isinstance(key, bool) or (isinstance(key, str) and not key.strip().isdigit()):
                    raise ValueError(key)
            except (TypeError, ValueError):
                self.error("%s.%s" % (path, key), "key %s must be an integer batch size" % _show(key))
                continue
            if isinstance(item, bool) or not isinstance(item, int):
                self.error("%s.%s" % (path, key), "%s (%s) must be an integer draft length" % (_show(item), _type_name(item)))
                continue
            out[number] = item
        return dict(sorted(out.items()))

    def fields_of(self, schema):
        if schema == "speculative_config":
            return None  # handled by check_speculative
        return self.release["objects"][schema]

    # -- objects ----------------------------------------------------------------------
    def check_object(self, path, value, fields, schema=None):
        if schema == "speculative_config":
            return self.check_speculative(path, value)
        if not isinstance(value, dict):
            self.error(path, "%s (%s) must be a mapping" % (_show(value), _type_name(value)))
            return None
        self.reject_unknown(path, value, fields)
        out = {}
        for key, spec in fields.items():
            if key in value:
                out[key] = self.check_value(self.join(path, key), value[key], spec)
        if schema == "cuda_graph_config":
            self.check_cuda_graph(path, out)
        return out

    @staticmethod
    def join(path, key):
        return "%s.%s" % (path, key) if path else str(key)

    def reject_unknown(self, path, value, fields, context=""):
        for key in value:
            if key in fields:
                continue
            key_path = self.join(path, key)
            if not isinstance(key, str):
                self.error(key_path, "key %s must be a string" % _show(key))
                continue
            renamed = RENAMED_KEYS.get(key)
            suggestion = _suggest(key, fields)
            if renamed:
                advice = " This old key was replaced by '%s'." % renamed
            else:
                advice = " Did you mean '%s'?" % suggestion if suggestion else ""
            self.error(key_path, "unknown key %s for TensorRT-LLM %s%s (the release forbids extra keys).%s "
                       "Accepted keys here: %s"
                       % (_show(key), self.version, context, advice, ", ".join(sorted(fields))))

    def check_cuda_graph(self, path, out):
        sizes = out.get("batch_sizes")
        max_bs = out.get("max_batch_size")
        if not (sizes and max_bs and isinstance(max_bs, int) and all(isinstance(s, int) for s in sizes)):
            return
        if self.release["cuda_graph_rule"] == "generated":
            generated = cuda_graph_batch_sizes_12rc1(max_bs, bool(out.get("enable_padding")))
            if sorted(sizes) != generated:
                self.error(path, "set only one of batch_sizes and max_batch_size on TensorRT-LLM %s: with both, "
                           "batch_sizes must equal the list it generates from max_batch_size %s, %s"
                           % (self.version, max_bs, generated))
        elif max_bs != max(sizes):
            self.error(self.join(path, "max_batch_size"),
                       "%s must equal max(batch_sizes) = %s when both are set (or set only one of them)"
                       % (max_bs, max(sizes)))

    # -- speculative decoding ------------------------------------------------------------
    def check_speculative(self, path, value):
        spec_table = self.release["speculative"]
        if not isinstance(value, dict):
            self.error(path, "%s (%s) must be a mapping with a decoding_type" % (_show(value), _type_name(value)))
            return None
        accepted = spec_table["decoding_types"]
        choices = sorted(set(accepted) | set(spec_table["aliases"]))
        dtype = value.get("decoding_type")
        type_path = self.join(path, "decoding_type")
        if dtype is None:
            self.error(type_path, "is required (accepted by TensorRT-LLM %s: %s)" % (self.version, ", ".join(choices)))
            return None
        if not isinstance(dtype, str) or dtype not in accepted and dtype not in spec_table["aliases"]:
            suggestion = _suggest(str(dtype), choices, spec_table["hints"])
            self.error(type_path, "%s is not accepted by TensorRT-LLM %s (accepted: %s)%s"
                       % (_show(dtype), self.version, ", ".join(choices), _hint(suggestion)))
            return None
        if dtype in spec_table["aliases"]:
            canonical = spec_table["aliases"][dtype]
            self.warnings.append("%s: %s is accepted by TensorRT-LLM %s as an alias of '%s'%s; prefer '%s'"
                                 % (type_path, _show(dtype), self.version, canonical, spec_table["alias_note"], canonical))
            dtype_class = accepted[canonical]
        else:
            dtype_class = accepted[dtype]
        cls = spec_table["classes"][dtype_class]
        if self.backend == "pytorch" and cls.get("pytorch") is False:
            self.error(type_path, "%s is not supported on the PyTorch backend of TensorRT-LLM %s" % (_show(dtype), self.version))
        fields = _derive(spec_table["base"], add=cls["fields"])
        self.reject_unknown(path, value, fields, context=" with decoding_type %s" % _show(dtype))
        out = {}
        for key, field_spec in fields.items():
            if key in value:
                out[key] = self.check_value(self.join(path, key), value[key], field_spec)
        self.check_speculative_rules(path, out, dtype, cls, spec_table)
        return out

    def check_speculative_rules(self, path, out, dtype, cls, spec_table):
        label = "decoding_type %s" % _show(dtype)
        for key in cls.get("required", ()):
            if out.get(key) is None:
                self.error(self.join(path, key), "is required for %s" % label)
        path_keys = spec_table["path_keys"]
        given = [k for k in path_keys if out.get(k) is not None]
        if cls.get("draft_model") and not given:
            self.error(self.join(path, path_keys[0]),
                       "is required for %s: the draft model (a local directory%s) must be provided"
                       % (label, " or a Hugging Face id" if "speculative_model" in path_keys else ""))
        if len(given) > 1:
            self.error(path, "set only one of %s" % ", ".join(given))
        draft_len = out.get("max_draft_len")
        rule = cls.get("draft_len")
        len_path = self.join(path, "max_draft_len")
        if rule in ("required", "positive") and draft_len is None:
            self.error(len_path, "is required for %s" % label)
        elif rule == "positive" and isinstance(draft_len, int) and draft_len <= 0:
            self.error(len_path, "%s must be > 0 for %s on TensorRT-LLM %s" % (draft_len, label, self.version))
        elif rule == "forbidden" and draft_len is not None:
            self.error(len_path, "must not be set for %s: it is derived from num_nextn_predict_layers" % label)
        if cls.get("eagle_tree"):
            self.check_eagle_tree(path, out, draft_len)
        schedule = out.get("draft_len_schedule")
        if schedule and isinstance(draft_len, int):
            self.check_schedule(path, schedule, draft_len, spec_table)
        if schedule and out.get("max_concurrency") is not None and spec_table["max_concurrency_excludes_schedule"]:
            self.error(self.join(path, "max_concurrency"), "cannot be combined with draft_len_schedule on TensorRT-LLM %s"
                       % self.version)

    def check_eagle_tree(self, path, out, draft_len):
        if out.get("eagle_choices") and out.get("use_dynamic_tree"):
            self.error(self.join(path, "eagle_choices"), "cannot be combined with use_dynamic_tree: true")
        if not out.get("use_dynamic_tree"):
            return
        top_k = out.get("dynamic_tree_max_topK")
        if not isinstance(top_k, int) or top_k <= 0:
            self.error(self.join(path, "dynamic_tree_max_topK"), "must be > 0 when use_dynamic_tree is true")
            return
        total = out.get("max_total_draft_tokens")
        if isinstance(total, int) and isinstance(draft_len, int) and not draft_len <= total <= top_k * draft_len:
            self.error(self.join(path, "max_total_draft_tokens"),
                       "%s must be between max_draft_len (%s) and dynamic_tree_max_topK * max_draft_len (%s)"
                       % (total, draft_len, top_k * draft_len))

    def check_schedule(self, path, schedule, draft_len, spec_table):
        sched_path = self.join(path, "draft_len_schedule")
        for batch, length in schedule.items():
            if batch < 1 or not 0 <= length <= draft_len:
                self.error("%s.%s" % (sched_path, batch), "batch sizes must be >= 1 and draft lengths between 0 and "
                           "max_draft_len (%s); got %s: %s" % (draft_len, batch, length))
        rule = spec_table["draft_len_schedule"]
        if rule == "key_one" and schedule.get(1) != draft_len:
            self.error(sched_path, "must contain batch size 1 mapped to max_draft_len (%s) on TensorRT-LLM %s"
                       % (draft_len, self.version))
        elif rule == "smallest_key" and schedule[min(schedule)] != draft_len:
            self.error(sched_path, "its smallest batch size (%s) must map to max_draft_len (%s) on TensorRT-LLM %s"
                       % (min(schedule), draft_len, self.version))

    def run(self, options):
        if not isinstance(options, dict):
            self.error("", "the options must be a mapping, got %s" % _type_name(options))
            return None
        return self.check_object("", options, self.release["top"])


def cuda_graph_batch_sizes_12rc1(max_batch_size, enable_padding):
    """The CUDA graph batch sizes 1.2.0rc1 generates from max_batch_size (its _generate_cuda_graph_batch_sizes)."""
    if enable_padding:
        sizes = [1, 2, 4] + list(range(8, 129, 8))
    else:
        sizes = list(range(1, 32)) + [32, 64, 128]
    power = 256
    while power <= max_batch_size:
        sizes.append(power)
        power *= 2
    sizes = [s for s in sizes if s <= max_batch_size]
    if max_batch_size not in sizes:
        sizes.append(max_batch_size)
    return sizes


def validate(options, version=DEFAULT_VERSION, backend="pytorch"):
    """Validate ``options`` for ``version``; return a ValidationResult or raise OptionsError."""
    validator = _Validator(version, backend)
    normalized = validator.run(options)
    if validator.errors:
        raise OptionsError(validator.errors, version)
    return ValidationResult(normalized, validator.warnings)


def speculative_config(method, version=DEFAULT_VERSION, draft_model=None, max_draft_len=None):
    """The speculative_config for a high-level ``method``, spelled as ``version`` accepts it.

    Returns None for method ``none``. Validation of the result is left to ``validate``.
    """
    if method not in METHODS:
        raise OptionsError(["method: '%s' is not one of %s" % (method, ", ".join(METHODS))], version)
    if method == "none":
        return None
    if version not in RELEASES:
        raise OptionsError(["trtllm_version: '%s' is not a supported release (supported: %s)"
                            % (version, ", ".join(SUPPORTED_VERSIONS))], version)
    table = RELEASES[version]["speculative"]
    config = {"decoding_type": table["methods"][method]}
    if max_draft_len is not None:
        config["max_draft_len"] = max_draft_len
    if draft_model is not None:
        # speculative_model_dir is accepted by every supported release (an alias on 1.3).
        config["speculative_model_dir"] = draft_model
    return config


def merge(base, override):
    """Deep-merge ``override`` into a copy of ``base`` (mappings merge, other values replace)."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------------------
# Rendering: a small deterministic YAML emitter for the validated value types, so the module
# needs no PyYAML on the target. Strings that YAML would read as something else are quoted.
# ---------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./+@-]*$")
_YAML11_SPECIAL = re.compile(r"^(y|n|yes|no|on|off|true|false|null|~)$", re.IGNORECASE)
_HEADER = "# Rendered by dgx_spark.specdec.trtllm_options for TensorRT-LLM %s. Do not edit: managed by Ansible.\n"


def _scalar(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = "%s.0e%s" % (mantissa, exponent if exponent[0] in "+-" else "+" + exponent)
        return text
    text = str(value)
    if _PLAIN.match(text) and not _YAML11_SPECIAL.match(text):
        return text
    return json.dumps(text)


def _flow(value):
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (_scalar(k), _flow(v)) for k, v in value.items())
    if isinstance(value, list):
        return "[%s]" % ", ".join(_flow(v) for v in value)
    return _scalar(value)


def _block(value, indent):
    lines = []
    pad = " " * indent
    for key, item in value.items():
        if isinstance(item, dict) and item:
            lines.append("%s%s:" % (pad, _scalar(key)))
            lines.extend(_block(item, indent + 2))
        else:
            lines.append("%s%s: %s" % (pad, _scalar(key), _flow(item)))
    return lines


def render(options, version=DEFAULT_VERSION):
    """Render validated options as YAML text (stable: same options, same bytes)."""
    body = "\n".join(_block(options or {}, 0))
    return (_HEADER % version) + (body + "\n" if body else "{}\n")


# ---------------------------------------------------------------------------
# The options file and the command line, as one release expects them
# ---------------------------------------------------------------------------

def build_options(version, method=None, draft_model=None, max_draft_len=None, options=None):
    """The options file's mapping: the ``speculative_config`` generated from ``method`` under ``options``."""
    generated = {}
    if method:
        config = speculative_config(method, version, draft_model=draft_model, max_draft_len=max_draft_len)
        if config is not None:
            generated["speculative_config"] = config
    elif draft_model is not None or max_draft_len is not None:
        raise OptionsError(["method: draft_model and max_draft_len need method (one of %s)" % ", ".join(METHODS)],
                           version)
    return merge(generated, options or {})


def options_file(version, method=None, draft_model=None, max_draft_len=None, options=None):
    """Validate and render the options file: (content, ValidationResult). Raises OptionsError."""
    validated = validate(build_options(version, method, draft_model, max_draft_len, options), version)
    return render(validated.options, version), validated


# trtllm-serve flags that take a value, in the order the DGX Spark playbooks write them.
SERVE_FLAGS = ("ep_size", "max_batch_size", "max_num_tokens", "kv_cache_free_gpu_memory_fraction")


def serve_argv(model, options_path, tp_size, host, port, flags=None, trust_remote_code=False, extra_args=()):
    """``trtllm-serve MODEL --backend pytorch --tp_size N ... --host H --port P`` (flags set to None are left out)."""
    argv = ["trtllm-serve", model, "--backend", "pytorch", "--tp_size", str(tp_size)]
    for flag in SERVE_FLAGS:
        value = (flags or {}).get(flag)
        if value is not None:
            argv += ["--" + flag, str(value)]
    if trust_remote_code:
        argv.append("--trust_remote_code")
    argv += ["--extra_llm_api_options", options_path, "--host", str(host), "--port", str(port)]
    return argv + [str(a) for a in extra_args]


def mpirun_argv(exports, command, mca=None):
    """The multi-node launch of NVIDIA's two-Spark playbook: ``mpirun -x VAR... trtllm-llmapi-launch COMMAND``.

    One rank per node comes from the hostfile and OMPI_MCA_rmaps_ppr_n_pernode=1 in the container's
    environment; rank 0 runs the server, the others serve as its workers. ``mca``: (name, value) pairs
    for this launch only (mpirun passes them on to the daemons it starts on the other nodes).
    """
    argv = ["mpirun"]
    for name, value in mca or ():
        argv += ["--mca", name, str(value)]
    for name in exports:
        argv += ["-x", name]
    return argv + ["trtllm-llmapi-launch"] + list(command)
