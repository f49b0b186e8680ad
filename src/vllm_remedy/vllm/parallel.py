"""Tensor × pipeline parallelism across a multi-node group (LeaderWorkerSet + Ray), for the memory model (pure).

Why a separate step: the memory model splits weights and KV cache over ``tensor-parallel-size`` GPUs.
A multi-node vLLM also shards layers over ``pipeline-parallel-size`` stages, one or more per node, so each
GPU holds 1/(TP×PP) of the weights and of the per-token KV cache — the same share as TP×PP-way tensor
parallelism. :func:`group_flags` rewrites the flags so the estimator sees that world size.
"""

from __future__ import annotations

from collections.abc import Mapping

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline.flags import canonical_key

TP, PP = "tensor-parallel-size", "pipeline-parallel-size"


def parallel_sizes(flags: Mapping[str, str]) -> tuple[int, int]:
    """(tensor-parallel-size, pipeline-parallel-size), each 1 when unset; a UserError for a non-integer."""
    norm = {canonical_key(k): v for k, v in flags.items()}
    out = []
    for key in (TP, PP):
        raw = str(norm.get(key, "1")).strip()
        try:
            out.append(int(raw))
        except ValueError:
            raise UserError(f"{key}: {raw!r} is not an integer") from None
    return out[0], out[1]


def world_size(flags: Mapping[str, str]) -> int:
    """GPUs one engine spans: TP × PP (across the nodes of its group)."""
    tp, pp = parallel_sizes(flags)
    return tp * pp


def group_flags(flags: Mapping[str, str]) -> dict[str, str]:
    """``flags`` as the memory model must see them: TP×PP as the tensor-parallel split, no pipeline flag."""
    tp, pp = parallel_sizes(flags)
    if pp == 1:
        return dict(flags)
    out = {k: v for k, v in flags.items() if canonical_key(k) not in (TP, PP)}
    out[TP] = str(tp * pp)
    return out
