"""The quantization checks vLLM runs while it builds its config, release by release: a start they fail is refused
before any weight is loaded (``config_refused``), in vLLM's own words.

Read from the PyPI sdists (vllm/config.py@0.6.4-@0.10.0, config/model.py and config/__init__.py@0.10.2-@0.11.0,
config/vllm.py@0.12.0-@0.34.0; model_executor/model_loader/loader.py@0.5.5-@0.6.3 before the check moved to the
config; each method's class in model_executor/layers/quantization/):

1. ``ModelConfig._verify_quantization``: the checkpoint's ``quantization_config.quant_method`` is offered to every
   override first (awq_marlin / gptq_marlin when the card runs Marlin and ``--quantization`` is unset, ``marlin`` or
   the Marlin name; from 0.22 ``auto_gptq`` and from 0.24 ``auto_awq`` take gptq / awq for any of their spellings;
   moe_wna16; from 0.20 ``gpt_oss_mxfp4`` takes gpt-oss's mxfp4, mxfp4.py@0.20.0); with no override, a
   ``--quantization`` other than the checkpoint's method is refused: "Quantization method specified in the model
   config (awq) does not match the quantization method specified in the `quantization` argument (gptq)."
   (config/model.py@0.11.0, @0.34.0).
2. ``get_quant_config``: ``--quantization`` on a checkpoint without ``quantization_config`` reads the method's own
   file (AWQ: quant_config.json / quantize_config.json, GPTQ: quantize_config.json); fp8, mxfp4 and bitsandbytes need
   none (fp8 quantizes the 16-bit weights online). Without it: "Cannot find the config file for awq"
   (model_loader/weight_utils.py@0.11.0). config.json cannot say whether the repository ships such a file, so a
   checkpoint with no ``quantization_config`` is taken not to (AutoAWQ and AutoGPTQ write the section since 2023).
3. ``_get_quantization_config``: "The quantization method awq is not supported for the current GPU. Minimum
   capability: 75. Current capability: 70." against ``get_min_capability``: awq 75 everywhere (auto_awq.py@0.34.0);
   gptq 60 (auto_gptq.py@0.34.0 too); awq_marlin and gptq_marlin 80 through 0.13, 75 from 0.14.0; fp8 80 through 0.13,
   75 from 0.14.0 (fp8.py@0.13.0 / @0.14.0: from 8.0 below 8.9 it runs as Marlin weight-only, not refused); mxfp4 80
   (mxfp4.py@0.10.1-@0.34.0); bitsandbytes and compressed-tensors 70. Then ``get_supported_act_dtypes``: the plain
   awq and gptq kernels take float16 only ("torch.bfloat16 is not supported for quantization method awq"), through
   0.23 and 0.21 (auto_awq / auto_gptq take bfloat16 too); judged for a typed ``--dtype bfloat16`` only (the
   catalog's quantized variants carry their base's dtype, where AWQ checkpoints are saved in float16).

Only the methods listed are judged; any other (modelopt, quark, ...) is left to the memory model. An unknown
capability is never refused.
"""

from __future__ import annotations

from vllm_remedy.vllm import dtype_support
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

Version = tuple[int, int, int]

CONFIG_CHECK_SINCE = (0, 6, 4)  # the checks run while the engine config is built (config.py@0.6.4), else at load
MARLIN_75_SINCE = (0, 14, 0)  # awq_marlin, gptq_marlin and fp8 take capability 7.5 (0.13.0: 80)
AUTO_GPTQ_SINCE = (0, 22, 0)  # auto_gptq.py replaces gptq.py / gptq_marlin.py
AUTO_AWQ_SINCE = (0, 24, 0)  # auto_awq.py replaces awq.py / awq_marlin.py
GPT_OSS_MXFP4_SINCE = (0, 20, 0)  # GptOssMxfp4Config names gpt-oss's mxfp4 "gpt_oss_mxfp4" (absent at 0.19.0)
_FILES = {"awq": "quant_config.json or quantize_config.json", "gptq": "quantize_config.json"}
_JUDGED = frozenset({"awq", "gptq", "awq_marlin", "gptq_marlin", "marlin", "auto_awq", "auto_gptq", "fp8", "mxfp4",
                     "gpt_oss_mxfp4", "bitsandbytes", "compressed-tensors"})


def _marlin_min(v: Version) -> int:
    return 75 if v >= MARLIN_75_SINCE else 80


def min_capability(method: str, v: Version) -> int | None:
    """``get_min_capability`` of the method's config class at this release; None: not judged."""
    if method in ("awq", "auto_awq"):
        return 75
    if method in ("gptq", "auto_gptq"):
        return 60
    if method in ("awq_marlin", "gptq_marlin", "marlin", "fp8"):
        return _marlin_min(v)
    if method in ("mxfp4", "gpt_oss_mxfp4"):
        return 80
    if method in ("bitsandbytes", "compressed-tensors"):
        return 70
    return None


def _cap(capability: tuple[int, int]) -> int:
    return capability[0] * 10 + capability[1]  # DeviceCapability.to_int


def _override(method: str, user: str | None, model: ModelSpec, cap: int | None, v: Version) -> str | None:
    """The method an override turns the checkpoint's into (``override_quantization_method``), or None."""
    if method == "awq":
        if v >= AUTO_AWQ_SINCE:
            return "auto_awq" if user in (None, "awq", "awq_marlin", "auto_awq", "marlin") else None
        marlin = cap is not None and cap >= _marlin_min(v) and model.weight_bits == 4
        return "awq_marlin" if marlin and user in (None, "marlin", "awq_marlin") else None
    if method == "gptq":
        if v >= AUTO_GPTQ_SINCE:
            return "auto_gptq" if user in (None, "gptq", "gptq_marlin", "auto_gptq", "marlin") else None
        marlin = cap is not None and cap >= _marlin_min(v) and model.weight_bits in (4, 8)
        return "gptq_marlin" if marlin and user in (None, "marlin", "gptq_marlin") else None
    if method == "mxfp4" and v >= GPT_OSS_MXFP4_SINCE and model.architecture == "GptOssForCausalLM":
        return "gpt_oss_mxfp4"
    return None


def method_run(model: ModelSpec, gpu: GpuSpec, user: str | None, version: str | None,
               dtype: str = "auto") -> tuple[str | None, str | None]:
    """(the method vLLM runs, why it refuses the start) for the checkpoint's ``quantization_config`` and
    ``--quantization`` (``user``) with ``--dtype`` on this card at this release; (None, None) for an unquantized
    start."""
    v = parse_version(version) or NEWEST_RELEASE
    cap = _cap(gpu.capability) if gpu.capability is not None else None
    method = (model.quantization or "").replace("compressed_tensors", "compressed-tensors") or None
    if method is not None:
        chosen = _override(method, user, model, cap, v)
        if chosen is None and user in (None, method, "moe_wna16"):
            chosen = user or method
        elif chosen is None:
            if method in _JUDGED and user in _JUDGED:
                return user, (f"ValueError: Quantization method specified in the model config ({method}) does not "
                              f"match the quantization method specified in the `quantization` argument ({user}).")
            return user, None
    elif user is not None:
        chosen = user
        base = "awq" if "awq" in user else "gptq" if "gptq" in user or user == "marlin" else None
        if base is not None:
            return chosen, (f"ValueError: Cannot find the config file for {user} (the checkpoint's config.json has no "
                            f"quantization_config, and a {base.upper()} checkpoint ships {_FILES[base]})")
    else:
        return None, None
    least = min_capability(chosen, v)
    if least is not None and cap is not None and cap < least:
        return chosen, (f"ValueError: The quantization method {chosen} is not supported for the current GPU. Minimum "
                        f"capability: {least}. Current capability: {cap}.")
    half_only = (chosen == "awq" and v < AUTO_AWQ_SINCE) or (chosen == "gptq" and v < AUTO_GPTQ_SINCE)
    if half_only and dtype_support.requested(dtype) == "bfloat16":  # typed: auto's choice for AWQ is not modelled
        return chosen, (f"ValueError: torch.bfloat16 is not supported for quantization method {chosen}. Supported "
                        "dtypes: [torch.float16]")
    return chosen, None


def refusal(model: ModelSpec, gpu: GpuSpec, quantization: str | None, version: str | None,
            dtype: str = "auto") -> str | None:
    """vLLM's exception refusing the start for its quantization, or None (the module's three checks)."""
    return method_run(model, gpu, quantization, version, dtype)[1]
