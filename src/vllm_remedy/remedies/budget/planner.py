"""``plan_budget``: the request, the policy-compliant base, and the ladder turned into Steps with reasons."""

from __future__ import annotations

import dataclasses

from vllm_remedy.errors import UserError
from vllm_remedy.policy import Policy, format_duration
from vllm_remedy.remedies.budget import reasons
from vllm_remedy.remedies.budget.judge import Judge
from vllm_remedy.remedies.budget.ladder import Rung, build
from vllm_remedy.remedies.budget.lever_notes import auto_fp8, auto_fp8_blocked, lever_notes, tp_refusals
from vllm_remedy.remedies.budget.levers import Context, tp_sizes
from vllm_remedy.remedies.budget.limits import Limits, limits, margin_shortfall
from vllm_remedy.remedies.budget.mla_note import mla_env_note
from vllm_remedy.remedies.budget.observed import KvObservation, kv_deficit_gib
from vllm_remedy.remedies.budget.observed import kv_scale as kv_scale_for
from vllm_remedy.remedies.budget.preferred import preferred_base, preferred_moves
from vllm_remedy.remedies.budget.request import BudgetRequest
from vllm_remedy.remedies.plan import Plan, Step, TemplateChange
from vllm_remedy.vllm import dtype_support, model_len
from vllm_remedy.vllm.catalog import PRODUCT_LABELS
from vllm_remedy.vllm.failures import FAILURES
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate, resolve
from vllm_remedy.vllm.memory.capture import capture_flag
from vllm_remedy.vllm.memory.core import batch_refused
from vllm_remedy.vllm.memory.kv_margin import KV_MARGIN_PERCENTILE
from vllm_remedy.vllm.memory.pinned import UNPIN_NOTE, UNPINNED, lifted, pinned, pinned_notes
from vllm_remedy.vllm.memory.settings import split_run, tp_split_problem
from vllm_remedy.vllm.outcomes import Failure, Outcome
from vllm_remedy.vllm.versions import rules

KIND = "BudgetPlan"
_STARTUP = frozenset(o.value for o in Outcome) - {"fits"}


def plan_budget(req: BudgetRequest) -> Plan:
    """The ladder of safe changes for runbook step 4, smallest first (see the package docstring)."""
    lim = limits(req.policy, req.gpu, req.target_concurrency, req.node_gpus)
    current = estimate(req.model, req.gpu, req.settings)
    subject = {"model": req.model.name, "gpu": req.gpu.product, "gpuMemoryGiB": req.gpu.total_gib,
               "vllmVersion": req.settings.version, "targetConcurrency": lim.target,
               "requiredConcurrency": round(lim.required, 2), "failure": req.failure.value if req.failure else None,
               "kvMargin": {"fraction": lim.kv_margin, "percentile": KV_MARGIN_PERCENTILE,
                            "source": "policy" if lim.kv_margin_from_policy else "held-out error"}}
    if req.failure is not None and FAILURES[req.failure].host_memory:
        return Plan(KIND, "outside_gpu_budget", "the container was killed for host memory (OOMKilled), not GPU memory",
                    current, notes=("raise the container's memory limit or the node's RAM; no vLLM GPU flag helps",),
                    subject=subject)
    notes: list[str] = [lim.margin_phrase, *pinned_notes(req.settings)]
    base, cap, problems = _base(req, lim, notes)
    mismatch = req.failure is not None and req.failure.value in _STARTUP and current.fits
    observed = req.observed or (KvObservation(tokens=req.logged_kv_tokens) if req.logged_kv_tokens else None)
    kv_scale, scaled = kv_scale_for(observed, req.model, req.gpu, req.settings) if observed else (1.0, None)
    if scaled:
        notes.append(scaled)
    if mismatch:
        notes.append(f"the estimator predicts the current settings fit but the log shows {req.failure}: "
                     "every step must improve on the current prediction by 10 %")
    deficit = kv_deficit_gib(observed, req.model, req.gpu, req.settings, kv_scale) if observed else 0.0
    judge = Judge(req.model, lim, current, req.settings, req.failure, kv_scale, mismatch, deficit)
    # a flag the base clamped goes to the policy's preferred value when that is safe at the full length (``preferred``)
    base, preferred = preferred_base(judge, req.gpu, base, preferred_moves(req.policy, req.settings, base, {
        "gpu-memory-utilization": (lim.util_min, lim.util_max),
        "max-num-seqs": (_policy_min(req.policy, "max-num-seqs"), lim.seqs_max),
        "max-num-batched-tokens": (_policy_min(req.policy, "max-num-batched-tokens"), lim.mnbt_max)}))
    # the refusal the estimate decided in vLLM's order leads (``_problems``); the TP size's own line is not repeated
    problems = _problems(req, lim, current, judge) + [
        p for p in problems if not (current.refused_by == "tp" and current.refusal and p.endswith(current.refusal))]
    # CUDA graphs ran short (observed, or predicted with nothing observed): the capture-size lever is live
    graphs = req.failure is Failure.CUDAGRAPH_CAPTURE_OOM or (current.graph_capture_oom and req.failure is None)
    # a pin that starts (else _base lifted it) but holds fewer requests than required: lifting it is a rung
    pin_short = pinned(base) and current.fits and judge.spare(current) < lim.kv_margin
    # the start dies in the memory profile (observed, or predicted with nothing observed): a smaller profile may
    # take a utilization with it (ladder step (d))
    profile = req.failure is Failure.PROFILE_OOM or (current.outcome is Outcome.PROFILE_OOM and req.failure is None)
    # no TP size within the bounds is one vLLM takes (``_base`` notes why): every rung would keep a refused size
    stuck = tp_split_problem(req.model, base.tp, split_run(req.model, req.gpu, base)) is not None
    if (blocked := auto_fp8_blocked(req, base)) is not None:  # every rung, the unchanged unit too, keeps the fp8 cache
        return Plan(KIND, "no_fitting_change", "; ".join(problems), current, (), (blocked, *notes), subject)
    ladder = iter(()) if stuck else build(
        Context(req.model, lim, req.gpu, graphs=graphs, pin_short=pin_short, profile=profile), judge, base, cap)
    first = next(ladder, None)
    problem = "; ".join(problems) or "none: the current settings are predicted to fit with headroom"
    if not problems and first is not None and _settles(_step(1, first, req, lim, cap, judge, preferred)):
        # in sync, as most of a fleet is: the rest of the ladder is never computed
        return Plan(KIND, "no_change_needed", problem, current, (),
                    tuple(notes + lever_notes(req, lim, [first], graphs)), subject)
    rungs = [first, *ladder] if first is not None else []
    steps = tuple(_step(i + 1, r, req, lim, cap, judge, preferred) for i, r in enumerate(rungs))
    notes += lever_notes(req, lim, rungs, graphs)
    if mla_note := mla_env_note(req.model, req.gpu, req.settings, current, lim.required, lim.kv_margin):
        notes.append(mla_note)  # the env keeps MLA off; unsetting it is not a rung (``mla_note``)
    if not steps:
        verdict = "no_fitting_change"
        notes.insert(0, "no change within the policy's bounds is predicted to start and meet the target with the "
                        "estimate margin")
    else:
        verdict = "change"
    return Plan(KIND, verdict, problem, current, steps, tuple(notes), subject)


def _settles(step: Step) -> bool:
    """The step sets no flag and changes nothing in the template: the current settings already are the plan."""
    return not step.set and step.template.empty


def _base(req: BudgetRequest, lim: Limits, notes: list[str]) -> tuple[EngineSettings, int, list[str]]:
    """The current settings brought inside the policy's bounds, the max-model-len cap, and what was off."""
    s, problems = req.settings, []
    explicit = s.max_model_len if s.max_model_len not in (None, -1) else None
    # The model's maximum caps the length unless vLLM would not refuse above it (vllm.model_len.cap).
    most = model_len.cap(req.model, s.version, s.allow_long_max_model_len, s.disable_sliding_window)
    cap = most if most is not None else explicit or req.model.max_model_len
    for bound in (lim.len_preferred or lim.len_max, explicit):
        if bound is not None:
            cap = min(cap, bound)
    if explicit is not None and explicit < lim.len_floor:
        problems.append(f"max-model-len {explicit} is below the policy minimum {lim.len_floor}")
        cap = lim.len_floor
    elif explicit is not None and explicit > cap:
        problems.append(f"max-model-len {explicit} is above the allowed {cap}")
    if s.max_model_len == -1:  # auto: vLLM fits the longest length the KV cache holds, which moves with the memory
        auto = estimate(req.model, req.gpu, s).max_model_len
        problems.append(f"max-model-len is auto (vLLM sizes it to what the KV cache holds: {auto:,} here, up to the "
                        f"model's {req.model.max_model_len:,}): set it explicitly")
    elif explicit is None:
        problems.append(f"max-model-len is implicit ({req.model.max_model_len:,} from the model): set it explicitly")
    util = min(max(s.gpu_memory_utilization, lim.util_min), lim.util_max)
    if util != s.gpu_memory_utilization:
        problems.append(f"gpu-memory-utilization {s.gpu_memory_utilization:g} is outside "
                        f"[{lim.util_min:g}, {lim.util_max:g}]")
    changes: dict[str, object] = {"max_model_len": cap, "gpu_memory_utilization": util}
    for name, value, lo, hi in (("max-num-seqs", s.max_num_seqs, None, lim.seqs_max),
                                ("max-num-batched-tokens", s.max_num_batched_tokens, None, lim.mnbt_max)):
        policy_min = _policy_min(req.policy, name) if lo is None else lo
        if value is not None and ((hi is not None and value > hi) or (policy_min and value < policy_min)):
            clamped = min(max(value, policy_min or value), hi or value)
            problems.append(f"{name} {value} is outside the policy's bounds")
            changes[name.replace("-", "_")] = clamped
    # the flag's bound, the node's GPUs and the policy's GPUs per pod (times a group's pods): a size the pods' GPU
    # count does not allow is the policy's problem too, said and moved as the flag's bound is, never kept silently
    engine = _engine_gpus(req, lim)
    hi = lim.tp_max if engine is None else min(lim.tp_max, engine)
    if s.tp < lim.tp_min or s.tp > hi:
        inside = tp_sizes(req.model, lim.tp_min, hi, req.gpu, s)
        problems.append(_tp_outside(s.tp, lim, engine, req.engine_pods))
        if inside:
            changes["tp"] = min(inside, key=lambda t: abs(t - s.tp))
        else:
            notes.append("no tensor-parallel-size within the bounds: " + tp_refusals(req, lim.tp_min, hi))
    elif (split := req.tp_refused) is not None:
        problems.append(f"vLLM refuses the tensor-parallel size: {split}")
        inside = tp_sizes(req.model, lim.tp_min, hi, req.gpu, s)
        if inside:  # the nearest size vLLM takes, the smaller on a tie: the TP lever still offers the larger ones
            changes["tp"] = min(inside, key=lambda t: (abs(t - s.tp), t))
        else:
            notes.append("no tensor-parallel-size within the bounds: " + tp_refusals(req, lim.tp_min, hi))
    card, kind = req.gpu.capability, req.model.model_types
    if dtype_support.refused(req.model.dtype, s.dtype, card, s.version, kind):  # vLLM refuses it on this card
        problems.append(f"dtype {dtype_support.resolved(req.model.dtype, s.dtype, card, s.version, kind)} is "
                        f"refused on {req.gpu.product} (compute capability below 8.0): --dtype float16")
        changes["dtype"] = "float16"  # the same 2 bytes per weight and KV element: no budget moves
    capped = dataclasses.replace(s, **changes)  # type: ignore[arg-type]
    # no TP size within the bounds is taken (noted above): nothing resolves, and every rung is refused the same way
    at_cap = None if tp_split_problem(req.model, capped.tp, split_run(req.model, req.gpu, capped)) else resolve(
        req.model, req.gpu, capped)
    # without chunked prefill the scheduler config refuses it (config_refused)
    if at_cap is not None and batch_refused(at_cap):
        # the smallest fix: the batch raised to the length, not the context cut to the batch (the ladder's
        # max-num-batched-tokens lever still halves it, with the length following, if the profile then runs short)
        changes["max_num_batched_tokens"] = at_cap.max_model_len
    if req.policy is not None and s.kv_cache_dtype.startswith("fp8") and not lim.fp8_allowed:
        problems.append(f"kv-cache-dtype {s.kv_cache_dtype} is not allowed by the policy")
        changes["kv_cache_dtype"] = "auto"
    elif req.policy is not None and not lim.fp8_allowed and (auto := auto_fp8(req, s)) is not None:
        problems.append(auto[0])
        if auto[1] is not None:
            changes["kv_cache_dtype"] = auto[1]
    if pinned(s) and (estimate(req.model, req.gpu, s).start != "fits" or req.failure not in (None, Failure.NONE)):
        problems.append("the KV cache's size is pinned by a flag and that start is predicted or seen to fail")
        changes.update(UNPINNED)  # back to the budget (pinned.UNPIN_NOTE says why, not a smaller pin)
        notes.append(UNPIN_NOTE)
    return dataclasses.replace(s, **changes), cap, problems  # type: ignore[arg-type]


def _engine_gpus(req: BudgetRequest, lim: Limits) -> int | None:
    """GPUs the policy lets one engine use: its GPUs per pod when it pins a product (drift's gpu-pinned rule holds
    the pod to that count), over each pod of a group; None: no such bound."""
    return None if lim.gpus_per_pod is None else lim.gpus_per_pod * max(req.engine_pods, 1)


def _tp_outside(tp: int, lim: Limits, engine: int | None, pods: int) -> str:
    """Why the running TP size is outside what the engine may run: the flag's bounds (or the node's GPUs), and the
    policy's GPUs per pod (``engine``: over the engine's ``pods``)."""
    bounds = f" is outside [{lim.tp_min}, {lim.tp_max}]" if not lim.tp_min <= tp <= lim.tp_max else ""
    if engine is None or tp <= engine:
        return f"tensor-parallel-size {tp}{bounds}"
    over = f" over {pods} pods" if pods > 1 else ""
    return (f"tensor-parallel-size {tp}{bounds}{' and' if bounds else ''} needs {tp} GPUs, the policy pins "
            f"{lim.gpus_per_pod} GPU(s) per pod (gpu.per_pod){over}")


def _policy_min(policy: Policy | None, flag: str) -> int | None:
    bounds = policy.flag_bounds(flag) if policy else None
    return getattr(bounds, "min", None)


def _problems(req: BudgetRequest, lim: Limits, cur: Estimate, judge: Judge) -> list[str]:
    out = []
    if req.failure is not None and req.failure not in (Failure.NONE, Failure.UNKNOWN):
        said = "predicted the same" if cur.start == str(req.failure) else f"predicted {cur.start}"
        out.append(f"observed {req.failure} ({said})")
    elif not cur.fits:  # a config-time refusal in the words the estimate decided (check's, estimate's outcome line)
        out.append(f"predicted {cur.outcome} — {cur.refusal}" if cur.refusal else f"predicted {cur.outcome}")
    elif cur.kv_allocation_oom:
        out.append(f"predicted {Failure.KV_CACHE_ALLOCATION_OOM}: the {cur.kv_cache_gib:.2f} GiB KV cache the flag "
                   f"sizes does not fit what the card leaves after the weights and activations")
    elif cur.graph_capture_oom:
        out.append(f"predicted {Failure.CUDAGRAPH_CAPTURE_OOM}: the CUDA graphs ({cur.cudagraph_gib:.2f} GiB) do not "
                   f"fit what the budget leaves on the card")
    if cur.fits:
        spare = judge.spare(cur)
        if spare < 0:
            scaled = " (scaled to the log)" if judge.factor(cur) < 1.0 else ""
            out.append(f"predicted max concurrency {cur.max_concurrency * judge.factor(cur):.2f}x{scaled} is below the "
                       f"required {lim.required:.2f}x at max-model-len {cur.max_model_len:,}")
        elif spare < lim.kv_margin:
            out.append(f"the predicted KV cache for {lim.required:.2f}x at max-model-len {cur.max_model_len:,} "
                       f"{margin_shortfall(spare, lim.kv_margin)}")
        free, margin = cur.total_gib - cur.peak_gib, lim.headroom_for(req.gpu, req.settings.version)
        if free < margin:
            out.append(f"predicted peak leaves {free:.2f} GiB free, below the {margin:.2f} GiB margin")
    if req.tp_refused:
        # no resolved settings: the TP size itself is refused (``_base`` names it), whichever refusal vLLM prints
        # first (config_refused, or max_len_exceeds_model when the length check runs before it)
        return out
    res = resolve(req.model, req.gpu, req.settings)
    if batch_refused(res):
        out.append(f"max-num-batched-tokens {res.mnbt} < max-model-len {res.max_model_len} without chunked prefill")
    return out


def _flags(cur: EngineSettings, new: EngineSettings) -> dict[str, str]:
    """Canonical flags to set so that ``cur`` becomes ``new`` (max-model-len always explicit)."""
    out: dict[str, str] = {}
    if new.max_model_len != cur.max_model_len:
        out["max-model-len"] = str(new.max_model_len)
    pairs = (("gpu-memory-utilization", cur.gpu_memory_utilization, new.gpu_memory_utilization),
             ("max-num-seqs", cur.max_num_seqs, new.max_num_seqs),
             ("max-num-batched-tokens", cur.max_num_batched_tokens, new.max_num_batched_tokens),
             ("kv-cache-dtype", cur.kv_cache_dtype, new.kv_cache_dtype),
             ("dtype", cur.dtype, new.dtype),
             ("tensor-parallel-size", cur.tp, new.tp))
    for flag, old, value in pairs:
        if value != old and value is not None:
            out[flag] = f"{value:g}" if isinstance(value, float) else str(value)
    if new.cudagraph_capture_size != cur.cudagraph_capture_size and new.cudagraph_capture_size is not None:
        flag = capture_flag(rules(new.version))
        if flag is not None:
            out[flag] = str(new.cudagraph_capture_size)
    if new.enforce_eager and not cur.enforce_eager:
        out["enforce-eager"] = "true"
    return out


def _step(rank: int, rung: Rung, req: BudgetRequest, lim: Limits, cap: int, judge: Judge,
          preferred: tuple[str, ...] = ()) -> Step:
    """One rung as a Step; ``preferred``: the flags the base set to the policy's preferred value (``preferred``),
    which the first rung's reason names as such rather than as a bound."""
    rung = dataclasses.replace(rung, estimate=judge.shown(rung.estimate))  # the KV cache the log vouches for
    flags = _flags(req.settings, rung.settings)
    bounded = [f for f in flags if f not in ("max-model-len", "dtype")]  # what ``_base`` clamped to the policy
    # the base raised the batch vLLM refuses (config_refused): a fix of its own, not a policy bound
    raised = "max-num-batched-tokens" in flags and _batch_refused(req) and (
        (rung.settings.max_num_batched_tokens or 0) > (req.settings.max_num_batched_tokens or 0))
    if rung.lever == "max-model-len" and len(bounded) == 1 and "max-model-len" not in flags:
        rung = dataclasses.replace(rung, lever=bounded[0], bounded=True)  # named by the flag that changes
    if raised:
        bounded.remove("max-num-batched-tokens")
    template = TemplateChange(gpu_resource=lim.gpu_resource)
    if rung.gpu.product != req.gpu.product:
        drop = tuple(k for k in req.node_selector if k in PRODUCT_LABELS and k != lim.selector_key)
        template = dataclasses.replace(template, node_selector={lim.selector_key: rung.label or rung.gpu.product},
                                       drop_node_selector=drop)
    if rung.settings.tp != req.settings.tp:  # a pod asks for the policy's GPUs per pod when it pins them (the pin
        # step writes that count; fewer would undo it run after run), the TP size within them (``_base``, the lever)
        template = dataclasses.replace(template, gpu_limit=max(rung.settings.tp, lim.gpus_per_pod or 1))
    temporary = rung.lever == "enforce-eager"
    short = None
    if rung.estimate.max_model_len < cap:  # was the full length refused by the estimate margin alone?
        spare = judge.margin_only(dataclasses.replace(rung.settings, max_model_len=cap), rung.gpu)
        short = margin_shortfall(spare, lim.kv_margin) if spare is not None else None
    reason = reasons.explain(rung, req.settings, req.gpu, lim, cap, short, raised)
    engine = _engine_gpus(req, lim)
    per_pod = engine is not None and engine < req.settings.tp <= lim.tp_max  # ``_base`` held it to the pods' GPUs
    if rung.bounded and lim.tp_min <= req.settings.tp <= lim.tp_max and not per_pod and req.tp_refused:
        reason = reason.replace(" (the policy's bound on --tensor-parallel-size)",  # ``_base`` left a refused TP
                                f" (vLLM refuses tensor-parallel-size {req.settings.tp} for this model)")
    elif rung.bounded and per_pod:
        reason = reason.replace(" (the policy's bound on --tensor-parallel-size)",
                                f" (the policy's {lim.gpus_per_pod} GPU(s) per pod, gpu.per_pod)")
    if rung.bounded and rung.lever in preferred:
        reason = reason.replace(f" (the policy's bound on --{rung.lever})", f" (the policy's preferred --{rung.lever}, "
                                f"back inside its bounds)")
    if rung.lever == "max-model-len" and bounded:
        within = ", ".join(f"--{f} {flags[f]}" for f in bounded)
        where = "the policy's preferred values" if set(bounded) <= set(preferred) else "within the policy's bounds"
        where = f"at {where}" if where.startswith("the") else where
        reason = f"{reason.removesuffix('nothing else changes')}{within} {where}".replace("; ; ", "; ")
    unset = lifted(req.settings, rung.settings)
    if unset and rules(rung.settings.version).kv_sized_after_warmup:
        # 0.34 defaults to 1.0 once no flag pins the cache (pinned.NO_EXTENSIBLE_DEFAULT_UTIL): write what was planned
        flags.setdefault("gpu-memory-utilization", f"{rung.settings.gpu_memory_utilization:g}")
    if unset:  # the pin is lifted in the base every rung starts from (``_base``)
        reason = (f"{reason.removesuffix('; nothing else changes')}; without "
                  f"{' / '.join('--' + f for f in unset)} the --gpu-memory-utilization budget sizes the KV cache")
    if temporary:
        reason = f"TEMPORARY, revert within {format_duration(int(lim.eager_max.total_seconds()))}: {reason}"
    return Step(rank=rank, lever=rung.lever, reason=reason, prediction=rung.estimate, set=flags, template=template,
                unset=unset, temporary=temporary,
                revert_after=lim.eager_max if temporary else None, gpu=rung.gpu.product)


def _batch_refused(req: BudgetRequest) -> bool:
    """Whether vLLM refuses the running --max-num-batched-tokens below max-model-len (``_base`` raises it)."""
    try:
        return batch_refused(resolve(req.model, req.gpu, req.settings))
    except UserError:
        return False
