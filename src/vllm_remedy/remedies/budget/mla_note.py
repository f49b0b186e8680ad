"""The plan's note for a pod whose VLLM_MLA_DISABLE turns a DeepSeek-style model's MLA off (``vllm.mla_env``).

Not a rung: the planner changes flags and the pod template's resources, never the container's env, and a variable
like this one is set on purpose (MLA kernels a card or build lacks, a numerics check). So, as with VLLM_USE_V1 (whose
refused variants the levers drop instead of unsetting it), the plan keeps the env and says what unsetting it would
give: the same flags with the MLA latent cache (``memory.mla_release``), sized by the same estimate.
"""

from __future__ import annotations

import dataclasses

from vllm_remedy.vllm import mla_env
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.versions import rules


def mla_env_note(model: ModelSpec, gpu: GpuSpec, s: EngineSettings, current: Estimate, required: float,
                 margin: float) -> str | None:
    """What unsetting VLLM_MLA_DISABLE would give, when the env turns MLA off and the current start falls short
    (does not fit, or holds fewer than ``required`` requests) but the same flags with MLA would start and hold them
    with the estimate margin to spare (the judge's ``spare`` test; a log's observed KV shortfall is not applied)."""
    r = rules(s.version)
    off, _ = mla_env.disabled(r.version, model.is_mla, s.mla_disable_env, s.mla_disable_env_unreadable)
    if not off or (current.fits and current.max_concurrency >= required):
        return None
    try:
        unset = estimate(model, gpu, dataclasses.replace(s, mla_disable_env=None))
    except CannotPredict:  # e.g. compressed-tensors on 0.7.1/0.7.2, whose MLA gate is not read
        return None
    if not unset.fits or unset.max_concurrency * (1 - margin) < required:
        return None
    return (f"{mla_env.ENV}={s.mla_disable_env} in the pod's env turns MLA off on vLLM {r.label}, so the cache holds K "
            f"and V of every head: unset, the current flags are predicted to fit with {unset.kv_cache_tokens:,} KV "
            f"tokens (max concurrency {unset.max_concurrency:.2f}x, against {current.kv_cache_tokens:,} now); not a "
            "step, since the planner does not change the container's env and the variable was set on purpose")
