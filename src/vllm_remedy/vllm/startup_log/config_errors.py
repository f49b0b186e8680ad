"""vLLM's configuration checks refusing a start (``Failure.CONFIG_REFUSED``), as its log shows them.

The refusals, each read in the wheels: an architecture or checkpoint quantization method the release does not
implement (``_ARCH``, ``_UNKNOWN_QUANT``, ``vllm.arch_release``; transformers' unknown ``model_type``, ``_MODEL_TYPE``);
the quantization method (``_QUANT``, ``vllm.quant_support``); a
tensor-parallel size that splits a quantized layer off its grid (``_SHARD``); V0 without chunked prefill refusing
--max-num-batched-tokens below max-model-len
(``SchedulerConfig._verify_args``: a ValueError in config.py@0.6.3-@0.8.5, pydantic's ValidationError around the same
words once SchedulerConfig became a pydantic dataclass, config.py@0.9.2, config/scheduler.py@0.10.2);
``VLLM_USE_V1`` text that ``int()`` refuses (``bool(int(os.getenv("VLLM_USE_V1", "1")))``, envs.py@0.9.2);
``VLLM_USE_V1=1`` where the 0.8-0.10 oracle would fall back (``_V1_FORCED``, a NotImplementedError naming it); and
``VLLM_USE_V1=0`` on a release without V0 (``assert envs.VLLM_USE_V1``, entrypoints/openai/api_server.py@0.11.0).
The environment refusals are a bare ValueError/AssertionError: only the traceback's source lines name the variable,
so they count as this class only when a ``VLLM_*`` variable is read in the lines above them.
"""

from __future__ import annotations

import re
from typing import Any

_BATCH = re.compile(r"max_num_batched_tokens \((?P<max_num_batched_tokens>\d+)\) is smaller than max_model_len "
                    r"\((?P<max_model_len>\d+)\)")
_ENV_READ = re.compile(r"""(?:getenv\(\s*["']|envs\.)(?P<variable>VLLM_\w+)""")
_INT_REFUSED = re.compile(r"^(?:[\w.]+\.)?ValueError: invalid literal for int\(\) with base 10: (?P<value>'.*')\s*$")
_ASSERTION = re.compile(r"^(?:[\w.]+\.)?AssertionError\s*$")
# The quantization checks of the config (``vllm.quant_support``): the method against the card's capability
# (config/vllm.py@0.12.0-@0.34.0), --quantization against the checkpoint's method (config/model.py@0.11.0, @0.34.0),
# the method's own file missing (model_loader/weight_utils.py@0.11.0) and a dtype the kernel does not take.
# Then the packing the method's config class has no kernel for (``quant_support.packing_refusal``: awq.py@0.5.5-@0.23.0,
# auto_awq.py@0.24.0-@0.34.0, gptq.py@0.5.5-@0.21.0, auto_gptq.py@0.22.0-@0.34.0) or a key it requires
# (``get_from_keys``, base_config.py).
_QUANT = re.compile(r"The quantization method \S+ is not supported for the current GPU\. Minimum capability: \d+|"
                    r"Quantization method specified in the model config \(\S*\) does not match the quantization method|"
                    r"Cannot find the config file for \S+|torch\.\w+ is not supported for quantization method \S+|"
                    r"only [\d/]+-bit weight quantization is supported for (?:AWQ|GPTQ)|Unsupported num_bits = \d+\. "
                    r"Supported:|Unsupported quantization config: bits=\d+, sym=|"
                    r"Cannot find any of \[.*\] in the model's quantization config")
# VLLM_USE_V1=1 where the 0.8-0.10 oracle would fall back to V0 (``_raise_or_fallback``, engine/arg_utils.py@0.8.3,
# @0.10.1.1): it names the variable itself.
_V1_FORCED = re.compile(r"NotImplementedError: VLLM_USE_V1=1 is not supported with (?P<feature>.+?)\.?\s*$")
# A quantized layer whose shard the tensor-parallel size splits off its quantization grid, refused while the weights
# are created: AWQ/GPTQ's "The input (output) size is not aligned with the quantized weight shape" (awq.py, gptq.py
# ``create_weights``@0.5.5-@0.23.0, auto_awq.py@0.34.0), Marlin's "Weight input_size_per_partition = N is not divisible
# by min_thread_k / group_size" (utils/marlin_utils.py ``verify_marlin_supports_shape``@0.5.5-@0.34.0) and block FP8's
# "... is not divisible by weight quantization block_n / block_k" (fp8.py@0.8.5 ``create_weights``,
# utils/fp8_utils.py@0.34.0 ``validate_fp8_block_shape``).
_SHARD = re.compile(r"The (?:input|output) size is not aligned with the quantized weight shape|"
                    r"Weight (?:input|output)_size_per_partition = \d+ is not divisible by\s+"
                    r"(?:min_thread_[kn]|group_size) = \d+|is not divisible by weight quantization block_[nk] = \d+")

# bitsandbytes' flags that select its loader, refused before 0.8.3 (``vllm.quant_bnb.flag_refusal``:
# engine/arg_utils.py@0.5.5 l.750-764, @0.7.3 l.1106-1120, @0.8.0 l.1160-1175).
_BNB_FLAGS = re.compile(r"BitsAndBytes (?:quantization|load format) and QLoRA adapter only support 'bitsandbytes' "
                        r"(?:load format|quantization), but got \S+")


# The model config refusing a model the release does not implement (``vllm.arch_release``): the registry's
# ``_raise_for_unsupported`` (model_executor/models/registry.py@0.6.3-@0.34.0, models/__init__.py@0.5.5), a name it
# no longer has (``_PREVIOUSLY_SUPPORTED_MODELS``, from 0.10.0), ``_verify_quantization``'s unknown method
# (config.py@0.5.5-@0.8.5, config/model.py@0.34.0), and transformers' own refusal of a ``model_type`` the image's
# transformers does not know, raised while vLLM reads config.json (transformers' models/auto/configuration_auto.py).
_ARCH = re.compile(r"Model architectures \[(?P<architectures>[^\]]*)\] are not supported for now|"
                   r"Model architecture (?P<previous>\S+) was supported in vLLM until v(?P<until>\S+), and is not "
                   r"supported anymore")
_UNKNOWN_QUANT = re.compile(r"Unknown quantization method: (?P<method>[^\s.]+)\. Must be one of")
_MODEL_TYPE = re.compile(r"has model type `(?P<model_type>[^`]+)` but Transformers does not recognize this "
                         r"architecture")


def _model_refusal(message: str) -> dict[str, Any] | None:
    """The detail of a model the release (or the image's transformers) does not implement, or None."""
    if (m := _ARCH.search(message)) is not None:
        names = m["previous"] or ", ".join(n.strip(" '\"") for n in (m["architectures"] or "").split(","))
        detail: dict[str, Any] = {"setting": "architecture", "architecture": names, "error": message.strip()}
        if m["until"]:
            detail["supported_until"] = m["until"]
        return detail
    if (m := _UNKNOWN_QUANT.search(message)) is not None:
        return {"setting": "quantization", "method": m["method"], "error": message.strip()}
    if (m := _MODEL_TYPE.search(message)) is not None:
        return {"setting": "model_type", "model_type": m["model_type"], "error": message.strip()}
    return None


def env_read(text: str) -> str | None:
    """The ``VLLM_*`` variable a traceback source line reads, if any."""
    m = _ENV_READ.search(text)
    return m.group("variable") if m else None


def refusal(message: str, variable: str | None) -> dict[str, Any] | None:
    """The detail of a configuration refusal on this line (``variable``: the last ``VLLM_*`` variable the traceback
    read above it), or None."""
    if (m := _BATCH.search(message)) is not None:
        return {"setting": "max-num-batched-tokens", "max_num_batched_tokens": int(m["max_num_batched_tokens"]),
                "max_model_len": int(m["max_model_len"]), "error": message.strip()}
    if (unknown := _model_refusal(message)) is not None:
        return unknown
    if _SHARD.search(message) is not None:
        return {"setting": "tensor-parallel-size", "error": message.strip()}
    if _QUANT.search(message) is not None:
        return {"setting": "quantization", "error": message.strip()}
    if _BNB_FLAGS.search(message) is not None:
        return {"setting": "load-format", "error": message.strip()}
    if _V1_FORCED.search(message) is not None:
        return {"variable": "VLLM_USE_V1", "value": "1", "error": message.strip()}
    if variable is None:
        return None
    if (m := _INT_REFUSED.match(message.strip())) is not None:
        return {"variable": variable, "value": m["value"].strip("'"), "error": message.strip()}
    if _ASSERTION.match(message.strip()):
        return {"variable": variable, "error": message.strip()}
    return None
