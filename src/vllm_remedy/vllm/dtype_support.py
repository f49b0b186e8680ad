"""vLLM's refusal of bfloat16 on a GPU below compute capability 8.0 (Volta, Turing: V100, T4), release by release.

Read from the PyPI wheels:

- Every release 0.6.0-0.34.0 refuses a bfloat16 model dtype on such a card with a ValueError ("Bfloat16 is only
  supported on GPUs with compute capability of at least 8.0. Your <name> GPU has compute capability 7.5. ...") when
  the worker initialises its device, after the engine config is built and before any weight is loaded:
  ``_check_if_gpu_supports_dtype`` in worker/worker.py@0.6.0-@0.10.1.1 (V0) and v1/worker/gpu_worker.py@0.8.5-
  @0.10.1.1 (V1); from 0.10.2 ``CudaPlatform.check_if_supports_dtype`` (platforms/cuda.py@0.10.2-@0.34.0), called by
  v1/worker/gpu_worker.py's ``init_device`` (@0.34.0).
- ``--dtype auto`` on a checkpoint saved in bfloat16: through 0.8.5 it takes the config's dtype as it is
  (``_get_and_verify_dtype``, config.py@0.6.0-@0.8.5), so the start is refused the same way. 0.9.0 falls back when the
  dtype is not in the platform's ``supported_dtypes`` (config.py@0.9.0 l.3084-3101: float16, the first of float16 /
  float32 below 8.0, platforms/cuda.py@0.9.0 l.58-68), warning "Your Tesla T4 device (with compute capability 7.5)
  doesn't support torch.bfloat16. Falling back to torch.float16 for compatibility." (0.9.0 was read as refused here
  before: post hoc, from hostile review 12's reading of the same function). From 0.9.1
  ``_resolve_auto_dtype`` (config.py@0.9.1, config/__init__.py@0.10.1.1, config/model.py@0.11.0-@0.34.0) keeps only
  the platform's ``supported_dtypes`` (platforms/cuda.py@0.9.1: float16 and float32 below 8.0) and falls back to
  float16 with a WARNING ("Your device 'Tesla T4' (with compute capability 7.5) doesn't support torch.bfloat16.
  Falling back to torch.float16 for compatibility."): the start goes on in float16.
- A float32 checkpoint (or one whose config.json states no ``torch_dtype``: ``config_dtype = torch.float32``) under
  auto, ``_get_and_verify_dtype``: float16, but bfloat16 for model_type gemma2 (config.py@0.5.5-@0.7.3), for gemma2 /
  gemma3 / gemma3_text (config.py@0.8.0; 0.8.1-0.8.2 not read, taken as 0.8.0), for plamo2 (config.py@0.8.5, @0.9.0;
  none at 0.8.3). From 0.9.1 ``_resolve_auto_dtype`` downcasts float32 to the platform's preferred dtype, the first
  of ``supported_dtypes`` that ``_is_valid_dtype`` keeps (config.py@0.9.2 to config/model.py@0.34.0): bfloat16 from
  capability 8.0, else float16, else float32 for the types in ``_FLOAT16_NOT_SUPPORTED_MODELS`` (gemma2, gemma3,
  plamo2, glm4; + gemma3_text from 0.10.2; plamo2 gone from 0.27.0); a bfloat16 checkpoint of those types on such a
  card falls back to float32 the same way. A pooling model prefers float16 (``is_pooling_model``): not modelled, the
  same two bytes. From 0.9.1 a config without ``torch_dtype`` is resolved from the safetensors header first (not an
  input here): every header dtype resolves to a 16-bit type on these cards, read as float32's. The model_type the rules
  read is the text config's through 0.8.0 and the top-level config's from 0.8.3 (``ModelTypes``).
- ``--dtype float16`` (``half``) on a model_type in ``_FLOAT16_NOT_SUPPORTED_MODELS`` is refused at config time from
  0.9.1 (``_check_valid_dtype``: "The model type 'gemma2' does not support float16. ..."; ``float16_refusal``).

An unknown capability (``GpuSpec.capability`` None) is never refused: the card may well be Ampere or newer.
"""

from __future__ import annotations

from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

MIN_CAPABILITY = (8, 0)
AUTO_FALLBACK_SINCE = (0, 9, 1)  # _resolve_auto_dtype: auto falls back to float16 instead of refusing
PLATFORM_FALLBACK_SINCE = (0, 9, 0)  # config.py@0.9.0: an auto dtype the platform lacks becomes its first one
# float32 under auto -> bfloat16 for these model types, by first release (module docstring); float16 for the rest.
_F32_TO_BF16 = (((0, 0, 0), frozenset({"gemma2"})), ((0, 8, 0), frozenset({"gemma2", "gemma3", "gemma3_text"})),
                ((0, 8, 3), frozenset()), ((0, 8, 5), frozenset({"plamo2"})))
# _FLOAT16_NOT_SUPPORTED_MODELS by first release (config.py@0.9.2, config/__init__.py@0.10.2, config/model.py@0.27.0).
_NO_FLOAT16 = (((0, 9, 1), frozenset({"gemma2", "gemma3", "plamo2", "glm4"})),
               ((0, 10, 2), frozenset({"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"})),
               ((0, 27, 0), frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})))
_ALIASES = {"half": "float16", "float": "float32"}


def requested(dtype: str) -> str:
    """``--dtype`` as vLLM's table names it (``half`` is float16, ``float`` float32)."""
    return _ALIASES.get(dtype, dtype)


def no_bf16(capability: tuple[int, int] | None) -> bool:
    """Whether the card is known to lack bfloat16 (a capability below 8.0); unknown is not."""
    return capability is not None and capability < MIN_CAPABILITY


def falls_back(version: str | None) -> bool:
    """Whether ``--dtype auto`` drops a bfloat16 checkpoint to float16 on such a card (from 0.9.1) rather than
    taking bfloat16 and being refused. An unknown version reads as the newest release."""
    return (parse_version(version) or NEWEST_RELEASE) >= AUTO_FALLBACK_SINCE


Version = tuple[int, int, int]
#: The text config's and the top-level config's model_type: ``_get_and_verify_dtype`` reads ``hf_text_config`` through
#: 0.8.0 (config.py@0.6.3 l.168, @0.8.0 l.350) and ``hf_config`` from 0.8.3 (config.py@0.8.3 l.362, @0.9.2 l.567,
#: config/model.py@0.30.0 l.752; 0.8.1-0.8.2 not read, taken as 0.8.0).
ModelTypes = tuple[str, str]
_TOP_LEVEL_TYPE_SINCE = (0, 8, 3)
_FLOAT16_REASON = "Numerical instability. Please use bfloat16 or float32 instead."  # every entry, @0.9.2-@0.34.0


def _by_release(table: tuple[tuple[Version, frozenset[str]], ...], v: Version) -> frozenset[str]:
    """The types of the last row at or below ``v``."""
    return next((types for since, types in reversed(table) if v >= since), frozenset())


def _kind(model_types: ModelTypes | str, v: Version) -> str:
    """The model_type the release's dtype rules read (``ModelTypes``)."""
    if isinstance(model_types, str):
        return model_types
    return model_types[1] if v >= _TOP_LEVEL_TYPE_SINCE else model_types[0]


def _supported(capability: tuple[int, int] | None, kind: str, v: Version) -> list[str]:
    """``_resolve_auto_dtype``'s list: the CUDA platform's ``supported_dtypes`` (bfloat16 from capability 8.0, an
    unknown card read as one; float16; float32: platforms/cuda.py@0.9.0) less what ``_is_valid_dtype`` refuses."""
    out = [] if no_bf16(capability) else ["bfloat16"]
    if kind not in _by_release(_NO_FLOAT16, v):
        out.append("float16")
    return [*out, "float32"]


def resolved(model_dtype: str, dtype: str, capability: tuple[int, int] | None, version: str | None,
             model_types: ModelTypes | str = ("", "")) -> str:
    """The dtype vLLM runs the model in: ``--dtype`` when given; under auto, before 0.9.1 the checkpoint's (a float32
    one downcast by the release's rule) and from 0.9.1 ``_resolve_auto_dtype``'s: a float32 checkpoint becomes the
    preferred dtype (the first supported one), any other keeps its dtype where the card and the model_type allow it,
    else the preferred one (module docstring)."""
    if dtype != "auto":
        return requested(dtype)
    v = parse_version(version) or NEWEST_RELEASE
    kind = _kind(model_types, v)
    if falls_back(version) and model_dtype in ("bfloat16", "float16", "float32"):
        supported = _supported(capability, kind, v)
        wanted = supported[0] if model_dtype == "float32" else model_dtype
        return wanted if wanted in supported else supported[0]
    got = ("bfloat16" if kind in _by_release(_F32_TO_BF16, v) else "float16") if model_dtype == "float32" else \
        model_dtype
    if v >= PLATFORM_FALLBACK_SINCE and got == "bfloat16" and no_bf16(capability):
        return "float16"  # 0.9.0: supported_dtypes[0] below capability 8.0 (platforms/cuda.py@0.9.0)
    return got


def refused(model_dtype: str, dtype: str, capability: tuple[int, int] | None, version: str | None,
            model_types: ModelTypes | str = ("", "")) -> bool:
    """Whether the worker refuses the start: the resolved dtype is bfloat16 on a card known to lack it."""
    return no_bf16(capability) and resolved(model_dtype, dtype, capability, version, model_types) == "bfloat16"


def float16_refusal(dtype: str, version: str | None, model_types: ModelTypes | str = ("", "")) -> str | None:
    """vLLM's words for ``--dtype float16`` / ``half`` on a model_type in ``_FLOAT16_NOT_SUPPORTED_MODELS``: from
    0.9.1 ``_check_valid_dtype`` raises while ModelConfig resolves the dtype (config.py@0.9.2 l.3236-3240, l.3360;
    config/model.py@0.34.0 l.2457, l.2549); None when it does not refuse."""
    v = parse_version(version) or NEWEST_RELEASE
    kind = _kind(model_types, v)
    if dtype == "auto" or requested(dtype) != "float16" or not falls_back(version) or \
            kind not in _by_release(_NO_FLOAT16, v):
        return None
    return f"ValueError: The model type {kind!r} does not support float16. Reason: {_FLOAT16_REASON}"


def fell_back(model_dtype: str, dtype: str, capability: tuple[int, int] | None, version: str | None) -> bool:
    """Whether vLLM logs its fallback warning (auto on a bfloat16 checkpoint, a card without bfloat16, 0.9.0+)."""
    v = parse_version(version) or NEWEST_RELEASE
    return dtype == "auto" and model_dtype == "bfloat16" and no_bf16(capability) and v >= PLATFORM_FALLBACK_SINCE


def detail(gpu_product: str, capability: tuple[int, int] | None) -> dict[str, str]:
    """The figures vLLM's error prints: torch's device name and the capability as ``7.5``."""
    name = gpu_product.replace("-", " ", 1)  # torch: "Tesla T4", "Tesla V100-SXM2-16GB"
    cap = f"{capability[0]}.{capability[1]}" if capability is not None else "unknown"
    return {"gpu_name": name, "capability": cap}
