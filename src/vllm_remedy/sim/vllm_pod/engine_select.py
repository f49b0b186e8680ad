"""What a rehearsal pod's vLLM does with VLLM_USE_V1 in its env, as the release does (``vllm.engine_env`` holds the
source read): 0 on 0.8-0.10 starts the V0 engine (its log lines and budget, through the memory model's rules); the
starts a release refuses end with its exception.

Left out: 1 on 0.6.5-0.7.3 opts into the V1 alpha engine, which the memory model does not size; the pod starts as
V0 instead (the tools say "cannot predict" for it, so no rehearsal compares the two). Likewise
VLLM_USE_V2_MODEL_RUNNER=1 before 0.22: the pod starts on the V1 runner. VLLM_USE_FLASHINFER_SAMPLER and
VLLM_USE_V2_MODEL_RUNNER otherwise size the pod's start through the memory model's rules (``sampler_env``,
``runner_env``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm import engine_env, runner_env, sampler_env, v1_oracle
from vllm_remedy.vllm.versions import (
    FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE,
    NEWEST_RELEASE,
    VersionRules,
    parse_version,
    rules,
)


def env_inputs(container: Mapping[str, Any], version: str | None) -> dict[str, str]:
    """The memory-model inputs of the pod's env (``engine_env.env_inputs``), less a V1-alpha opt-in (see above)."""
    inputs = engine_env.env_inputs(container)
    v = parse_version(version) or NEWEST_RELEASE
    if v < engine_env.V1_DEFAULT_SINCE and inputs.get(engine_env.INPUT, "0").strip() not in ("0", "-0", "+0"):
        inputs.pop(engine_env.INPUT)
    if v < runner_env.SET_OVERRIDES_SINCE and inputs.get(runner_env.INPUT, "0").strip() not in ("0", "-0", "+0"):
        inputs.pop(runner_env.INPUT)  # 0.21's V2 runner, not sized either: the pod starts on the V1 runner
    return inputs


def refusal(version: str | None, capability: tuple[int, int] | None, inputs: Mapping[str, str],
            kv_cache_dtype: str = "auto", dtype: str | None = None, mla: bool = False) -> str | None:
    """The exception line of ``refused_by``, or None when the start goes on."""
    got = refused_by(version, capability, inputs, kv_cache_dtype, dtype, mla)
    return got[1] if got is not None else None


def refused_by(version: str | None, capability: tuple[int, int] | None, inputs: Mapping[str, str],
               kv_cache_dtype: str = "auto", dtype: str | None = None,
               mla: bool = False) -> tuple[str, str] | None:
    """(the variable, the exception line) vLLM ends the start with for its env, or None when it starts: a value
    ``int()`` refuses (envs.py ``bool(int(...))``, 0.6.5-0.11.0), 1 on 0.8-0.10 where the V1 oracle would fall back
    (``v1_oracle.fallback``: capability below 8.0 through 0.10.1, an fp8 KV cache FlashAttention 3 does not take,
    float32 through 0.9.1; ``_raise_or_fallback``, engine/arg_utils.py@0.8.3, 0.9.2, 0.10.1.1), 0 on 0.11.0 (the bare
    ``assert envs.VLLM_USE_V1``, api_server.py@0.11.0); and
    VLLM_USE_FLASHINFER_SAMPLER's refusals (``sampler_env``: text int() refuses, 1 on a card FlashInfer does not
    support from 0.12.0, in 0.12.0's words) and VLLM_USE_V2_MODEL_RUNNER's (``runner_env``)."""
    v = parse_version(version) or NEWEST_RELEASE
    if (sampler := _sampler_refusal(v, capability, inputs)) is not None:
        return sampler_env.ENV, sampler
    if (runner := _runner_refusal(v, inputs)) is not None:
        return runner_env.ENV, runner
    value = inputs.get(engine_env.INPUT)
    if value is None or not engine_env.ENV_SINCE <= v < engine_env.IGNORED_SINCE:
        return None
    try:
        number = int(value)
    except ValueError:
        return engine_env.USE_V1, f"ValueError: invalid literal for int() with base 10: {value!r}"
    if v >= engine_env.V0_REMOVED_SINCE and number == 0:
        return engine_env.USE_V1, "AssertionError"
    feature = v1_oracle.fallback(v, capability, kv_cache_dtype, dtype, mla) if number else None
    return (engine_env.USE_V1, v1_oracle.refusal(feature)) if feature is not None else None


def _sampler_refusal(v: tuple[int, int, int], capability: tuple[int, int] | None,
                     inputs: Mapping[str, str]) -> str | None:
    """VLLM_USE_FLASHINFER_SAMPLER's exception as V1's sampler raises it (v1/sample/ops/topk_topp_sampler.py at
    0.12.0, and at 0.34.0 for 0.21 on)."""
    value = inputs.get(sampler_env.INPUT)
    if value is None or v < engine_env.V1_DEFAULT_SINCE:
        return None
    try:
        number = int(value)
    except ValueError:
        return f"ValueError: invalid literal for int() with base 10: {value!r}"
    r: VersionRules = rules(".".join(map(str, v)))
    if number and capability is not None and v >= sampler_env.CAPABILITY_CHECKED_SINCE \
            and sampler_env.sampler(r, capability, True, value)[1] is not None:
        cap = f"{capability[0]}.{capability[1]}"
        if v >= FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE:
            return (f"RuntimeError: FlashInfer top-p/top-k sampling unavailable: unsupported compute capability {cap}. "
                    "Unset VLLM_USE_FLASHINFER_SAMPLER=1.")
        return f"RuntimeError: FlashInfer does not support compute capability {cap}, unset {sampler_env.ENV}=1."
    return None


def _runner_refusal(v: tuple[int, int, int], inputs: Mapping[str, str]) -> str | None:
    """VLLM_USE_V2_MODEL_RUNNER's exception: anything but 1 on 0.34 (validate_environ, platforms/interface.py@0.34.0),
    text int() refuses where envs.py reads it with ``bool(int(...))`` (0.21-0.33)."""
    value = inputs.get(runner_env.INPUT)
    if value is None or v < runner_env.READ_SINCE:
        return None
    if v >= runner_env.V1_RUNNER_REMOVED_SINCE:
        return None if value == "1" else (f"ValueError: {runner_env.ENV}={value} is no longer supported: Model Runner "
                                          "V1 has been removed. Unset this variable.")
    try:
        int(value)
    except ValueError:
        return f"ValueError: invalid literal for int() with base 10: {value!r}"
    return None
