"""Literal flag values vLLM's config classes refuse before anything loads (``config_refused``), in vLLM's words.

Read in the PyPI wheels (config.py, then config/cache.py, config/scheduler.py, config/model.py):

* ``--gpu-memory-utilization`` above 1: ``CacheConfig._verify_args`` raises ``ValueError("GPU memory utilization must
  be less than 1.0. Got 1.5.")`` (every release to 0.11.0), called from ``__init__`` to 0.9.0 and as a pydantic
  ``model_validator(mode='after')`` from 0.9.2 (so a ``ValidationError`` "Value error, ..."); from 0.12.0 the field is
  ``Field(gt=0, le=1)`` (a ValidationError naming the field), which refuses 0 and below too;
* ``--max-num-seqs`` below 1: ``SchedulerConfig.max_num_seqs: Field(ge=1)`` from 0.12.0 (before, ``int`` unchecked);
* ``--max-model-len`` 0: ``ModelConfig.max_model_len: Field(gt=0)`` in 0.13.0 only; from 0.14.0 ``Field(ge=-1)`` (-1 is
  auto-fit), which refuses only below -1. What 0 does elsewhere was not read: left to the memory model's own check.

* ``--optimization-level`` (``-O<x>`` from 0.12.0) other than 0-3: argparse's ``type=str`` takes it and ``VllmConfig``'s
  ``optimization_level: OptimizationLevel`` (an IntEnum) refuses it (config/vllm.py@0.12.0-0.34.0); from 0.14.0 that
  includes ``-O.k=v``, which FlexibleArgumentParser no longer turns into ``-cc.k=v`` (utils/argparse_utils.py@0.14.0).

Each phrase quotes the error's lines after the first (pydantic's ``For further information`` URL, which names the
image's pydantic version, is left out).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TypeVar

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import quant_bnb
from vllm_remedy.vllm.cmdline.values import parse_float, vllm_int
from vllm_remedy.vllm.memory.quant_names import unknown as unknown_quantization
from vllm_remedy.vllm.versions import rules

Version = tuple[int, int, int]
T = TypeVar("T")
VALIDATOR_SINCE: Version = (0, 9, 2)  # _verify_args became a pydantic model_validator (config.py@0.9.2)
FIELDS_SINCE: Version = (0, 12, 0)  # Field(gt=0, le=1) / Field(ge=1) (config/cache.py, config/scheduler.py@0.12.0)
MAX_LEN_GT0: Version = (0, 13, 0)  # max_model_len: Field(gt=0) (config/model.py@0.13.0)
MAX_LEN_GE_MINUS_ONE: Version = (0, 14, 0)  # Field(ge=-1) (config/model.py@0.14.0)


class ConfigRefused(UserError):
    """vLLM refuses the start at config time (``Failure.CONFIG_REFUSED``): ``str`` is the bad-input line a typed value
    gets (``estimate``, ``args set``), ``phrase`` the refusal for a manifest's start, ``error`` vLLM's exception,
    ``flag`` the flag whose literal is refused (what a caller drops to size the rest of the start)."""

    def __init__(self, message: str, phrase: str, error: str, flag: str) -> None:
        super().__init__(message)
        self.phrase = phrase
        self.error = error
        self.flag = flag


def checked(make: Callable[[], T], flags: Mapping[str, str], version: str | None) -> T:
    """``make()`` (the settings), its bad-value UserError turned into ``ConfigRefused`` where vLLM's config classes
    refuse that value too (``config_refusal``), so a manifest's start is config_refused in vLLM's words while a typed
    value keeps its one-line message."""
    r = rules(version)
    if (unknown := load_format_refusal(flags, r.version, r.label) or swap_refusal(flags, r.version, r.label)
            or bnb_refusal(flags, r.version, r.label)):
        raise unknown
    try:
        return make()
    except UserError as exc:
        if (refused := config_refusal(flags, r.version, r.label)) is not None:
            raise ConfigRefused(str(exc), refused.phrase, refused.error, refused.flag) from exc
        raise


def config_refusal(flags: Mapping[str, str], v: Version, label: str) -> ConfigRefused | None:
    """The config-time refusal of the first refused value in ``flags`` (canonical keys) in release ``v`` (``label``
    as printed), None when every value passes these checks or is not a literal number."""
    for flag, error in ((f, _error(f, str(flags[f]), v)) for f in _CHECKED if f in flags):
        if error is not None:
            phrase = (f"vLLM {label} refuses --{flag} {flags[flag]} at config time, before loading anything "
                      f"({' '.join(line.strip() for line in error.splitlines())})")
            return ConfigRefused(phrase, phrase, error, flag)
    return None


_CHECKED = ("max-model-len", "max-num-seqs", "gpu-memory-utilization")
#: The stock model loaders by load format (``_LOAD_FORMAT_TO_MODEL_LOADER`` in model_executor/model_loader/__init__.py,
#: each row the first release read with that set, every release 0.10.1-0.34.0 read). From 0.10.1 argparse lists no
#: ``choices`` (``str | LoadFormats``), ``LoadConfig`` lowercases the name, and ``get_model_loader`` raises
#: ``ValueError(f"Load format `{load_format}` is not supported")`` for a name not registered (a plugin may register
#: more with ``register_model_loader``: a stock image's registry is what is judged). Before 0.10.1 argparse's choices
#: refuse an unknown name (``cmdline.choices``).
LOADERS_SINCE: Version = (0, 10, 1)
_LOADERS: tuple[tuple[Version, str], ...] = (
    ((0, 10, 1), "auto bitsandbytes dummy fastsafetensors gguf mistral npcache pt runai_streamer "
                 "runai_streamer_sharded safetensors sharded_state tensorizer"),
    ((0, 12, 0), "auto bitsandbytes dummy fastsafetensors gguf hf mistral npcache pt runai_streamer "
                 "runai_streamer_sharded safetensors sharded_state tensorizer"),
    ((0, 18, 0), "auto bitsandbytes dummy fastsafetensors gguf hf instanttensor mistral npcache pt runai_streamer "
                 "runai_streamer_sharded safetensors sharded_state tensorizer"),
    ((0, 22, 0), "auto bitsandbytes dummy fastsafetensors gguf hf instanttensor mistral modelexpress npcache pt "
                 "runai_streamer runai_streamer_sharded safetensors sharded_state tensorizer"),
    ((0, 24, 0), "auto bitsandbytes dummy fastsafetensors hf instanttensor mistral modelexpress npcache pt "
                 "runai_streamer runai_streamer_sharded safetensors sharded_state tensorizer"),
    ((0, 28, 0), "auto dummy fastsafetensors hf instanttensor mistral modelexpress npcache pt runai_streamer "
                 "runai_streamer_sharded safetensors sharded_state tensorizer"),
    ((0, 30, 0), "auto dummy fastsafetensors hf instanttensor ipc_cache mistral modelexpress npcache pt "
                 "runai_streamer runai_streamer_sharded safetensors sharded_state tensorizer"),
)


#: ``CacheConfig.verify_with_parallel_config`` (config.py@0.5.5-0.9.2, config/cache.py@0.10.2-0.17.0, called from
#: VllmConfig / EngineConfig's post-init): ``swap_space * GiB`` times the TP size against 0.7 of the host's memory
#: (``ValueError("Too large swap space. ...")``); from 0.14.0 the bytes are ``math.ceil``-ed first, which raises on an
#: infinite (OverflowError) or NaN (ValueError) size. --swap-space left the parser in 0.18.0.
SWAP_CEIL_SINCE: Version = (0, 14, 0)
SWAP_UNTIL: Version = (0, 18, 0)


def swap_refusal(flags: Mapping[str, str], v: Version, label: str) -> ConfigRefused | None:
    """vLLM's refusal of a non-finite ``--swap-space`` (``inf`` is more than any host; finite sizes hang on the
    node's memory, which is not read here)."""
    text = flags.get("swap-space")
    try:
        number = float(str(text).strip()) if text is not None else None  # argparse's ``type=float``
    except ValueError:
        return None  # argparse refuses it first (``cmdline.refused``)
    if number is None or math.isfinite(number) or v >= SWAP_UNTIL:
        return None
    if v >= SWAP_CEIL_SINCE:
        error = ("OverflowError: cannot convert float infinity to integer" if math.isinf(number)
                 else "ValueError: cannot convert float NaN to integer")
    elif math.isnan(number) or number < 0:
        return None  # NaN compares false: no refusal there
    else:
        error = ("ValueError: Too large swap space. inf GiB out of the <host's> GiB total CPU memory is allocated "
                 "for the swap space.")
    phrase = (f"vLLM {label} refuses --swap-space {text} at config time, before loading anything "
              f"({error})")
    return ConfigRefused(phrase, phrase, error, "swap-space")


def bnb_refusal(flags: Mapping[str, str], v: Version, label: str) -> ConfigRefused | None:
    """vLLM's refusal of --quantization bitsandbytes without --load-format bitsandbytes (or the reverse) before 0.8.3
    (``quant_bnb.flag_refusal``), before the model config is built."""
    said = quant_bnb.flag_refusal(flags, v)
    if said is None:
        return None
    error, flag = said
    phrase = f"vLLM {label} refuses the bitsandbytes flags at config time, before loading anything ({error})"
    return ConfigRefused(phrase, phrase, error, flag)


def load_format_refusal(flags: Mapping[str, str], v: Version, label: str) -> ConfigRefused | None:
    """vLLM's refusal of a ``--load-format`` its loader registry lacks (``LOADERS_SINCE`` on): the worker raises it
    when it picks the model loader, before any weight is read."""
    text = flags.get("load-format")
    if text is None or v < LOADERS_SINCE or "$" in str(text) or "{{" in str(text):
        return None
    name = str(text).lower()
    if name in next(keys for since, keys in reversed(_LOADERS) if v >= since).split():
        return None
    error = f"ValueError: Load format `{name}` is not supported"
    phrase = (f"vLLM {label} refuses --load-format {text} when its worker picks the model loader, before loading any "
              f"weights ({error}: no such loader is registered in that release)")
    return ConfigRefused(phrase, phrase, error, "load-format")
OPT_LEVEL_SINCE: Version = (0, 12, 0)
DOTTED_O_UNTIL: Version = (0, 14, 0)


def optimization_refusal(flags: Mapping[str, str], v: Version, label: str) -> ConfigRefused | None:
    """``VllmConfig``'s refusal of an optimization level outside 0-3 (``-O.k=v`` from 0.14.0 included)."""
    text = flags.get("optimization-level")
    if text is None or v < OPT_LEVEL_SINCE or "$" in text or "{{" in text:
        return None
    level = text[1:] if text.startswith("=") else text
    if level in ("0", "1", "2", "3") or (level.startswith(".") and v < DOTTED_O_UNTIL):
        return None
    error = (f"ValidationError: 1 validation error for VllmConfig\noptimization_level\n  Input should be 0, 1, 2 or 3 "
             f"[type=enum, input_value={level!r}, input_type=str]")
    phrase = (f"vLLM {label} refuses the optimization level {level!r} (-O{level}) at config time, before loading "
              f"anything ({' '.join(line.strip() for line in error.splitlines())})")
    return ConfigRefused(phrase, phrase, error, "optimization-level")


def _error(flag: str, text: str, v: Version) -> str | None:
    if flag == "gpu-memory-utilization":
        number = parse_float(text)
        if number is None or not math.isfinite(number):
            return None
        if v >= FIELDS_SINCE and not 0 < number <= 1:
            bound = ("less than or equal to 1", "less_than_equal") if number > 1 else ("greater than 0", "greater_than")
            return _field("CacheConfig", "gpu_memory_utilization", bound, repr(number), "float")
        if v < FIELDS_SINCE and number > 1.0:
            message = f"GPU memory utilization must be less than 1.0. Got {number}."
            if v < VALIDATOR_SINCE:
                return f"ValueError: {message}"
            return f"ValidationError: 1 validation error for CacheConfig\n  Value error, {message} [type=value_error]"
        return None
    number_int = vllm_int(text, flag, v)
    if number_int is None:
        return None
    if flag == "max-num-seqs" and v >= FIELDS_SINCE and number_int < 1:
        return _field("SchedulerConfig", "max_num_seqs", ("greater than or equal to 1", "greater_than_equal"),
                      str(number_int), "int")
    if flag == "max-model-len" and MAX_LEN_GT0 <= v < MAX_LEN_GE_MINUS_ONE and number_int == 0:
        return _field("ModelConfig", "max_model_len", ("greater than 0", "greater_than"), "0", "int")
    if flag == "max-model-len" and v >= MAX_LEN_GE_MINUS_ONE and number_int < -1:
        return _field("ModelConfig", "max_model_len", ("greater than or equal to -1", "greater_than_equal"),
                      str(number_int), "int")
    return None


def _field(cls: str, field: str, bound: tuple[str, str], value: str, kind: str) -> str:
    return (f"ValidationError: 1 validation error for {cls}\n{field}\n  Input should be {bound[0]} [type={bound[1]}, "
            f"input_value={value}, input_type={kind}]")


def quantization(name: str, version: str | None) -> str:
    """``--quantization``'s method as the memory model takes it; ``ConfigRefused`` where ModelConfig has no such method
    (``quant_names``, 0.13.0+; argparse's choices refuse it before, ``cmdline.choices``)."""
    r = rules(version)
    if "$" not in name and "{{" not in name and (error := unknown_quantization(name, r.version)) is not None:
        phrase = (f"vLLM {r.label} refuses --quantization {name} at config time, before loading anything (Unknown "
                  f"quantization method: {name}; it has no such method)")
        raise ConfigRefused(phrase, phrase, error, "quantization")
    return name.strip().lower()
