"""The policy's kv_cache_fp8 rule judged on the cache a running unit gets, not the flag it types: from 0.14.0
``--kv-cache-dtype auto`` on a ModelOpt checkpoint whose KV scheme is FP8 runs fp8_e4m3 (``vllm.kv_auto``). Apart from
``drift.checks`` (one rule, and that module is at its size limit)."""

from __future__ import annotations

from vllm_remedy.drift.checks import DRIFT, Check
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.predict import Prediction


def check_kv_auto(policy: Policy, prediction: Prediction) -> Check | None:
    """Drift when the policy forbids an fp8 KV cache and the prediction says ``auto`` resolves to one; None (no
    check shown) for every other unit, as the flag-bounds check already judges a typed fp8 value."""
    if policy.kv_cache_fp8.allowed or not prediction.kv_auto:
        return None
    return Check("kv-cache-dtype", DRIFT, f"{prediction.kv_auto}; the policy forbids an fp8 KV cache (kv_cache_fp8)")
