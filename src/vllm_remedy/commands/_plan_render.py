"""``plan``'s human view: the subject, problem, current prediction, the ladder as a table, notes and the verdict."""

from __future__ import annotations

from vllm_remedy.remedies.plan import Plan
from vllm_remedy.vllm.memory import Estimate
from vllm_remedy.vllm.outcomes import NOT_SIZED, Failure, has_cache, sized

_VERDICTS = {
    "change": "change: {n} candidate change(s) predicted to fit, smallest first",
    "no_change_needed": "no change needed: the current settings are predicted to fit with headroom",
    "no_fitting_change": "no fitting change: nothing within the bounds is predicted to start and meet the target",
    "outside_gpu_budget": "outside the GPU budget: no vLLM flag fixes this failure",
    "refused_as_written": "refused as written: vLLM stops the start; change the command as the notes say (no flag the "
                          "planner sets fixes it)",
}


def _current(cur: Estimate, refused: int = 0, layout: bool = False) -> str:
    """The current prediction in one line; a start vLLM refuses at config time has no KV cache or peak to show, and
    one it refuses at argument parsing (``refused``: its exit code) never reaches the engine: its figures are the
    planned reading's;
    nor does one that needs more GPUs than its pod gets (``layout``)."""
    if refused:
        return (f"{Failure.ARGUMENT_REFUSED.value} — vLLM's command line stops the start as written (exit "
                f"{refused}), nothing is loaded")
    if layout:
        return (f"{Failure.WORLD_SIZE_EXCEEDS_GPUS.value} — vLLM stops before loading anything: the pod gets fewer "
                "GPUs than the engine spans")
    if not sized(cur.outcome):
        return f"{cur.start} at max-model-len {cur.max_model_len:,} — {NOT_SIZED}, nothing is loaded"
    if not has_cache(cur.outcome):  # stopped before a KV cache exists: no KV or concurrency figures
        return f"{cur.start} at max-model-len {cur.max_model_len:,} — no KV cache, peak {cur.peak_gib:.2f} of " \
               f"{cur.total_gib:.2f} GiB"
    return (f"{cur.start} — KV {cur.kv_cache_tokens:,} tokens, max concurrency {cur.max_concurrency:.2f}x at "
            f"{cur.max_model_len:,} tokens, peak {cur.peak_gib:.2f} of {cur.total_gib:.2f} GiB")


def render(plan: Plan, version: str, refused: int = 0, layout: bool = False) -> str:
    """Human view: subject, problem, current prediction (``refused``: as written, vLLM stops it with this exit
    code), the ladder as a table, notes, verdict."""
    cur, sub = plan.current, plan.subject
    lines = [
        f"BudgetPlan: {sub['model']}{f' (config: {c})' if (c := sub.get('config')) else ''} on {sub['gpu']} "
        f"({cur.total_gib:.2f} GiB), vLLM {version}",
        f"problem:  {plan.problem}",
        f"current:  {_current(cur, refused, layout)}",
        f"target:   {sub['targetConcurrency']:g} concurrent requests (max concurrency ≥ "
        f"{sub['requiredConcurrency']:.2f}x)",
    ]
    if plan.steps:
        rows = [("rank", "change", "KV tokens", "max conc.", "outcome", "reason")]
        for s in plan.steps:
            p = s.prediction
            change = s.describe() + (f" [on {s.gpu}]" if s.gpu and s.gpu != sub["gpu"] else "")
            rows.append((str(s.rank), change, f"{p.kv_cache_tokens:,}", f"{p.max_concurrency:.2f}x",
                         p.outcome.value, s.reason))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines.append("")
        for row in rows:
            cells = [row[i].ljust(widths[i]) if i != 2 and i != 3 else row[i].rjust(widths[i]) for i in range(5)]
            lines.append("  ".join([*cells, row[5]]).rstrip())
    if plan.notes:
        lines.append("")
        lines += [f"note: {n}" for n in plan.notes]
    verdict = _VERDICTS[plan.verdict].format(n=len(plan.steps))
    if layout:  # outside the budget's levers, not beyond every flag: the parallel sizes are flags too
        verdict = "outside the GPU budget: the pod's GPUs cannot hold the engine; change its parallel sizes or GPUs"
    lines += ["", "verdict: " + verdict]
    return "\n".join(lines)
