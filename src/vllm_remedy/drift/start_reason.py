"""The words of check's ``start`` finding for a predicted failure: the outcome, the GPU, the failure's headline and
the figures that mean something for it.

Moved out of ``manifest_check`` (which runs the checks on a workload): pure formatting of a ``Prediction``.
"""

from __future__ import annotations

from vllm_remedy.remedies.predict import Prediction
from vllm_remedy.vllm.failures import FAILURES
from vllm_remedy.vllm.outcomes import Outcome, has_cache


def start_reason(prediction: Prediction, failed: str, refusal: str | None = None) -> str:
    """``predicted max_len_exceeds_kv on NVIDIA-L4 — <the failure's headline>: <the figures>``; a max-length refusal
    names the model's maximum and the env var that would allow more (``model_len.refusal``)."""
    e = prediction.estimate
    if e is None or e.fits:
        return failed
    if e.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL:  # a config refusal: the KV figures mean nothing
        head = FAILURES[e.outcome.failure].headline
        return f"predicted {e.outcome.value} — {head}: {refusal or f'max-model-len {e.max_model_len:,}'}"
    if e.outcome is Outcome.DTYPE_UNSUPPORTED:  # a config refusal too: the worker stops before loading anything
        head = FAILURES[e.outcome.failure].headline
        return f"predicted {e.outcome.value} on {prediction.gpu} — {head}: set --dtype half (float16) on this GPU"
    if e.outcome is Outcome.CONFIG_REFUSED and "vLLM refuses" in prediction.note:  # its words (config_refusal)
        return f"predicted {e.outcome.value} on {prediction.gpu} — {prediction.note}"
    if not has_cache(e.outcome):  # stopped before a KV cache exists: no KV or concurrency figures (outcomes)
        return f"predicted {e.outcome.value} on {prediction.gpu} — {FAILURES[e.outcome.failure].headline}"
    return (f"predicted {e.outcome.value} on {prediction.gpu} — {FAILURES[e.outcome.failure].headline}: KV cache "
            f"{e.kv_cache_tokens:,} tokens, maximum concurrency {e.max_concurrency:.2f}x at max-model-len "
            f"{e.max_model_len:,}")
