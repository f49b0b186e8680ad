"""VLLM_USE_V1: the environment variable that selects vLLM's engine, release by release.

Read from the wheels (vllm/envs.py, engine/arg_utils.py ``create_engine_config`` / ``_is_v1_supported_oracle`` /
``_raise_or_fallback``, entrypoints/openai/api_server.py, v1/engine/llm_engine.py):

- 0.6.5-0.7.3: ``bool(int(os.getenv("VLLM_USE_V1", "0")))`` (envs.py@0.6.5, 0.7.0, 0.7.3): V0 by default, 1 opts
  into the V1 alpha engine (v1/worker/gpu_worker.py), whose memory accounting is not modelled here, so a start with
  it set to 1 cannot be predicted. Releases before 0.6.5 were not read for it; 0 asks for V0 there as well, which is
  all they run by default.
- 0.8.0-0.10.2: the default becomes "1" (envs.py@0.8.0, 0.8.3, 0.9.2, 0.10.2) and ``create_engine_config``
  decides: "If VLLM_USE_V1 is unset, we enable V1 for supported features and fall back to V0 for experimental or
  unsupported features. If VLLM_USE_V1=1, we enable V1 for supported + experimental features and raise error for
  unsupported features. If VLLM_USE_V1=0, we disable V1." (engine/arg_utils.py@0.8.3, 0.10.2). So 0 runs the V0
  engine (``versions.as_v0``, the rules of the oracle's fallback); 1 runs V1, except that where the oracle would
  fall back (``v1_oracle.fallback``: compute capability below 8.0 through 0.10.1, --kv-cache-dtype fp8 where
  FlashAttention 3 does not run, float32 through 0.9.1) ``_raise_or_fallback`` raises NotImplementedError("VLLM_USE_V1=1
  is not supported with Compute Capability < 8.0.", "... with --kv-cache-dtype.") and the start is refused before any
  memory is used.
- 0.11.0: V0 is gone (engine/llm_engine.py and engine/async_llm_engine.py alias the V1 classes), the variable is
  still read (envs.py@0.11.0) and 0 is refused: ``create_engine_config`` passes its ``assert use_v1 ==
  envs.VLLM_USE_V1``, then ``vllm serve`` stops at ``assert envs.VLLM_USE_V1`` (api_server.py@0.11.0) and ``LLM()`` at
  "Using V1 LLMEngine, but envs.VLLM_USE_V1=False" (v1/engine/llm_engine.py@0.11.0), before any GPU memory is used.
- 0.11.1 on: ignored. No file of the 0.11.1, 0.12.0 or 0.34.0 wheels mentions VLLM_USE_V1 (envs.py no longer defines
  it), so a pod that still sets it runs V1 as if unset; the releases between are taken to ignore it as those do. 0.34.0
  only warns "Unknown vLLM environment variable detected: VLLM_USE_V1" (``validate_environ``,
  platforms/interface.py@0.34.0; it raises only with ``EngineArgs.fail_on_environ_validation``, default False, not
  modelled); 0.11.1 and 0.12.0 have no such check.

A value ``int()`` refuses ("true", "") makes the releases that read it fail when the engine first reads it
(``bool(int(...))``). Unreadable values (a Secret, a ConfigMap outside the manifests) are unknown on a release that
reads the variable: the engine, and so the budget, hang on them.

Two kinds of answer, kept apart (``Refusal``): vLLM refuses the start before using any GPU memory (int() refusing the
text, 0 on 0.11.0, 1 where the 0.8-0.10 oracle would fall back) — a prediction, ``config_refused``, as the release's
own exception says it; or the start cannot be predicted (the V1 alpha engine, a release not read for the variable, a
value that cannot be read) — "cannot predict".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm import mla_env, model_len, pod_env, runner_env, sampler_env, v1_oracle
from vllm_remedy.vllm.env_refusal import Refusal
from vllm_remedy.vllm.pod_env import ConfigMaps
from vllm_remedy.vllm.versions import VersionRules, as_v0, rules_on_device

USE_V1 = "VLLM_USE_V1"
INPUT = "vllm-use-v1"  # the memory model's input: the variable's text in vLLM's process (absent: unset)
UNREADABLE = "vllm-use-v1-unreadable"  # why the pod's value cannot be read (``pod_env.read``)
ENV_SINCE = (0, 6, 5)  # envs.py@0.6.5 defines it (default "0")
V1_DEFAULT_SINCE = (0, 8, 0)  # envs.py@0.8.0: default "1"
V0_REMOVED_SINCE = (0, 11, 0)  # 0.11.0 has no V0 engine and refuses VLLM_USE_V1=0
IGNORED_SINCE = (0, 11, 1)  # no longer read (envs.py@0.11.1 has no VLLM_USE_V1)


#: The engine-selecting variables: (name, the memory-model input holding its text, the one saying why it cannot be
#: read, the ``EngineSettings`` field both land in; ``<field>_unreadable`` for the second).
VARIABLES = ((USE_V1, INPUT, UNREADABLE, "vllm_use_v1"),
             (sampler_env.ENV, sampler_env.INPUT, sampler_env.UNREADABLE, "flashinfer_sampler_env"),
             (runner_env.ENV, runner_env.INPUT, runner_env.UNREADABLE, "runner_v2_env"),
             (mla_env.ENV, mla_env.INPUT, mla_env.UNREADABLE, "mla_disable_env"))


__all__ = ["Refusal"]  # where the readers of ``Resolved.env_problem`` take it from (``env_refusal``)


def refuses(problem: str | None) -> bool:
    """Whether an env problem is vLLM's refusal (``Refusal``) rather than "cannot predict"."""
    return isinstance(problem, Refusal)


def env_inputs(container: Mapping[str, Any], maps: ConfigMaps | None = None) -> dict[str, str]:
    """The memory-model inputs the engine-selecting variables of vLLM's process give, VLLM_ALLOW_LONG_MAX_MODEL_LEN's
    (``model_len.env_inputs``) included: the text of VLLM_USE_V1, VLLM_USE_FLASHINFER_SAMPLER (``sampler_env``) and
    VLLM_USE_V2_MODEL_RUNNER (``runner_env``) and VLLM_MLA_DISABLE (``mla_env``) when set, or why it cannot be read."""
    out = model_len.env_inputs(container, maps)
    for name, given, unreadable, _ in VARIABLES:
        got = pod_env.read(container, name, maps)
        if got.unknown is not None:
            out[unreadable] = got.unknown
        elif got.value is not None:
            out[given] = got.value
    return out


def _int(value: str) -> int | None:
    """vLLM's ``int(value)`` (blanks around the digits allowed), None where it raises ValueError."""
    try:
        return int(value)
    except ValueError:
        return None


def engine_rules(version: str | None, capability: tuple[int, int] | None, value: str | None,
                 unreadable: str | None = None, kv_cache_dtype: str = "auto", dtype: str | None = None,
                 mla: bool = False) -> tuple[VersionRules, str | None]:
    """The rules of the engine this release runs with VLLM_USE_V1 at ``value`` (None: unset) on this card, for this
    KV cache dtype, model dtype and attention (``v1_oracle.fallback``), and why the start cannot be predicted when the
    variable's value makes it so: a ``Refusal`` where vLLM refuses the start, else "cannot predict VLLM_USE_V1..." (an
    engine not modelled, or a value that cannot be read); the rules are the release's default ones then."""
    r = rules_on_device(version, capability, kv_cache_dtype, dtype, mla)
    v = r.version
    if not r.known or v >= IGNORED_SINCE or (value is None and unreadable is None):
        return r, None
    at = f"vLLM {r.display}"
    if unreadable is not None:
        return r, (f"cannot predict {USE_V1}: {at} selects its engine by it and its value cannot be read: "
                   f"{unreadable}")
    assert value is not None
    number = _int(value)
    if number is None:
        if v < ENV_SINCE:
            return r, f"cannot predict {USE_V1}={value!r}: {at} was not read for this variable (read from 0.6.5)"
        return r, Refusal(f"{USE_V1}={value!r}: {at} reads it as bool(int(value)) (vllm/envs.py), which raises "
                          f"\"ValueError: invalid literal for int() with base 10: {value!r}\", so vLLM refuses the "
                          "start before any memory is sized; set it to 0 or 1, or unset it")
    if v < V1_DEFAULT_SINCE:
        if number == 0:
            return r, None  # V0 is what this release runs anyway
        since = "" if v >= ENV_SINCE else " (releases before 0.6.5 were not read for it)"
        return r, (f"cannot predict {USE_V1}={value}: on {at} it opts into the V1 alpha engine{since}, whose memory "
                   "accounting (v1/worker/gpu_worker.py) is not modelled")
    if v >= V0_REMOVED_SINCE:
        if number:
            return r, None  # V1, the only engine
        return r, Refusal(f"{USE_V1}=0: {at} has no V0 engine and refuses the start before using any GPU memory "
                          "(`vllm serve` fails its `assert envs.VLLM_USE_V1`, entrypoints/openai/api_server.py@0.11.0; "
                          "LLM() raises \"Using V1 LLMEngine, but envs.VLLM_USE_V1=False\"); unset it or set it to 1")
    if number == 0:
        return as_v0(r), None
    feature = v1_oracle.fallback(v, capability, kv_cache_dtype, dtype, mla)
    if feature is None:
        return r, None
    card = f"a GPU of compute capability {capability[0]}.{capability[1]}" if capability else "this GPU"
    what = {"--kv-cache-dtype": f"with --kv-cache-dtype {kv_cache_dtype} on {card}",
            "--dtype torch.float32": "with --dtype float32"}.get(feature, f"on {card}")
    return r, Refusal(f"{USE_V1}={value}: {at} refuses it {what} ({v1_oracle.refusal(feature)[:-1]}, "
                      "engine/arg_utils.py _raise_or_fallback) before using any GPU memory; unset it to let vLLM fall "
                      "back to V0")
