"""The stand-in's own judge of the ``--extra_llm_api_options`` YAML (lab test double, not NVIDIA code).

``check(options, version)`` builds the release's PyTorch-backend args model from the parsed YAML
mapping the way that release does and returns ``(normalized options, warnings)``, or raises
``ReleaseError`` whose text reads like the release's own failure (``str(ValidationError)`` for
pydantic errors, ``"AssertionError: ..."``/``"ValueError: ..."``/``"TypeError: ..."`` for the
release's own checks). It is deliberately independent of the collection's option tables
(plugins/module_utils/_trtllm_options.py): nothing is imported from the collection, so a wrong
table there fails a lab test instead of being copied here.

Hand-kept, in our own words (not from the collection's tables), from each release's rendered
``llm_args.py`` source page in the TensorRT-LLM documentation,
https://nvidia.github.io/TensorRT-LLM/<release>/_modules/tensorrt_llm/llmapi/llm_args.html
(the gh-pages branch of https://github.com/NVIDIA/TensorRT-LLM, at the commits below):

==========  ======================================================================================
1.2.0rc1    1.2.0rc1 page @ 648e1eb82428a609e0705dd1da6991fdaea7b3b6
1.2.0rc6    1.2.0rc6.post1 page @ 442c0619a601e59362d64b6fe3d315ba506e6ef6 (no page for rc6 itself)
1.3.0rc12   NO readable page: modelled as 1.3.0rc13 (rc11 @ 828c41115338b7a201bfaa595688a2f53aa5bacb
            and rc13 bracket it; where they differ, rc13 wins here)
1.3.0rc13   1.3.0rc13 page @ 0fa0042256267fa773432bc41e9e6ebc05d433ae
==========  ======================================================================================

How a release reads the file (``update_llm_args_with_extra_dict`` on those pages): a few nested
keys are built on their own first (1.2: ``speculative_config`` through
``DecodingBaseConfig.from_dict``; ``moe_config``/``attention_dp_config``, rc6 also
``nvfp4_gemm_config``/``kv_cache_config``, 1.3 also ``dwdp_config``, by ``Class(**value)``), so their
errors are titled with that class and their key path starts inside it; everything else is
validated by ``TorchLlmArgs`` itself (title ``TorchLlmArgs``, path from the top). The CLI's own
arguments are merged under the YAML by serve.py; only ``model`` and ``backend`` are supplied here.

Modelled: every TorchLlmArgs/BaseLlmArgs field (extra keys forbidden), the nested models
cuda_graph_config, kv_cache_config, moe_config, scheduler_config, attention_dp_config,
nvfp4_gemm_config, torch_compile_config, dwdp_config (1.3) and speculative_config (each decoding
type), with the release's Literal choices, enums, aliases, defaults and the validators that the
pages show. Other nested objects are plain mappings (their shape is not checked). Not modelled
(no body on the pages, host-dependent or irrelevant to a YAML check): dtype/gpus_per_node/parallel
validators, the MoE load-balancer file check, checkpoint_format defaulting, max_concurrency ->
draft_len_schedule translation (needs SpeculativeDecodingMode), capture_num_tokens generation,
SaveState ``validate()`` (whether it runs at start-up is unverified), "Overriding X because it's
specified in FILE" (serve.py knows the file) and the beta/prototype knob warnings (their
``status=`` metadata was not transcribed).
"""

import ast
import contextvars
import copy
import enum
import functools
import math
from pathlib import Path
from typing import Any, ClassVar, Dict, List, Literal, Optional, Set, Union

from pydantic import (AliasChoices, BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt,
                      PositiveInt, PrivateAttr, ValidationError, field_validator, model_validator)

try:  # Python 3.9+
    from typing import Annotated
except ImportError:  # pragma: no cover
    from typing_extensions import Annotated

KNOWN = ("1.2.0rc1", "1.2.0rc6", "1.2.0", "1.2.1", "1.3.0rc12", "1.3.0rc13")

# What each release is read from (see the module docstring).
SOURCES = {
    "1.2.0rc1": "gh-pages 1.2.0rc1/_modules/tensorrt_llm/llmapi/llm_args.html @ 648e1eb8",
    "1.2.0rc6": "gh-pages 1.2.0rc6.post1/_modules/tensorrt_llm/llmapi/llm_args.html @ 442c0619",
    "1.2.0": "gh-pages 1.2.0/_modules/tensorrt_llm/llmapi/llm_args.html @ 7e873e54 (as rc6 but for the draft key and "
             "Eagle's validators)",
    "1.2.1": "gh-pages 1.2.1/_modules/tensorrt_llm/llmapi/llm_args.html @ 58fb435e (the same models as 1.2.0)",
    "1.3.0rc12": "modelled as 1.3.0rc13 (no 1.3.0rc12 page is readable)",
    "1.3.0rc13": "gh-pages 1.3.0rc13/_modules/tensorrt_llm/llmapi/llm_args.html @ 0fa00422",
}

# Stands for the MODEL argument of trtllm-serve (BaseLlmArgs.model is required; the CLI sets it).
_CLI_MODEL = "MODEL"


class ReleaseError(ValueError):
    """The release would refuse to start with these options; the message is what it would print."""


# -- plumbing ---------------------------------------------------------------------------------------

_LOG = contextvars.ContextVar("trtllm_release_warnings", default=None)


def _warn(message):
    """Record a ``logger.warning`` of the release (collected per check() call)."""
    log = _LOG.get()
    if log is not None:
        log.append(message)


def _check(condition, message=None):
    """The release's bare ``assert`` (kept under ``python -O`` too); pydantic reports it as assertion_error."""
    if not condition:
        raise AssertionError(message) if message is not None else AssertionError()


def _named(title):
    """Model config that makes pydantic title errors with the release's class name."""
    return ConfigDict(title=title)


class _Strict(BaseModel):
    """The release's StrictBaseModel: unknown keys are errors; pydantic's default (lax) coercion."""
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


def _mapping(value, owner):
    """``Owner(**value)`` as update_llm_args_with_extra_dict does it: a non-mapping is a TypeError."""
    if not isinstance(value, dict):
        raise TypeError("%s() argument after ** must be a mapping, not %s" % (owner, type(value).__name__))
    return value


def _plain(value):
    """Validated values -> plain YAML/JSON-able Python (enums by value, or name for int enums)."""
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, str) else value.name
    if isinstance(value, Path):
        return str(value)
    return value


# -- enums shared by the releases -------------------------------------------------------------------

class LoadFormat(enum.Enum):
    AUTO = 0
    DUMMY = 1
    VISION_ONLY = 2


class SamplerType(str, enum.Enum):
    TRTLLMSampler = "TRTLLMSampler"
    TorchSampler = "TorchSampler"
    auto = "auto"


class CapacitySchedulerPolicy(str, enum.Enum):
    MAX_UTILIZATION = "MAX_UTILIZATION"
    GUARANTEED_NO_EVICT = "GUARANTEED_NO_EVICT"
    STATIC_BATCH = "STATIC_BATCH"


class ContextChunkingPolicy12(str, enum.Enum):
    FIRST_COME_FIRST_SERVED = "FIRST_COME_FIRST_SERVED"
    EQUAL_PROGRESS = "EQUAL_PROGRESS"


class ContextChunkingPolicy13(str, enum.Enum):
    FIRST_COME_FIRST_SERVED = "FIRST_COME_FIRST_SERVED"
    EQUAL_PROGRESS = "EQUAL_PROGRESS"
    FORCE_CHUNK = "FORCE_CHUNK"


class WaitingQueuePolicy(str, enum.Enum):
    FCFS = "fcfs"
    PRIORITY = "priority"


AllreduceStrategy = Literal["AUTO", "NCCL", "UB", "MINLATENCY", "ONESHOT", "TWOSHOT", "LOWPRECISION", "MNNVL",
                            "NCCL_SYMMETRIC"]

# Names kv_cache_config.dtype accepts on 1.3 besides auto/fp8/nvfp4: the keys of
# tensorrt_llm._utils._str_to_torch_dtype_dict as its indexed copies spell them (the exact 1.3 copy
# was not read: UNVERIFIED).
_TORCH_DTYPE_NAMES = ("bfloat16", "float16", "float32", "int64", "int32", "int8", "bool", "fp8")


def _to_load_format(value):
    """TorchLlmArgs' load_format before-validator: the upper-cased name must be a LoadFormat member."""
    if isinstance(value, LoadFormat):
        return value
    name = value.upper()  # a non-string crashes here in the release too (AttributeError)
    if name not in LoadFormat.__members__:
        raise ValueError("Invalid LoadFormat: %s" % value)
    return LoadFormat[name]


def _cuda_graph_sizes_12(max_batch_size, enable_padding):
    """CUDA graph batch sizes 1.2 generates for a max batch size (same list as the release's generator)."""
    if enable_padding:
        sizes = [1, 2, 4] + list(range(8, 129, 8))
    else:
        sizes = list(range(1, 32)) + [32, 64, 128]
    sizes += [2 ** i for i in range(8, math.ceil(math.log(max_batch_size, 2)))]
    sizes = sorted(size for size in sizes if size <= max_batch_size)
    if sizes[-1] != max_batch_size:
        sizes.append(max_batch_size)
    return sizes


def _cuda_graph_sizes_13(max_batch_size, enable_padding):
    """1.3's generator: with padding it continues in steps of 64 past 128 instead of powers of two."""
    if enable_padding:
        sizes = [1, 2, 4] + list(range(8, 129, 8))
        while sizes[-1] + 64 <= max_batch_size:
            sizes.append(sizes[-1] + 64)
    else:
        sizes = list(range(1, 32)) + [32, 64, 128]
        sizes += [2 ** i for i in range(8, math.ceil(math.log(max_batch_size, 2)))]
    sizes = sorted(size for size in sizes if size <= max_batch_size)
    if not sizes or sizes[-1] != max_batch_size:
        sizes.append(max_batch_size)
    return sizes


def _attention_dp_rule(config):
    """Iteration counts only matter (>= 0) when enable_balance is on."""
    if config.enable_balance:
        if config.batching_wait_iters < 0:
            raise ValueError("attention_dp_config.batching_wait_iters must be greater or equal to 0 when "
                             "enable_balance is true")
        if config.timeout_iters < 0:
            raise ValueError("attention_dp_config.timeout_iters must be greater or equal to 0 when "
                             "enable_balance is true")


def _max_attention_window_rule(value):
    if value is None:
        return value
    if not isinstance(value, list) or not value:
        raise ValueError("kv_cache_config.max_attention_window must be a non-empty list of positive integers")
    for item in value:
        if not isinstance(item, int):
            raise ValueError("kv_cache_config.max_attention_window must contain only integers")
        if item <= 0:
            raise ValueError("kv_cache_config.max_attention_window values must be positive")
    return value


def _eagle_choices_depth(config):
    """Sort and de-duplicate eagle_choices, check every choice's parent is present; return the depth."""
    unique = {tuple(choice) for choice in config.eagle_choices}
    config.eagle_choices = sorted((list(choice) for choice in unique), key=lambda c: (len(c), c))
    for choice in config.eagle_choices:
        if len(choice) > 1:
            _check(choice[:-1] in config.eagle_choices, "Error: choice %s is not connected" % choice)
    return max(len(choice) for choice in config.eagle_choices)


def _parse_eagle_choices(value):
    if value is not None and not isinstance(value, list):
        if isinstance(value, str):
            return ast.literal_eval(value.replace(" ", ""))
        raise ValueError("Wrong eagle choices type. Eagle choices should be a List[List[int]] or a string like "
                         "[[0], [1], [2], [0, 0], [0, 1]].")
    return value


class _Release:
    """One release: its TorchLlmArgs model and how update_llm_args_with_extra_dict feeds it."""

    def __init__(self, version, args, prebuilt, spec_from_dict=None, models=None):
        self.version = version
        self.args = args                      # the TorchLlmArgs model
        self.prebuilt = prebuilt              # {key: model, or class name if unmodelled}: Class(**value) first
        self.spec_from_dict = spec_from_dict  # 1.2: DecodingBaseConfig.from_dict; 1.3: None (a pydantic union)
        self.models = models or {}            # release class name -> model (for tests and readers)

    def build(self, options, backend):
        data = dict(options)
        if self.version.startswith("1.3.") and "hf_revision" in data:
            data.setdefault("revision", data.pop("hf_revision"))
        for key, model in self.prebuilt.items():
            if key not in data:
                continue
            if key == "speculative_config":
                data[key] = self.spec_from_dict(data[key])
            elif isinstance(model, str):
                _mapping(data[key], model)
            else:
                data[key] = model(**_mapping(data[key], model.model_config["title"]))
        kwargs = {"model": _CLI_MODEL, "backend": backend}
        kwargs.update(data)
        return self.args(**kwargs)

    def dump(self, args, options):
        out = args.model_dump(exclude_unset=True, by_alias=True, warnings=False)
        for key in ("model", "backend"):
            if key not in options:
                out.pop(key, None)
        spec = args.speculative_config
        if spec is not None and isinstance(out.get("speculative_config"), dict):
            if self.spec_from_dict is not None:
                tag = options["speculative_config"]["decoding_type"]  # 1.2: the from_dict key the user wrote
            else:
                tag = spec.decoding_type
            body = {k: v for k, v in out["speculative_config"].items() if k != "decoding_type"}
            out["speculative_config"] = dict({"decoding_type": tag}, **body)
        return _plain(out)


# ===================================================================================================
# 1.2.0rc1 and 1.2.0rc6
# ===================================================================================================

@functools.lru_cache(maxsize=None)
def _release_12(rc6, final=None):
    """Models of 1.2.0rc1 (rc6=False) or of 1.2.0rc6 (rc6=True, as on the 1.2.0rc6.post1 page).

    ``final`` ("1.2.0" or "1.2.1", with rc6=True): rc6's models with the changes of the final releases that
    matter to an options file: the draft path is ``speculative_model`` (``speculative_model_dir`` an alias),
    EagleDecodingConfig is validated by pydantic (validate_eagle_config, no unvalidated ``__init__``) and has
    ``eagle3_model_arch``, TorchLlmArgs has ``custom_tokenizer`` and ``max_stats_len``.
    """

    class CudaGraphConfig(_Strict):
        model_config = _named("CudaGraphConfig")
        batch_sizes: Optional[List[int]] = None
        max_batch_size: int = 0
        enable_padding: bool = False

        @field_validator("max_batch_size")
        @classmethod
        def _non_negative(cls, value):
            if value < 0:
                raise ValueError("cuda_graph_config.max_batch_size must be non-negative")
            return value

    class MoeConfig(_Strict):
        model_config = _named("MoeConfig")
        backend: Literal["CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM", "VANILLA", "TRITON"] = "CUTLASS"
        max_num_tokens: Optional[int] = None
        load_balancer: Any = None  # a mapping or the path of a YAML file (the file is not checked here)
        disable_finalize_fusion: bool = False
        use_low_precision_moe_combine: bool = False

    class AttentionDpConfig(_Strict):
        model_config = _named("AttentionDpConfig")
        enable_balance: bool = False
        timeout_iters: int = 50
        batching_wait_iters: int = 10

    class Nvfp4GemmConfig(_Strict):  # rc6 only; its validate_allowed_backends body was not read
        model_config = _named("Nvfp4GemmConfig")
        allowed_backends: List[str] = Field(default_factory=lambda: ["cutlass", "cublaslt", "cuda_core"])

    class DynamicBatchConfig(_Strict):
        model_config = _named("DynamicBatchConfig")
        enable_batch_size_tuning: bool          # all three are required on 1.2
        enable_max_num_tokens_tuning: bool
        dynamic_batch_moving_average_window: int

    class SchedulerConfig(_Strict):
        model_config = _named("SchedulerConfig")
        capacity_scheduler_policy: CapacitySchedulerPolicy = CapacitySchedulerPolicy.GUARANTEED_NO_EVICT
        context_chunking_policy: Optional[ContextChunkingPolicy12] = None
        dynamic_batch_config: Optional[DynamicBatchConfig] = None

    class KvCacheConfig(_Strict):
        model_config = _named("KvCacheConfig")
        enable_block_reuse: bool = True
        max_tokens: Optional[int] = None
        max_attention_window: Optional[List[int]] = None
        sink_token_length: Optional[int] = None
        free_gpu_memory_fraction: Optional[float] = 0.9 if rc6 else None
        host_cache_size: Optional[int] = None
        onboard_blocks: bool = True
        cross_kv_cache_fraction: Optional[float] = None
        secondary_offload_min_priority: Optional[int] = None
        event_buffer_max_size: int = 0
        attention_dp_events_gather_period_ms: int = 5
        enable_partial_reuse: bool = True
        copy_on_partial_reuse: bool = True
        use_uvm: bool = False
        max_gpu_total_bytes: int = 0
        dtype: str = "auto"  # any string on 1.2: the dtype validator only arrives in 1.3
        mamba_ssm_cache_dtype: Literal["auto", "float16", "bfloat16", "float32"] = "auto"
        tokens_per_block: int = 32

        if rc6:  # rc1 has no range check on the fraction
            @field_validator("free_gpu_memory_fraction")
            @classmethod
            def _fraction(cls, value):
                if not 0 <= value <= 1:  # None crashes here in the release too (TypeError)
                    raise ValueError("kv_cache_config.free_gpu_memory_fraction must be a float between 0 and 1")
                return value

        @field_validator("max_gpu_total_bytes")
        @classmethod
        def _total_bytes(cls, value):
            if value < 0:
                raise ValueError("kv_cache_config.max_gpu_total_bytes must be non-negative")
            return value

        @field_validator("max_attention_window")
        @classmethod
        def _window(cls, value):
            return _max_attention_window_rule(value)

    class TorchCompileConfig(_Strict):  # its two field validators have no body on the pages
        model_config = _named("TorchCompileConfig")
        enable_fullgraph: bool = True
        enable_inductor: bool = False
        enable_piecewise_cuda_graph: bool = False
        capture_num_tokens: Optional[List[int]] = None
        enable_userbuffers: bool = True
        max_num_streams: int = 1

    # -- speculative decoding: plain classes picked by DecodingBaseConfig.from_dict ------------------

    class DecodingBaseConfig(_Strict):
        model_config = _named("DecodingBaseConfig")
        decoding_type: ClassVar[str] = ""
        # rc6: after validation these classes set max_total_draft_tokens = max_draft_len (linear tree)
        sets_linear_total: ClassVar[bool] = False

        max_draft_len: Optional[int] = None
        if rc6:
            max_total_draft_tokens: Optional[int] = None
        if final:
            speculative_model: Optional[Union[str, Path]] = Field(
                default=None, validation_alias=AliasChoices("speculative_model", "speculative_model_dir"))
        else:
            speculative_model_dir: Optional[Union[str, Path]] = None  # the only name on 1.2's rcs
        max_concurrency: Optional[int] = None
        if rc6:
            draft_len_schedule: Optional[Dict[int, int]] = None  # after max_draft_len: its rule reads it
        load_format: Optional[str] = None
        acceptance_window: Optional[int] = None
        acceptance_length_threshold: Optional[float] = None
        if rc6:
            allow_advanced_sampling: bool = False

        def __init__(self, **data):
            super().__init__(**data)
            if self.sets_linear_total:
                self.max_total_draft_tokens = self.max_draft_len

        @field_validator("acceptance_window")
        @classmethod
        def _window(cls, value):
            if value is not None and value < 0:
                raise ValueError("acceptance_window must be >= 0 (0 disables), got %s" % value)
            return value

        @field_validator("acceptance_length_threshold")
        @classmethod
        def _threshold(cls, value):
            if value is not None and value < 0:
                raise ValueError("acceptance_length_threshold must be >= 0, got %s" % value)
            return value

        if rc6:
            @field_validator("draft_len_schedule")
            @classmethod
            def _schedule(cls, schedule, info):
                """rc6: keys >= 1, values >= 0, key 1 present and == max_draft_len, no value above it."""
                if schedule is None:
                    return schedule
                for batch_size, draft_len in schedule.items():
                    if batch_size < 1:
                        raise ValueError("draft_len_schedule: batch size threshold must be >= 1, got %s"
                                         % batch_size)
                    if draft_len < 0:
                        raise ValueError("draft_len_schedule: draft length must be >= 0, got %s" % draft_len)
                if 1 not in schedule:
                    raise ValueError("draft_len_schedule must include batch_size=1. All systems can have "
                                     "batch_size=1. Add {1: <max_draft_len>} to your schedule.")
                max_draft_len = info.data.get("max_draft_len")
                if max_draft_len is not None:
                    if schedule[1] != max_draft_len:
                        raise ValueError(
                            "draft_len_schedule[1] must equal max_draft_len for consistency. Got schedule[1]=%s, "
                            "but max_draft_len=%s. batch_size=1 should use maximum draft length."
                            % (schedule[1], max_draft_len))
                    for batch_size, draft_len in schedule.items():
                        if draft_len > max_draft_len:
                            raise ValueError(
                                "draft_len_schedule: all draft lengths must be <= max_draft_len. Got draft_len=%s "
                                "for batch_size=%s, but max_draft_len=%s." % (draft_len, batch_size, max_draft_len))
                return dict(sorted(schedule.items()))

        @classmethod
        def from_dict(cls, data):
            return cls(**data)

        def supports_backend(self, backend):
            return True

    class MedusaDecodingConfig(DecodingBaseConfig):
        model_config = _named("MedusaDecodingConfig")
        decoding_type: ClassVar[str] = "Medusa"
        sets_linear_total: ClassVar[bool] = rc6
        medusa_choices: Optional[List[List[int]]] = None
        num_medusa_heads: Optional[int] = None

        def supports_backend(self, backend):
            return backend not in ("pytorch", "_autodeploy")

    class EagleDecodingConfig(DecodingBaseConfig):
        model_config = _named("EagleDecodingConfig")
        decoding_type: ClassVar[str] = "Eagle"
        eagle_choices: Optional[List[List[int]]] = None
        greedy_sampling: Optional[bool] = True
        posterior_threshold: Optional[float] = None
        use_dynamic_tree: Optional[bool] = False
        dynamic_tree_max_topK: Optional[int] = None
        if not rc6:
            max_total_draft_tokens: Optional[int] = None  # an Eagle field on rc1, a base field on rc6
        num_eagle_layers: Optional[int] = None
        max_non_leaves_per_layer: Optional[int] = None
        eagle3_one_model: Optional[bool] = True
        eagle3_layers_to_capture: Optional[Set[int]] = None
        if final:
            eagle3_model_arch: str = "llama3"

        def __init__(self, **kwargs):
            if final:
                # 1.2.0/1.2.1: validate_eagle_choices (mode before) and validate_eagle_config (after): the
                # values are validated and coerced like any model's, then the tree rules below apply.
                if kwargs.get("eagle_choices") is not None:
                    kwargs["eagle_choices"] = _parse_eagle_choices(kwargs["eagle_choices"])
                super().__init__(**kwargs)
                _check(self.max_draft_len is not None, "max_draft_len is required for Eagle")
                self.num_eagle_layers = self.max_draft_len
                self.max_total_draft_tokens = self.max_draft_len
                if self.eagle3_model_arch == "mistral_large3" and self.eagle3_layers_to_capture is None:
                    self.eagle3_layers_to_capture = {-1}
            else:
                # 1.2's rcs validate nothing here: they start from the defaults and set each key as a plain
                # attribute, so max_draft_len: "4" stays the string "4" (and fails later on "> 0").
                super().__init__()
                for name, value in kwargs.items():
                    if name not in type(self).model_fields:
                        raise ValueError('"EagleDecodingConfig" object has no field "%s"' % name)
                    if name == "max_draft_len":
                        self.num_eagle_layers = value
                        self.max_total_draft_tokens = value  # linear tree: as many nodes as layers
                    if name == "eagle_choices" and value is not None:
                        _warn("NOTE: The Draft token tree is still under development, PLEASE DO NOT USE IT !!!")
                        value = _parse_eagle_choices(value)
                    setattr(self, name, value)
            _check(self.max_draft_len is not None, "max_draft_len is required for Eagle")
            if self.eagle_choices is not None:  # static tree: the choices decide the depth
                _check(not self.use_dynamic_tree, "If eagle_choices is provided, use_dynamic_tree need to be False")
                depth = _eagle_choices_depth(self)
                if depth != self.num_eagle_layers:
                    _warn("Base on the input choices, reset the num_eagle_layers(max_draft_len) from %s to %s"
                          % (self.num_eagle_layers, depth))
                    self.num_eagle_layers = depth
                    self.max_draft_len = depth
                self.max_total_draft_tokens = len(self.eagle_choices)
            if self.use_dynamic_tree:  # 1.2: only "provided and > 0", no upper bound on the total
                _check(self.eagle_choices is None, "If use_dynamic_tree is True, eagle_choices should be None")
                _check(self.max_draft_len is not None and self.max_draft_len > 0,
                       "max_draft_len should be provided, which indicates the number of drafter layers")
                _check(self.dynamic_tree_max_topK is not None and self.dynamic_tree_max_topK > 0,
                       "dynamic_tree_max_topK should be provided, which indicates the number of nodes to expand "
                       "each time")
                _check(self.max_total_draft_tokens is not None and self.max_total_draft_tokens > 0,
                       "max_total_draft_tokens should be provided, which indicates the total nodes of the final "
                       "draft tree. (exclude the root node)")

    class SaveHiddenStatesDecodingConfig(DecodingBaseConfig):
        model_config = _named("SaveHiddenStatesDecodingConfig")
        decoding_type: ClassVar[str] = "SaveState"
        output_directory: str
        write_interval: int = 20
        file_prefix: str = "data"
        eagle3_layers_to_capture: Optional[Set[int]] = None
        # declared with init=False in the release, which a pydantic model ignores: still settable
        max_total_draft_tokens: Optional[int] = 1
        eagle_choices: Optional[List[List[int]]] = None
        _last_hidden_in_save: bool = PrivateAttr(True)

        def model_post_init(self, context):
            self._last_hidden_in_save = self.eagle3_layers_to_capture is not None and \
                -1 in self.eagle3_layers_to_capture
            if self.eagle3_layers_to_capture is not None:
                self.eagle3_layers_to_capture.add(-1)  # the last hidden state is always captured

    class UserProvidedDecodingConfig(DecodingBaseConfig):
        model_config = _named("UserProvidedDecodingConfig")
        decoding_type: ClassVar[str] = "User_Provided"
        sets_linear_total: ClassVar[bool] = rc6
        drafter: Any  # required (a Drafter object; a YAML file cannot really provide one)
        resource_manager: Any = None

    class NGramDecodingConfig(DecodingBaseConfig):
        model_config = _named("NGramDecodingConfig")
        decoding_type: ClassVar[str] = "NGram"
        sets_linear_total: ClassVar[bool] = rc6
        max_matching_ngram_size: int = 0  # 0 by default, refused later by TorchLlmArgs (> 0)
        is_keep_all: bool = True
        is_use_oldest: bool = True
        is_public_pool: bool = True

        def supports_backend(self, backend):
            return backend == "pytorch"

    class DraftTargetDecodingConfig(DecodingBaseConfig):
        model_config = _named("DraftTargetDecodingConfig")
        decoding_type: ClassVar[str] = "Draft_Target"
        sets_linear_total: ClassVar[bool] = rc6

        def supports_backend(self, backend):
            return backend in (("pytorch", "_autodeploy") if rc6 else ("pytorch",))

    class MTPDecodingConfig(DecodingBaseConfig):
        model_config = _named("MTPDecodingConfig")
        decoding_type: ClassVar[str] = "MTP"
        num_nextn_predict_layers: int = 1
        use_relaxed_acceptance_for_thinking: bool = False
        relaxed_topk: int = 1
        relaxed_delta: float = 0.0
        use_mtp_vanilla: bool = False
        mtp_eagle_one_model: bool = True
        num_nextn_predict_layers_from_model_config: int = 1  # a plain field on the 1.2 pages
        if rc6:
            begin_thinking_phase_token: int = 128798
            end_thinking_phase_token: int = 128799
        else:
            BEGIN_THINKING_PHASE_TOKEN: int = 128798
            END_THINKING_PHASE_TOKEN: int = 128799

        @classmethod
        def from_dict(cls, data):
            config = cls(**data)
            # max_draft_len is whatever num_nextn_predict_layers says; a max_draft_len in the file is overwritten
            config.max_draft_len = config.num_nextn_predict_layers
            if rc6:
                config.max_total_draft_tokens = config.num_nextn_predict_layers
            return config

        def supports_backend(self, backend):
            return backend == "pytorch"

    class AutoDecodingConfig(DecodingBaseConfig):
        model_config = _named("AutoDecodingConfig")
        decoding_type: ClassVar[str] = "AUTO"
        sets_linear_total: ClassVar[bool] = rc6

        def supports_backend(self, backend):
            return backend == "pytorch"

    class LookaheadDecodingConfig(DecodingBaseConfig):
        model_config = _named("LookaheadDecodingConfig")
        decoding_type: ClassVar[str] = "Lookahead"
        sets_linear_total: ClassVar[bool] = rc6
        # The defaults come from the C++ binding (not readable); these are placeholders, never reported.
        max_window_size: int = 4
        max_ngram_size: int = 3
        max_verification_set_size: int = 4

        @field_validator("max_window_size", "max_ngram_size", "max_verification_set_size")
        @classmethod
        def _positive(cls, value):
            if value <= 0:
                raise ValueError("Value must be positive, got %s" % value)
            return value

        def supports_backend(self, backend):
            return backend not in ("pytorch", "_autodeploy")

    # DecodingBaseConfig.from_dict's table: note DraftTarget/UserProvided without the underscore here.
    decoding_types = {
        "MTP": MTPDecodingConfig,
        "Medusa": MedusaDecodingConfig,
        "Eagle": EagleDecodingConfig,
        "Lookahead": LookaheadDecodingConfig,
        "NGram": NGramDecodingConfig,
        "DraftTarget": DraftTargetDecodingConfig,
        "SaveState": SaveHiddenStatesDecodingConfig,
        "UserProvided": UserProvidedDecodingConfig,
        "AUTO": AutoDecodingConfig,
    }

    def spec_from_dict(data):
        tag = data.get("decoding_type")  # a non-mapping fails right here in the release (AttributeError)
        config_class = decoding_types.get(tag)
        if config_class is None:
            raise ValueError("Invalid decoding type: %s" % tag)
        data = {k: v for k, v in data.items() if k != "decoding_type"}
        return config_class.from_dict(data)

    SpeculativeConfig = Optional[Union[DraftTargetDecodingConfig, EagleDecodingConfig, LookaheadDecodingConfig,
                                       MedusaDecodingConfig, MTPDecodingConfig, NGramDecodingConfig,
                                       UserProvidedDecodingConfig, SaveHiddenStatesDecodingConfig,
                                       AutoDecodingConfig]]

    # -- the args -------------------------------------------------------------------------------------

    class TorchLlmArgs(_Strict):
        model_config = ConfigDict(title="TorchLlmArgs", arbitrary_types_allowed=True)

        # BaseLlmArgs
        model: Union[str, Path]
        tokenizer: Optional[Union[str, Path]] = None
        tokenizer_mode: Literal["auto", "slow"] = "auto"
        skip_tokenizer_init: bool = False
        trust_remote_code: bool = False
        tensor_parallel_size: int = 1
        dtype: str = "auto"
        revision: Optional[str] = None
        tokenizer_revision: Optional[str] = None
        pipeline_parallel_size: int = 1
        context_parallel_size: int = 1
        gpus_per_node: Optional[int] = None
        moe_cluster_parallel_size: Optional[int] = None
        moe_tensor_parallel_size: Optional[int] = None
        moe_expert_parallel_size: Optional[int] = None
        enable_attention_dp: bool = False
        enable_lm_head_tp_in_adp: bool = False
        if rc6:
            pp_partition: Optional[List[int]] = None
        cp_config: Optional[dict] = Field(default_factory=dict)
        fail_fast_on_attention_window_too_large: bool = False
        enable_lora: bool = False
        lora_config: Optional[Dict[str, Any]] = None
        kv_cache_config: KvCacheConfig = Field(default_factory=KvCacheConfig)
        enable_chunked_prefill: bool = False
        guided_decoding_backend: Optional[Literal["xgrammar", "llguidance"]] = None
        batched_logits_processor: Any = None
        iter_stats_max_iterations: Optional[int] = None
        request_stats_max_iterations: Optional[int] = None
        peft_cache_config: Optional[Dict[str, Any]] = None
        scheduler_config: SchedulerConfig = Field(default_factory=SchedulerConfig)
        cache_transceiver_config: Optional[Dict[str, Any]] = None
        sparse_attention_config: Optional[Dict[str, Any]] = None
        speculative_config: SpeculativeConfig = None
        max_batch_size: Optional[int] = None
        max_input_len: Optional[int] = None
        max_seq_len: Optional[int] = None
        max_beam_width: Optional[int] = None
        max_num_tokens: Optional[int] = 8192
        gather_generation_logits: bool = False
        num_postprocess_workers: int = 0
        postprocess_tokenizer_dir: Optional[str] = None
        reasoning_parser: Optional[str] = None
        decoding_config: Any = None  # deprecated in favour of speculative_config
        mpi_session: Any = Field(default=None, alias="_mpi_session")
        if rc6:
            otlp_traces_endpoint: Optional[str] = None
        backend: Optional[str] = Field(default=None, validate_default=True)
        return_perf_metrics: bool = False
        orchestrator_type: Optional[Literal["rpc", "ray"]] = None
        if rc6:
            env_overrides: Optional[Dict[str, str]] = None

        # TorchLlmArgs
        if not rc6:
            build_config: Any = None  # rc1 only; from rc6 on a TrtLlmArgs field
        garbage_collection_gen0_threshold: int = 20000
        cuda_graph_config: Optional[CudaGraphConfig] = Field(default_factory=CudaGraphConfig)
        attention_dp_config: Optional[AttentionDpConfig] = None
        disable_overlap_scheduler: bool = False
        moe_config: MoeConfig = Field(default_factory=MoeConfig)
        if rc6:
            nvfp4_gemm_config: Nvfp4GemmConfig = Field(default_factory=Nvfp4GemmConfig)
        attn_backend: str = "TRTLLM"
        sampler_type: Union[str, SamplerType] = SamplerType.auto  # any string passes (str is in the union)
        if rc6:
            sampler_force_async_worker: bool = False
        enable_iter_perf_stats: bool = False
        enable_iter_req_stats: bool = False
        print_iter_log: bool = False
        if final:
            custom_tokenizer: Optional[str] = None
            max_stats_len: int = 1000
        perf_metrics_max_requests: int = 0
        batch_wait_timeout_ms: float = 0
        batch_wait_timeout_iters: int = 0
        batch_wait_max_tokens_ratio: float = 0
        torch_compile_config: Optional[TorchCompileConfig] = None
        enable_autotuner: bool = True
        enable_layerwise_nvtx_marker: bool = False
        load_format: Union[str, LoadFormat] = LoadFormat.AUTO
        enable_min_latency: bool = False
        stream_interval: int = 1
        force_dynamic_quantization: bool = False
        allreduce_strategy: Optional[AllreduceStrategy] = "AUTO"
        checkpoint_loader: Any = None
        checkpoint_format: Optional[str] = None
        kv_connector_config: Optional[Dict[str, Any]] = None
        mm_encoder_only: bool = False
        if rc6:
            ray_worker_extension_cls: Optional[str] = None
            ray_placement_config: Optional[Dict[str, Any]] = None
            enable_sleep: bool = False
            disable_flashinfer_sampling: bool = False

        @field_validator("backend", mode="before")
        @classmethod
        def _backend(cls, value):
            return "pytorch" if value is None else value

        @field_validator("load_format", mode="before")
        @classmethod
        def _load_format(cls, value):
            return _to_load_format(value)

        if rc6:
            @field_validator("env_overrides", mode="before")
            @classmethod
            def _env_overrides(cls, value):
                # coerce_env_overrides_to_str: body not read; its name says values become strings
                if isinstance(value, dict):
                    return {key: str(item) for key, item in value.items()}
                return value

        @model_validator(mode="after")
        def _speculative(self):
            spec = self.speculative_config
            if not spec:
                return self
            if not spec.supports_backend(self.backend):
                raise ValueError("Speculation type %s does not support backend %s" % (spec.decoding_type, self.backend))
            if isinstance(spec, EagleDecodingConfig):
                _check(spec.max_draft_len > 0)  # "4" (never validated) fails here with a TypeError
                if final:
                    _check(spec.speculative_model is not None, "EAGLE3 draft model must be specified.")
                else:
                    _check(spec.speculative_model_dir is not None, "Path to EAGLE3 weights must be specified.")
            elif isinstance(spec, NGramDecodingConfig):
                if not rc6:
                    _check(self.backend in ("pytorch", "_autodeploy"))
                _check(spec.max_draft_len > 0 and spec.max_matching_ngram_size > 0)
            elif isinstance(spec, DraftTargetDecodingConfig):
                if not rc6:
                    _check(self.backend == "pytorch")
                _check(spec.max_draft_len > 0)
                if final:
                    _check(spec.speculative_model is not None, "Draft model must be specified.")
                else:
                    _check(spec.speculative_model_dir is not None, "Path to draft model must be specified.")
            elif isinstance(spec, MTPDecodingConfig):
                _check(spec.num_nextn_predict_layers > 0)
                spec.max_draft_len = spec.num_nextn_predict_layers
            elif isinstance(spec, (UserProvidedDecodingConfig, AutoDecodingConfig)):
                if not rc6:
                    _check(self.backend in ("pytorch", "_autodeploy"))
            elif isinstance(spec, SaveHiddenStatesDecodingConfig):
                _check(self.backend == "pytorch")
                _warn("SaveHiddenStatesDecodingConfig is active, setting max_batch_size to 1, disabling overlap "
                      "scheduler, and setting cuda_graph_config to None")
                self.max_batch_size = 1
                self.disable_overlap_scheduler = True
                self.cuda_graph_config = None
                spec.max_draft_len = 1
            return self

        @model_validator(mode="after")
        def _stream_interval(self):
            if self.stream_interval <= 0:
                raise ValueError("stream_interval must be positive, got %s" % self.stream_interval)
            return self

        @model_validator(mode="after")
        def _cuda_graph(self):
            # 1.2 rule as both 1.2 pages show it (rc1 is treated like rc6, and the two pages agree): with
            # both keys set, the sorted batch_sizes must be exactly the list the release generates for
            # max_batch_size, not just end there.
            config = self.cuda_graph_config
            if config is None:
                return self
            if config.batch_sizes:
                config.batch_sizes = sorted(config.batch_sizes)
                if config.max_batch_size != 0:
                    if config.batch_sizes != _cuda_graph_sizes_12(config.max_batch_size, config.enable_padding):
                        raise ValueError(
                            "Please don't set both cuda_graph_config.batch_sizes and cuda_graph_config.max_batch_size.\n"
                            "cuda_graph_config.batch_sizes: %s, cuda_graph_config.max_batch_size: %s"
                            % (config.batch_sizes, config.max_batch_size))
                else:
                    config.max_batch_size = max(config.batch_sizes)
            else:
                max_batch_size = config.max_batch_size or 128
                config.batch_sizes = _cuda_graph_sizes_12(max_batch_size, config.enable_padding)
                config.max_batch_size = max_batch_size
            return self

        @model_validator(mode="after")
        def _attention_dp(self):
            if self.attention_dp_config is not None:
                _attention_dp_rule(self.attention_dp_config)
            return self

        @model_validator(mode="after")
        def _batch_wait(self):
            # rc6 bodies (rc1 has validators of the same names; assumed identical)
            if self.batch_wait_timeout_ms < 0:
                raise ValueError("batch_wait_timeout_ms must be greater than 0")
            if self.batch_wait_timeout_iters < 0:
                raise ValueError("batch_wait_timeout_iters must be >= 0, got %s" % self.batch_wait_timeout_iters)
            if not 0 <= self.batch_wait_max_tokens_ratio <= 1:
                raise ValueError("batch_wait_max_tokens_ratio must be in range [0, 1], got %s"
                                 % self.batch_wait_max_tokens_ratio)
            return self

        if rc6:
            @model_validator(mode="after")
            def _ray(self):
                if self.ray_worker_extension_cls is not None and self.orchestrator_type != "ray":
                    raise ValueError("ray_worker_extension_cls is only supported with orchestrator_type='ray'")
                if self.ray_placement_config is not None and self.orchestrator_type != "ray":
                    raise ValueError("ray_placement_config is only supported with orchestrator_type='ray'")
                return self

    # update_llm_args_with_extra_dict's field_mapping, in its order, for the keys modelled here
    # (a name: only the "must be a mapping" part; that class itself is not modelled).
    if rc6:
        prebuilt = {"speculative_config": "DecodingBaseConfig", "lora_config": "LoraConfig", "moe_config": MoeConfig,
                    "nvfp4_gemm_config": Nvfp4GemmConfig, "attention_dp_config": AttentionDpConfig,
                    "kv_cache_config": KvCacheConfig}
    else:
        prebuilt = {"speculative_config": "DecodingBaseConfig", "lora_config": "LoraConfig", "moe_config": MoeConfig,
                    "attention_dp_config": AttentionDpConfig}
    models = {cls.model_config["title"]: cls for cls in (
        CudaGraphConfig, MoeConfig, AttentionDpConfig, DynamicBatchConfig, SchedulerConfig, KvCacheConfig,
        TorchCompileConfig, DecodingBaseConfig, TorchLlmArgs, *decoding_types.values())}
    if rc6:
        models["Nvfp4GemmConfig"] = Nvfp4GemmConfig
    return _Release(final or ("1.2.0rc6" if rc6 else "1.2.0rc1"), TorchLlmArgs, prebuilt, spec_from_dict, models)


# ===================================================================================================
# 1.3.0rc13 (and 1.3.0rc12, which has no readable page)
# ===================================================================================================

@functools.lru_cache(maxsize=None)
def _release_13():
    """Models of 1.3.0rc13, also used for 1.3.0rc12."""

    class CudaGraphConfig(_Strict):
        model_config = _named("CudaGraphConfig")
        batch_sizes: Optional[List[int]] = None
        max_batch_size: NonNegativeInt = 0
        enable_padding: bool = False

        @model_validator(mode="after")
        def _sizes(self):
            """Both set: max_batch_size must be max(batch_sizes) (0 means "take it from the list")."""
            if self.batch_sizes:
                self.batch_sizes = sorted(self.batch_sizes)
                largest = max(self.batch_sizes)
                if self.max_batch_size == 0:
                    self.max_batch_size = largest
                elif self.max_batch_size != largest:
                    raise ValueError(
                        "CudaGraphConfig.max_batch_size is incompatible with CudaGraphConfig.batch_sizes. When both "
                        "are provided, max_batch_size must equal max(batch_sizes).\n"
                        "CudaGraphConfig.batch_sizes: %s, max(batch_sizes): %s, CudaGraphConfig.max_batch_size: %s"
                        % (self.batch_sizes, largest, self.max_batch_size))
            else:
                max_batch_size = self.max_batch_size or 128
                self.batch_sizes = _cuda_graph_sizes_13(max_batch_size, self.enable_padding)
                self.max_batch_size = max_batch_size
            return self

    class MoeConfig(_Strict):
        model_config = _named("MoeConfig")
        backend: Literal["AUTO", "CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM", "DENSEGEMM", "VANILLA",
                         "TRITON"] = "AUTO"
        max_num_tokens: Optional[int] = None
        load_balancer: Any = None
        disable_finalize_fusion: bool = False
        use_low_precision_moe_combine: bool = False

    class Nvfp4GemmConfig(_Strict):
        model_config = _named("Nvfp4GemmConfig")
        allowed_backends: List[Literal["cutlass", "cublaslt", "cutedsl", "cuda_core"]] = Field(
            default_factory=lambda: ["cutlass", "cublaslt", "cuda_core"], min_length=1)

    class AttentionDpConfig(_Strict):
        model_config = _named("AttentionDpConfig")
        enable_balance: bool = False
        timeout_iters: int = 50
        batching_wait_iters: int = 10
        enable_kv_cache_aware_routing: bool = False
        kv_cache_routing_load_balance_weight: float = 1.0

        @model_validator(mode="after")
        def _balance(self):
            # body not on the page; modelled as 1.2's rule (the 1.2 pages) moved into the class
            _attention_dp_rule(self)
            return self

    class DwdpConfig(_Strict):
        model_config = _named("DwdpConfig")
        dwdp_size: int = 1
        num_groups: int = 1
        num_experts_per_worker: int = 0
        num_prefetch_experts: int = 0
        contention_opt: bool = False  # rc13 (not in rc11)

    class DynamicBatchConfig(_Strict):
        model_config = _named("DynamicBatchConfig")
        enable_batch_size_tuning: bool = True
        enable_max_num_tokens_tuning: bool = False
        dynamic_batch_moving_average_window: int = 128

    class SchedulerConfig(_Strict):
        model_config = _named("SchedulerConfig")
        capacity_scheduler_policy: CapacitySchedulerPolicy = CapacitySchedulerPolicy.GUARANTEED_NO_EVICT
        context_chunking_policy: Optional[ContextChunkingPolicy13] = None
        dynamic_batch_config: Optional[DynamicBatchConfig] = None
        waiting_queue_policy: WaitingQueuePolicy = WaitingQueuePolicy.FCFS
        use_python_scheduler: bool = False

    class KvCacheConfig(_Strict):  # 22 fields; no onboard_blocks any more
        model_config = _named("KvCacheConfig")
        enable_block_reuse: bool = True
        max_tokens: Optional[int] = None
        max_attention_window: Optional[List[PositiveInt]] = Field(default=None, min_length=1)
        sink_token_length: Optional[int] = None
        free_gpu_memory_fraction: Optional[float] = Field(default=0.9, ge=0, le=1)
        host_cache_size: Optional[int] = None
        cross_kv_cache_fraction: Optional[float] = None
        secondary_offload_min_priority: Optional[int] = None
        event_buffer_max_size: int = 0
        attention_dp_events_gather_period_ms: int = 5
        enable_partial_reuse: bool = True
        copy_on_partial_reuse: bool = True
        use_uvm: bool = False
        max_gpu_total_bytes: NonNegativeInt = 0
        iteration_stats_interval: PositiveInt = 1  # rc13 (not in rc11)
        dtype: str = "auto"
        mamba_ssm_cache_dtype: Literal["auto", "float16", "bfloat16", "float32"] = "auto"
        mamba_ssm_stochastic_rounding: bool = False
        mamba_ssm_philox_rounds: int = Field(default=10, ge=1)
        tokens_per_block: int = 32
        use_kv_cache_manager_v2: bool = False
        max_util_for_resume: float = Field(default=0.95, ge=0, le=1)

        @field_validator("free_gpu_memory_fraction")
        @classmethod
        def _fraction(cls, value):
            if not 0 <= value <= 1:  # null gets here and crashes in the release too (TypeError)
                raise ValueError("kv_cache_config.free_gpu_memory_fraction must be a float between 0 and 1")
            return value

        @field_validator("dtype")
        @classmethod
        def _dtype(cls, value):
            """As on the 1.3.0rc13 page: lower-cased, auto/fp8/nvfp4 or a torch dtype name (kept lower-cased)."""
            value = value.lower()
            if value in ("auto", "fp8", "nvfp4") or value in _TORCH_DTYPE_NAMES:
                return value
            raise ValueError('kv_cache_config.dtype must be one of "auto", "fp8", "nvfp4", or valid torch.dtype '
                             'string')

        @field_validator("max_attention_window")
        @classmethod
        def _window(cls, value):
            return _max_attention_window_rule(value)

    class TorchCompileConfig(_Strict):  # its validators have no body on the page
        model_config = _named("TorchCompileConfig")
        enable_fullgraph: bool = True
        enable_inductor: bool = False
        enable_piecewise_cuda_graph: bool = False
        capture_num_tokens: Optional[List[PositiveInt]] = None
        enable_userbuffers: bool = True
        max_num_streams: PositiveInt = 1

    # -- speculative decoding: one pydantic union, discriminated by decoding_type ------------------

    class SAEnhancerConfig(_Strict):
        model_config = _named("SAEnhancerConfig")
        threshold: PositiveInt = 4
        enable_global_pool: bool = False

    class DecodingBaseConfig(_Strict):
        model_config = _named("DecodingBaseConfig")
        max_draft_len: Optional[NonNegativeInt] = None
        max_total_draft_tokens: Optional[int] = None
        # speculative_model_dir is an alias; both at once -> extra_forbidden on the second
        speculative_model: Optional[Union[str, Path]] = Field(
            default=None, validation_alias=AliasChoices("speculative_model", "speculative_model_dir"))
        max_concurrency: Optional[PositiveInt] = None
        draft_len_schedule: Optional[Dict[int, int]] = None
        load_format: Optional[str] = None
        acceptance_window: Optional[NonNegativeInt] = None
        acceptance_length_threshold: Optional[NonNegativeFloat] = None
        allow_advanced_sampling: bool = False

        @field_validator("draft_len_schedule")
        @classmethod
        def _schedule(cls, schedule, info):
            """1.3: keys >= 1, values >= 0, the SMALLEST key maps to max_draft_len, no value above it."""
            if schedule is None:
                return schedule
            for batch_size, draft_len in schedule.items():
                if batch_size < 1:
                    raise ValueError("draft_len_schedule: batch size threshold must be >= 1, got %s" % batch_size)
                if draft_len < 0:
                    raise ValueError("draft_len_schedule: draft length must be >= 0, got %s" % draft_len)
            smallest = min(schedule)
            max_draft_len = info.data.get("max_draft_len")
            if max_draft_len is not None:
                if schedule[smallest] != max_draft_len:
                    raise ValueError(
                        "draft_len_schedule[%s] must equal max_draft_len because it is the smallest batch-size key. "
                        "Got schedule[%s]=%s, but max_draft_len=%s."
                        % (smallest, smallest, schedule[smallest], max_draft_len))
                for batch_size, draft_len in schedule.items():
                    if draft_len > max_draft_len:
                        raise ValueError(
                            "draft_len_schedule: all draft lengths must be <= max_draft_len. Got draft_len=%s for "
                            "batch_size=%s, but max_draft_len=%s." % (draft_len, batch_size, max_draft_len))
            return dict(sorted(schedule.items()))

        @model_validator(mode="after")
        def _concurrency(self):
            # Only the exclusion: translating max_concurrency into a schedule depends on
            # SpeculativeDecodingMode.support_dynamic_draft_len(), which is not in llm_args.py.
            if self.max_concurrency is not None and self.draft_len_schedule is not None:
                raise ValueError("max_concurrency and draft_len_schedule are mutually exclusive. Use max_concurrency "
                                 "for a simple speculation cutoff, or draft_len_schedule for dynamic draft-length "
                                 "control.")
            return self

        def supports_backend(self, backend):
            return True

    class _LinearTree(DecodingBaseConfig):
        """After validation, max_total_draft_tokens = max_draft_len (these types only draw a linear tree)."""

        @model_validator(mode="after")
        def _linear_total(self):
            self.max_total_draft_tokens = self.max_draft_len
            return self

    class DraftTargetDecodingConfig(DecodingBaseConfig):
        model_config = _named("DraftTargetDecodingConfig")
        decoding_type: Literal["Draft_Target"] = "Draft_Target"

        @model_validator(mode="after")
        def _draft_target(self):
            if self.max_draft_len is None or self.max_draft_len <= 0:
                raise ValueError("max_draft_len must be > 0 for DraftTarget")
            if self.speculative_model is None:
                raise ValueError("speculative_model must be specified for DraftTarget")
            self.max_total_draft_tokens = self.max_draft_len
            return self

        def supports_backend(self, backend):
            return backend in ("pytorch", "_autodeploy")

    class EagleDecodingConfig(DecodingBaseConfig):
        model_config = _named("EagleDecodingConfig")
        decoding_type: Literal["Eagle"] = "Eagle"
        eagle_choices: Optional[List[List[int]]] = None
        greedy_sampling: Optional[bool] = True
        posterior_threshold: Optional[float] = None
        use_dynamic_tree: Optional[bool] = False
        dynamic_tree_max_topK: Optional[int] = None
        num_eagle_layers: Optional[int] = None
        max_non_leaves_per_layer: Optional[int] = None
        eagle3_one_model: Optional[bool] = True
        eagle3_layers_to_capture: Optional[Set[int]] = None
        eagle3_model_arch: Literal["llama3", "mistral_large3"] = "llama3"

        @field_validator("eagle_choices", mode="before")
        @classmethod
        def _choices(cls, value):
            if value is not None:
                _warn("The eagle_choices/static tree feature is deprecated and will be removed in release 1.4.")
            return _parse_eagle_choices(value)

        @model_validator(mode="after")
        def _eagle(self):
            if self.max_draft_len is None or self.max_draft_len == 0:
                raise ValueError("max_draft_len must be > 0 for Eagle")
            if not self.eagle3_one_model:
                _warn("Eagle3 2-model is deprecated and will be removed in release 1.4.")
            self.num_eagle_layers = self.max_draft_len
            if self.eagle3_model_arch == "mistral_large3" and self.eagle3_layers_to_capture is None:
                self.eagle3_layers_to_capture = {-1}
            if self.eagle_choices is not None:  # static tree
                if self.use_dynamic_tree:
                    raise ValueError("If eagle_choices is provided, use_dynamic_tree should be False")
                depth = _eagle_choices_depth(self)
                if depth != self.num_eagle_layers:
                    _warn("Based on the input choices, reset the num_eagle_layers(max_draft_len) from %s to %s"
                          % (self.num_eagle_layers, depth))
                    self.num_eagle_layers = depth
                    self.max_draft_len = depth
                self.max_total_draft_tokens = len(self.eagle_choices)
            # As on the 1.3.0rc13 page: a topK alone is enough to switch the dynamic tree on.
            if self.use_dynamic_tree or self.dynamic_tree_max_topK is not None:
                self.use_dynamic_tree = True
                if self.eagle_choices is not None:
                    raise ValueError("If use_dynamic_tree is True, eagle_choices should be None")
                if self.max_draft_len is None or self.max_draft_len <= 0:
                    raise ValueError("max_draft_len should be provided, which indicates the number of drafter layers")
                if self.dynamic_tree_max_topK is None or self.dynamic_tree_max_topK <= 0:
                    raise ValueError("dynamic_tree_max_topK should be provided, which indicates the number of nodes "
                                     "to expand each time")
                widest = self.dynamic_tree_max_topK * self.max_draft_len
                if self.max_total_draft_tokens is None:
                    self.max_total_draft_tokens = widest
                    _warn("max_total_draft_tokens is not provided, use the default value %s "
                          "(default_max_total_draft_tokens = dynamic_tree_max_topK * max_draft_len)" % widest)
                elif self.max_total_draft_tokens < self.max_draft_len:
                    raise ValueError("max_total_draft_tokens (%s) should be >= max_draft_len (%s)"
                                     % (self.max_total_draft_tokens, self.max_draft_len))
                elif self.max_total_draft_tokens > widest:
                    raise ValueError("max_total_draft_tokens (%s) should be <= dynamic_tree_max_topK * max_draft_len "
                                     "(%s)" % (self.max_total_draft_tokens, widest))
            if self.max_total_draft_tokens is None:
                self.max_total_draft_tokens = self.max_draft_len
            return self

        @model_validator(mode="after")
        def _draft_model(self):
            if self.speculative_model is None:
                raise ValueError("Draft model must be provided for EAGLE")
            return self

    class Eagle3DecodingConfig(EagleDecodingConfig):
        model_config = _named("Eagle3DecodingConfig")
        decoding_type: Literal["Eagle3"] = "Eagle3"
        max_batch_size: Optional[int] = None  # rc13 (not in rc11); not accepted under the Eagle tag
        sa_config: Optional[SAEnhancerConfig] = None

    class LookaheadDecodingConfig(_LinearTree):
        model_config = _named("LookaheadDecodingConfig")
        decoding_type: Literal["Lookahead"] = "Lookahead"
        # The defaults come from the C++ binding (not readable); these are placeholders, never reported.
        max_window_size: PositiveInt = 4
        max_ngram_size: PositiveInt = 3
        max_verification_set_size: PositiveInt = 4

        def supports_backend(self, backend):
            return backend not in ("pytorch", "_autodeploy")

    class MedusaDecodingConfig(_LinearTree):
        model_config = _named("MedusaDecodingConfig")
        decoding_type: Literal["Medusa"] = "Medusa"
        medusa_choices: Optional[List[List[int]]] = None
        num_medusa_heads: Optional[int] = None

        def supports_backend(self, backend):
            return backend not in ("pytorch", "_autodeploy")

    class MTPDecodingConfig(DecodingBaseConfig):
        model_config = _named("MTPDecodingConfig")
        decoding_type: Literal["MTP"] = "MTP"
        num_nextn_predict_layers: PositiveInt = 1
        use_relaxed_acceptance_for_thinking: bool = False
        relaxed_topk: int = 1
        relaxed_delta: float = 0.0
        use_mtp_vanilla: bool = False
        mtp_eagle_one_model: bool = True
        sa_config: Optional[SAEnhancerConfig] = None
        num_nextn_predict_layers_from_model_config: int = 1
        begin_thinking_phase_token: int = 128798  # plain int on the 1.3.0rc13 page: null is refused
        end_thinking_phase_token: int = 128799

        @model_validator(mode="after")
        def _draft_len(self):
            # never an error: max_draft_len simply becomes num_nextn_predict_layers
            self.max_draft_len = self.num_nextn_predict_layers
            self.max_total_draft_tokens = self.num_nextn_predict_layers
            return self

        @model_validator(mode="after")
        def _two_model(self):
            if not self.mtp_eagle_one_model:
                _warn("2-model style MTP is deprecated and will be removed in release 1.4.")
            return self

        def supports_backend(self, backend):
            return backend in ("pytorch", "_autodeploy")

    class NGramDecodingConfig(DecodingBaseConfig):
        model_config = _named("NGramDecodingConfig")
        decoding_type: Literal["NGram"] = "NGram"
        max_matching_ngram_size: PositiveInt = 2
        is_keep_all: bool = True
        is_use_oldest: bool = True
        is_public_pool: bool = True

        @model_validator(mode="after")
        def _ngram(self):
            if self.max_draft_len is None or self.max_draft_len <= 0:
                raise ValueError("max_draft_len must be > 0 for NGram")
            self.max_total_draft_tokens = self.max_draft_len
            return self

        def supports_backend(self, backend):
            return backend == "pytorch"

    class SADecodingConfig(DecodingBaseConfig):
        model_config = _named("SADecodingConfig")
        decoding_type: Literal["SA"] = "SA"
        max_matching_ngram_size: int = -1  # -1: longest match
        enable_global_pool: bool = False
        global_pool_size: Optional[PositiveInt] = None

        @model_validator(mode="after")
        def _sa(self):
            """1.3.0rc13 page: 0 is invalid; with the global pool -1 or 1..64; a pool size needs the pool."""
            if self.max_matching_ngram_size == 0:
                raise ValueError("max_matching_ngram_size must be > 0 (fixed ngram) or -1 (longest match). Got 0.")
            if self.enable_global_pool and self.max_matching_ngram_size != -1 and \
                    not 1 <= self.max_matching_ngram_size <= 64:
                raise ValueError("max_matching_ngram_size must be -1 (longest match) or in [1, 64] when "
                                 "enable_global_pool is True. Got %s." % self.max_matching_ngram_size)
            if self.max_draft_len is None or self.max_draft_len <= 0:
                raise ValueError("max_draft_len must be > 0 for SA")
            if self.global_pool_size is not None:
                if self.global_pool_size < 1:
                    raise ValueError("global_pool_size must be >= 1")
                if not self.enable_global_pool:
                    raise ValueError("global_pool_size requires enable_global_pool=True")
            self.max_total_draft_tokens = self.max_draft_len
            return self

        def supports_backend(self, backend):
            return backend == "pytorch"

    class UserProvidedDecodingConfig(_LinearTree):
        model_config = _named("UserProvidedDecodingConfig")
        decoding_type: Literal["User_Provided"] = "User_Provided"
        drafter: Any  # required (a Drafter object)
        resource_manager: Any = None

    class SaveHiddenStatesDecodingConfig(DecodingBaseConfig):
        model_config = _named("SaveHiddenStatesDecodingConfig")
        decoding_type: Literal["SaveState"] = "SaveState"
        output_directory: str
        write_interval: int = 20
        file_prefix: str = "data"
        eagle3_layers_to_capture: Optional[Set[int]] = None
        max_total_draft_tokens: Optional[int] = 1  # init=False in the release: no effect on a pydantic model
        eagle_choices: Optional[List[List[int]]] = None

    class PARDDecodingConfig(_LinearTree):
        model_config = _named("PARDDecodingConfig")
        mask_token_id: Optional[int] = None
        decoding_type: Literal["PARD"] = "PARD"
        sa_config: Optional[SAEnhancerConfig] = None

        def supports_backend(self, backend):
            return backend == "pytorch"

    class AutoDecodingConfig(_LinearTree):
        model_config = _named("AutoDecodingConfig")
        decoding_type: Literal["AUTO"] = "AUTO"

        def supports_backend(self, backend):
            return backend == "pytorch"

    # The tags, in the release's order. DraftTarget / UserProvided (no underscore) are NOT tags: the
    # 1.3 pages map no alias to them (a mapping elsewhere in the release is unverified); the stand-in
    # follows the source as read, on purpose, so the collection has to render Draft_Target / User_Provided.
    SpeculativeConfig = Annotated[
        Union[DraftTargetDecodingConfig, Eagle3DecodingConfig, EagleDecodingConfig, LookaheadDecodingConfig,
              MedusaDecodingConfig, MTPDecodingConfig, NGramDecodingConfig, SADecodingConfig,
              UserProvidedDecodingConfig, SaveHiddenStatesDecodingConfig, PARDDecodingConfig, AutoDecodingConfig],
        Field(discriminator="decoding_type")]

    # -- the args -------------------------------------------------------------------------------------

    class TorchLlmArgs(_Strict):
        model_config = ConfigDict(title="TorchLlmArgs", arbitrary_types_allowed=True)

        # BaseLlmArgs
        model: Union[str, Path]
        tokenizer: Optional[Union[str, Path]] = None
        tokenizer_mode: Literal["auto", "slow"] = "auto"
        custom_tokenizer: Optional[str] = None
        skip_tokenizer_init: bool = False
        trust_remote_code: bool = False
        tensor_parallel_size: int = 1
        dtype: str = "auto"
        revision: Optional[str] = None
        tokenizer_revision: Optional[str] = None
        model_kwargs: Optional[Dict[str, Any]] = None
        pipeline_parallel_size: int = 1
        context_parallel_size: int = 1
        gpus_per_node: Optional[int] = None
        moe_cluster_parallel_size: Optional[int] = None
        moe_tensor_parallel_size: Optional[int] = None
        moe_expert_parallel_size: Optional[int] = None
        enable_attention_dp: bool = False
        enable_lm_head_tp_in_adp: bool = False
        pp_partition: Optional[List[int]] = None
        cp_config: Optional[Dict[str, Any]] = None
        enable_lora: bool = False
        lora_config: Optional[Dict[str, Any]] = None
        kv_cache_config: KvCacheConfig = Field(default_factory=KvCacheConfig)
        enable_chunked_prefill: bool = False
        guided_decoding_backend: Optional[Literal["xgrammar", "llguidance"]] = None
        batched_logits_processor: Any = None
        iter_stats_max_iterations: Optional[int] = None
        request_stats_max_iterations: Optional[int] = None
        peft_cache_config: Optional[Dict[str, Any]] = None
        scheduler_config: SchedulerConfig = Field(default_factory=SchedulerConfig)
        cache_transceiver_config: Optional[Dict[str, Any]] = None
        sparse_attention_config: Optional[Dict[str, Any]] = None
        speculative_config: Optional[SpeculativeConfig] = None
        max_batch_size: Optional[int] = 2048
        max_input_len: Optional[int] = 1024
        max_seq_len: Optional[int] = None
        max_beam_width: Optional[int] = 1
        max_num_tokens: Optional[int] = 8192
        gather_generation_logits: bool = False
        num_postprocess_workers: int = 0
        postprocess_tokenizer_dir: Optional[str] = None
        reasoning_parser: Optional[str] = None
        decoding_config: Any = None  # deprecated in favour of speculative_config
        mpi_session: Any = Field(default=None, alias="_mpi_session")
        otlp_traces_endpoint: Optional[str] = None
        return_perf_metrics: bool = False
        perf_metrics_max_requests: NonNegativeInt = 0
        prometheus_metrics_config: Optional[Dict[str, Any]] = None  # rc13 (not in rc11)
        enable_energy_metrics: bool = False
        orchestrator_type: Optional[Literal["rpc", "ray"]] = None
        env_overrides: Optional[Dict[str, str]] = None
        telemetry_config: Any = Field(default_factory=dict)  # rc13 (not in rc11); shape not modelled

        # TorchLlmArgs
        garbage_collection_gen0_threshold: int = 20000
        cuda_graph_config: Optional[CudaGraphConfig] = Field(default_factory=CudaGraphConfig)
        attention_dp_config: Optional[AttentionDpConfig] = None
        disable_overlap_scheduler: bool = False
        moe_config: MoeConfig = Field(default_factory=MoeConfig)
        nvfp4_gemm_config: Nvfp4GemmConfig = Field(default_factory=Nvfp4GemmConfig)
        dwdp_config: Optional[DwdpConfig] = None
        attn_backend: str = "TRTLLM"
        sampler_type: Union[str, SamplerType] = SamplerType.auto  # deprecated; any string passes
        sampler_force_async_worker: bool = False
        enable_iter_perf_stats: bool = False
        enable_iter_req_stats: bool = False
        print_iter_log: bool = False
        batch_wait_timeout_ms: NonNegativeFloat = 0
        batch_wait_timeout_iters: NonNegativeInt = 0
        batch_wait_max_tokens_ratio: float = Field(default=0, ge=0, le=1)
        torch_compile_config: Optional[TorchCompileConfig] = None
        enable_autotuner: bool = True
        enable_layerwise_nvtx_marker: bool = False
        load_format: Union[str, LoadFormat] = LoadFormat.AUTO
        enable_min_latency: bool = False
        stream_interval: PositiveInt = 1
        force_dynamic_quantization: bool = False
        allreduce_strategy: Optional[AllreduceStrategy] = "AUTO"
        checkpoint_loader: Any = None
        checkpoint_format: Optional[str] = None
        kv_connector_config: Optional[Dict[str, Any]] = None
        mm_encoder_only: bool = False
        ray_worker_extension_cls: Optional[str] = None
        ray_placement_config: Optional[Dict[str, Any]] = None
        ray_worker_nsight_options: Optional[Dict[str, str]] = None
        sleep_config: Optional[Dict[str, Any]] = None
        use_cute_dsl_blockscaling_mm: bool = False
        use_cute_dsl_blockscaling_bmm: bool = False
        disable_flashinfer_sampling: bool = False
        max_stats_len: int = 1000
        layer_wise_benchmarks_config: Dict[str, Any] = Field(default_factory=dict)
        video_pruning_rate: Optional[float] = Field(default=None, ge=0.0, lt=1.0)
        backend: Literal["pytorch"] = "pytorch"

        @field_validator("load_format", mode="before")
        @classmethod
        def _load_format(cls, value):
            return _to_load_format(value)

        @model_validator(mode="after")
        def _speculative(self):
            spec = self.speculative_config
            if not spec:
                return self
            if not spec.supports_backend(self.backend):
                raise ValueError("Speculation type %s does not support backend %s" % (spec.decoding_type, self.backend))
            if isinstance(spec, EagleDecodingConfig) and not isinstance(spec, Eagle3DecodingConfig):
                _warn("speculative_config.decoding_type 'Eagle' is not supported on the PyTorch backend; only 'Eagle3' "
                      "is supported. 'Eagle' is treated as 'Eagle3' for backward compatibility. EAGLE (v1/v2) draft "
                      "checkpoints are incompatible with Eagle3\u2014use an Eagle3 draft model.")
                user_set = set(spec.model_fields_set)
                spec = Eagle3DecodingConfig(**spec.model_dump(exclude={"decoding_type"}))
                # The release rebuilds Eagle3 from a full dump, so every field counts as set there;
                # report what the file set (plus the new tag) instead.
                object.__setattr__(spec, "__pydantic_fields_set__", user_set | {"decoding_type"})
                self.speculative_config = spec
            if isinstance(spec, PARDDecodingConfig):
                _check(spec.max_draft_len > 0, "PARD max_draft_len must be > 0")  # None: TypeError, as released
            if isinstance(spec, SADecodingConfig):
                pool = spec.global_pool_size
                if pool is not None and self.max_batch_size is not None and pool < self.max_batch_size:
                    raise ValueError("global_pool_size (%s) must be >= max_batch_size (%s)" % (pool, self.max_batch_size))
            if isinstance(spec, SaveHiddenStatesDecodingConfig):
                _warn("SaveHiddenStatesDecodingConfig is active, setting max_batch_size to 1, disabling overlap "
                      "scheduler, and setting cuda_graph_config to None")
                self.max_batch_size = 1
                self.disable_overlap_scheduler = True
                self.cuda_graph_config = None
                spec.max_draft_len = 1
            elif isinstance(spec, DraftTargetDecodingConfig):
                _check(spec.max_draft_len > 0)
                _check(spec.speculative_model is not None, "Draft model must be specified.")
            if self.cuda_graph_config is not None and spec.draft_len_schedule is not None:
                # a schedule turns padding on and gives every threshold its own CUDA graph
                graphs = self.cuda_graph_config
                if not graphs.enable_padding:
                    graphs.enable_padding = True
                largest = graphs.batch_sizes[-1]
                graphs.batch_sizes = sorted(graphs.batch_sizes + [
                    size for size in spec.draft_len_schedule if size <= largest and size not in graphs.batch_sizes])
            return self

        @model_validator(mode="after")
        def _ray(self):
            if self.ray_worker_extension_cls is not None and self.orchestrator_type != "ray":
                raise ValueError("ray_worker_extension_cls is only supported with orchestrator_type='ray'")
            if self.ray_placement_config is not None and self.orchestrator_type != "ray":
                raise ValueError("ray_placement_config is only supported with orchestrator_type='ray'")
            return self

    # update_llm_args_with_extra_dict's field_mapping (speculative_config is no longer in it).
    prebuilt = {"lora_config": "LoraConfig", "moe_config": MoeConfig, "nvfp4_gemm_config": Nvfp4GemmConfig,
                "attention_dp_config": AttentionDpConfig, "kv_cache_config": KvCacheConfig,
                "dwdp_config": DwdpConfig}
    decoding_types = (DraftTargetDecodingConfig, Eagle3DecodingConfig, EagleDecodingConfig, LookaheadDecodingConfig,
                      MedusaDecodingConfig, MTPDecodingConfig, NGramDecodingConfig, SADecodingConfig,
                      UserProvidedDecodingConfig, SaveHiddenStatesDecodingConfig, PARDDecodingConfig,
                      AutoDecodingConfig)
    models = {cls.model_config["title"]: cls for cls in (
        CudaGraphConfig, MoeConfig, Nvfp4GemmConfig, AttentionDpConfig, DwdpConfig, DynamicBatchConfig,
        SchedulerConfig, KvCacheConfig, TorchCompileConfig, SAEnhancerConfig, DecodingBaseConfig, TorchLlmArgs,
        *decoding_types)}
    return _Release("1.3.0rc13", TorchLlmArgs, prebuilt, None, models)


def _release(version):
    if version not in KNOWN:
        raise ReleaseError("ValueError: TensorRT-LLM %r is not a release the stand-in models (it knows %s)"
                           % (version, ", ".join(KNOWN)))
    if version in ("1.2.0", "1.2.1"):
        return _release_12(True, version)
    if version.startswith("1.2."):
        return _release_12(version == "1.2.0rc6")
    return _release_13()  # 1.3.0rc12 is modelled as 1.3.0rc13


def models(version):
    """The release's class name -> the stand-in's model of it (TorchLlmArgs, KvCacheConfig, ...)."""
    return dict(_release(version).models)


def check(options, version, backend="pytorch"):
    """Validate the parsed options file like ``version`` does -> (normalized options, warnings).

    ``normalized`` holds only the keys the file set (nested too), as the release holds them after
    validation: coerced types, and the values the release itself set (e.g. MTP's max_draft_len,
    Eagle's num_eagle_layers, the generated CUDA graph batch sizes, 1.3's Eagle -> Eagle3). The
    speculative_config always carries its decoding_type. Raises ReleaseError when the release would
    not start.
    """
    release = _release(version)
    if not isinstance(options, dict):
        raise ReleaseError("TypeError: the extra LLM API options must be a mapping, not %s" % type(options).__name__)
    if backend != "pytorch":
        return copy.deepcopy(options), [
            "stand-in: only the PyTorch backend's TorchLlmArgs is modelled; the %s backend's options were not "
            "validated" % backend]
    log = []
    token = _LOG.set(log)
    try:
        args = release.build(options, backend)
        normalized = release.dump(args, options)
    except ValidationError as exc:
        raise ReleaseError(str(exc)) from None
    except (AssertionError, AttributeError, KeyError, SyntaxError, TypeError, ValueError) as exc:
        raise ReleaseError("%s: %s" % (type(exc).__name__, exc)) from None
    finally:
        _LOG.reset(token)
    return normalized, log
