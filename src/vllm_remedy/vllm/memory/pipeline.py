"""Pipeline parallelism is not sized by the memory model: any ``--pipeline-parallel-size`` above 1 is "cannot predict".

Why not a number: vLLM splits the decoder layers over the stages (``get_pp_indices``, model_executor/models/utils.py),
puts the embedding on the first stage and the LM head (and the sampler's logits) on the last, and sizes each stage's KV
cache from that stage's own free memory; the engine then keeps the smallest block count of all stages. Weights, the
profile's activations and the KV cache therefore differ per stage, and none of it matches the one-GPU figures the
estimate computes — which ignored the flag and printed the PP = 1 cache. Until the stages are modelled (and measured),
the answer is unknown, except where vLLM refuses the start before any stage exists (a length above the model's:
the estimate keeps that verdict). Multi-node groups (LeaderWorkerSet) are sized by ``vllm.parallel.group_flags``.
"""

from __future__ import annotations


def pipeline_unmodelled(pp: int) -> str | None:
    """Why a start with ``pp`` pipeline stages cannot be sized, or None for one stage."""
    if pp <= 1:
        return None
    return (f"cannot predict --pipeline-parallel-size {pp}: pipeline parallel is not modelled (each stage holds its "
            "own layers' weights and KV cache, the embedding on the first and the LM head on the last; the memory "
            "model sizes one stage holding the whole model)")
