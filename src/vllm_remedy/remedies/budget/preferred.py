"""An out-of-bounds flag goes to the policy's ``preferred`` value, not to the bound nearest the running value.

``planner._base`` clamps a flag outside the policy's bounds to the nearest bound (``--gpu-memory-utilization 0.35``
under ``[0.8, 0.92]`` becomes 0.8). The flag must be written either way, and the policy says what to write when it
must: "`preferred` is what budget writes when it must set a flag" (policies/default.yaml). The policy's preferred
values are usually its known-good unit's (0.90 in policies/llama-8b.yaml), so the clamp to the minimum made the
ladder's first rung cut ``--max-model-len`` 16384 → 14848 at 0.8, a unit drift then rejects, where 0.90 keeps 16384.

So the base takes the preferred values of the flags it had to move, when each preferred lies within the bounds and
the base is then safe at the full length (``Judge.accept``); otherwise the clamp stays, and the ladder cuts the
context or pulls the other levers from it exactly as before (each of them still the smallest change from there).
"""

from __future__ import annotations

import dataclasses

from vllm_remedy.policy import Policy
from vllm_remedy.remedies.budget.judge import Judge
from vllm_remedy.vllm.catalog import GpuSpec
from vllm_remedy.vllm.memory import EngineSettings

#: The flags ``planner._base`` clamps to the policy's bounds, with their EngineSettings fields.
CLAMPED = (("gpu-memory-utilization", "gpu_memory_utilization"), ("max-num-seqs", "max_num_seqs"),
           ("max-num-batched-tokens", "max_num_batched_tokens"))


def preferred_moves(policy: Policy | None, running: EngineSettings, base: EngineSettings,
                    bounds: dict[str, tuple[float | None, float | None]]) -> dict[str, float]:
    """Field → the policy's preferred value, for each flag the base moved because the running value is outside the
    bounds (``bounds``: flag → the (min, max) the base clamped to) and whose preferred lies inside them."""
    if policy is None:
        return {}
    out: dict[str, float] = {}
    for flag, field in CLAMPED:
        was, now = getattr(running, field), getattr(base, field)
        lo, hi = bounds.get(flag, (None, None))
        want = policy.preferred(flag)
        if was is None or now == was or not isinstance(want, int | float) or want == now:
            continue
        outside = (lo is not None and was < lo) or (hi is not None and was > hi)
        clamp = min(max(was, lo if lo is not None else was), hi if hi is not None else was)
        inside = (lo is None or want >= lo) and (hi is None or want <= hi)
        if outside and inside and now == clamp:  # the base's clamp, not a later fix of its own (a raised batch)
            out[field] = want
    return out


def preferred_base(judge: Judge, gpu: GpuSpec, base: EngineSettings,
                   moves: dict[str, float]) -> tuple[EngineSettings, tuple[str, ...]]:
    """``base`` with the preferred values that keep it safe at its full length: all of them, else the first single
    one that does; the flags so set (dashed names), or ``base`` unchanged and ``()``."""
    if not moves:
        return base, ()
    names = {field: flag for flag, field in CLAMPED}
    tries = [moves, *({f: v} for f, v in moves.items())] if len(moves) > 1 else [moves]
    for chosen in tries:
        candidate = dataclasses.replace(base, **chosen)  # type: ignore[arg-type]
        if judge.accept(candidate, gpu) is not None:
            return candidate, tuple(names[f] for f in chosen)
    return base, ()
