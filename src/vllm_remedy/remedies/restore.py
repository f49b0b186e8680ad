"""Runbook step 1, "restore service": roll back a crash-looping revision, or shed load when nothing was deployed.

Pure: the RolloutHistory and Pods facts (plain data), the policy and the cluster time in; a
:class:`RestoreDecision` out. The rules, in order:

1. No pod of the current revision is crash-looping → nothing to do (a healthy or still-rolling Deployment).
2. The crash is OOM *under load* (the server had come up) and the current revision is not a fresh deploy
   (older than ``confirm.stable_for``, marked known-good, or our own load shedding) → shed load: lower
   ``--max-num-seqs`` / ``--max-model-len`` to ``load_shedding`` and, when ``fallback`` names an HTTPRoute,
   move ``shift_percent`` of the traffic to the fallback backend.
3. Otherwise roll back to an earlier revision chosen by *evidence*, never by position: candidates in rank
   order (marked known-good by ``confirm``, then matching a policy ``known_good`` unit, then the rest, each
   newest first), skipping — with the reason in the output — every one seen crash-looping or OOMKilled
   (recorded on its ReplicaSet), with no schedulable node for its pods, or predicted by the memory model to
   fail on the GPU its pods would get now (``remedies.evidence``), or serving another model than the revision
   dying now (``restore_models.model_swap``: only ``forced`` swaps the model). The decision names the rule.
4. No candidate survives → never a known-bad revision: hand over to runbook step 4 (the budget planner's
   smallest change on the last revision that served: the newest one held back only by where its pods would
   run now), or refuse with every reason when no such revision exists (under load: shed instead).

``forced`` (host data ``revision``) overrides the choice: the operator's revision, still predicted and shown,
with whatever evidence speaks against it printed as a warning.

The route half of shedding (moving traffic to the fallback and back) is ``remedies.fallback``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, parse_rfc3339, stamp_seconds, template_digest
from vllm_remedy.kube.health import FLAP_RESTARTS, flapping
from vllm_remedy.kube.history import Revision, earlier_numbers, revisions_from_rows
from vllm_remedy.kube.rollout import RULE_FORCED, NoRollbackTarget, choose_rollback, earlier_revisions, policy_pin
from vllm_remedy.policy import Policy, parse_flag_int
from vllm_remedy.remedies.evidence import (
    EventCrash,
    StartCheck,
    against,
    certain_refusal,
    crashes_by_revision,
    crashes_in_events,
    credible_marks,
    rejector,
    serving_revisions,
    standing_crash,
    standing_event_crash,
)
from vllm_remedy.remedies.predict import failed_prediction, predict_template
from vllm_remedy.remedies.restore_models import ModelKeys, first_of, hub_refused, in_scope, model_swap
from vllm_remedy.remedies.restore_policy import policy_conflicts
from vllm_remedy.vllm.failures import failure_class

NONE, ROLLBACK, SHED, REFUSE, HANDOVER = "none", "rollback", "shed-load", "refuse", "budget"
#: Failed restarts that count as a crash loop even while the container is briefly running again.
RESTARTS = FLAP_RESTARTS


@dataclass(frozen=True)
class RestoreDecision:
    """What step 1 does to one Deployment and why (``rule``/``detail`` say which revision rule chose it)."""

    action: str
    reason: str
    current: int | None = None
    revision: int | None = None
    replicaset: str | None = None
    template: Mapping[str, Any] = field(default_factory=dict)
    rule: str = ""
    detail: str = ""
    failures: Mapping[str, int] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def revisions(history: Mapping[str, Any]) -> list[Revision]:
    """The RolloutHistory fact's rows as ``kube.history.Revision`` objects."""
    return revisions_from_rows(history.get("revisions") or [])


def crash_looping(c: Mapping[str, Any]) -> bool:
    """A container row of the Pods fact that died with a failure and has not been Ready since
    (``kube.health.ContainerHealth.crash_looping``: steady between back-offs, not only in CrashLoopBackOff)."""
    return bool(c.get("crash_looping"))


def ready_for(pod: Mapping[str, Any], now: float) -> float | None:
    """Cluster seconds a Pods-fact row has been Ready (a restart resets its Ready condition, so this is also how
    long it has been stable); None when it is not Ready or says not since when."""
    if not pod.get("ready") or not pod.get("ready_since"):
        return None
    try:
        return max(0.0, now - parse_rfc3339(str(pod["ready_since"]), f"pod {pod.get('name')} ready since"))
    except UserError:
        return None


def _flapping(pod: Mapping[str, Any], now: float | None, stable: float) -> bool:
    """Ready again, but for less than ``stable`` seconds (``kube.health.flapping``, drift's rule too)."""
    return flapping(bool(pod.get("ready")), pod.get("ready_since"), now, stable)


def crash_failures(pods: Mapping[str, Any], container: str | None = None, *, now: float | None = None,
                   stable: float = 0.0) -> dict[str, int]:
    """Failure kind → count over crash-looping pods of the current revision (``unknown`` when no log said).

    With ``now`` (cluster time), a pod Ready for less than ``stable`` seconds after repeated failed
    restarts counts too: it is between two crashes, not recovered.
    """
    out: dict[str, int] = {}
    for pod in pods.get("pods") or []:
        if not pod.get("new") or pod.get("deleting"):
            continue
        between = _flapping(pod, now, stable)
        kinds = [((c.get("startup") or {}).get("failure") or "unknown") for c in pod.get("containers") or []
                 if (container is None or c.get("name") == container) and (crash_looping(c) or (
                     between and c.get("failed") and int(c.get("restarts") or 0) >= RESTARTS))]
        for kind in kinds[:1]:
            out[kind] = out.get(kind, 0) + 1
    return dict(sorted(out.items()))


def _fresh_deploy(history: Mapping[str, Any], policy: Policy, keys: Keys, now: float | None) -> bool:
    """Was the current revision deployed recently (and by someone else than our load shedding)?

    Our own last write says when the revision running now came — when its template is the one that write left
    (``Keys.last_action_template``): a rollback reuses an old ReplicaSet, whose creation time says nothing, and a
    colleague's edit since copies our annotations onto its new ReplicaSet but is not our template. Load shedding
    we did is no fresh deploy; any other template write of ours within ``confirm.stable_for`` is: a revision
    restore put back minutes ago that now dies under load is rolled back from, not defended by shedding load.
    """
    row = next((r for r in history.get("revisions") or [] if r.get("number") == history.get("current_revision")), None)
    if row is None:
        return False
    notes = row.get("annotations") or {}
    stable = policy.confirm.stable_for.total_seconds()
    action, digest = history.get("last_action"), history.get("last_action_template")
    ours = bool(digest) and digest == template_digest(row.get("template"))
    if (ours and action == SHED) or (not digest and notes.get(keys.last_action) == SHED):  # older: no digest
        return False
    if ours and action and now is not None:
        at = stamp_seconds(history.get("last_action_at"))
        if at is not None and now - at < stable:
            return True
    # a mark withdrawn because it died under load still proves it was not a fresh deploy (the record is
    # written first in the same run, and must not turn "shed load" into "roll back")
    if row.get("known_good") or notes.get(keys.known_good_withdrawn):
        return False
    if now is None or not row.get("created"):
        return True
    created = stamp_seconds(row["created"])
    return created is None or now - created < stable


def decide_restore(history: Mapping[str, Any], pods: Mapping[str, Any], policy: Policy, *,
                   container: str | None = None, now: float | None = None,
                   nodes: Sequence[Mapping[str, Any]] | None = None, forced: int | None = None,
                   events: Sequence[Mapping[str, Any]] | None = None, override: bool = False,
                   cannot_start: StartCheck | None = None, model_keys: ModelKeys | None = None) -> RestoreDecision:
    """Step 1's decision for one Deployment (see the module docstring for the rules).

    ``nodes`` (the cluster's Node objects, None when unreadable) say where each candidate's pods would go now;
    ``events`` (the PodEvents fact's rows) tell of earlier revisions' pods that crash-looped and are gone;
    ``forced`` is the operator's revision (host data ``revision``), restored despite evidence only with
    ``override`` (host data ``override=evidence``); ``cannot_start`` is the kind's own start verdict (an LWS
    group's world size), weighed as a failed prediction; ``model_keys`` say under which environment each revision's
    model was resolved (:data:`ModelKeys`), so each candidate is predicted on its own model and revision.
    """
    keys = keys_of(policy)
    history, doubted = credible_marks(history, keys, now)
    in_events = crashes_in_events(history.get("revisions") or [], events, now, serving_revisions(pods))
    if forced is not None:
        dying = crash_failures(pods, container, now=now, stable=policy.confirm.stable_for.total_seconds())
        decision = _forced(history, keys, forced, container, nodes, in_events, override, cannot_start, dying,
                           model_keys)
        return replace(decision, warnings=(*doubted, *decision.warnings))
    return replace(decision := _decide(history, pods, policy, keys, container, now, nodes, in_events, cannot_start,
                                       model_keys), warnings=(*doubted, *decision.warnings))


def _decide(history: Mapping[str, Any], pods: Mapping[str, Any], policy: Policy, keys: Keys, container: str | None,
            now: float | None, nodes: Sequence[Mapping[str, Any]] | None, in_events: Mapping[int, EventCrash],
            cannot_start: StartCheck | None = None, model_keys: ModelKeys | None = None) -> RestoreDecision:
    current = history.get("current_revision")
    failures = crash_failures(pods, container, now=now, stable=policy.confirm.stable_for.total_seconds())
    if not failures:
        stuck = [r for r in pods.get("pods") or [] if r.get("unschedulable") and r.get("new") and not r.get("deleting")]
        if stuck:  # not step 1's case, but the operator at 3 a.m. must hear why nothing happens
            return RestoreDecision(NONE, f"revision {current}: no pod is crash-looping, but {len(stuck)} new pod(s) "
                                   f"cannot be scheduled ({stuck[0]['name']}: {stuck[0]['unschedulable']}); restore "
                                   "rolls back crash loops only: see deploys/diagnose.py, then deploys/pin_gpu.py "
                                   "or free GPUs", current=current)
        return RestoreDecision(NONE, f"revision {current}: no pod is crash-looping", current=current)
    seen = ", ".join(f"{n} pod(s) {k}" for k, n in failures.items())
    under_load = all(failure_class(kind).phase == "load" for kind in failures)  # the server had come up
    if under_load and not _fresh_deploy(history, policy, keys, now):
        return RestoreDecision(SHED, f"revision {current} crash-loops with OOM under load ({seen}) and nothing was "
                               "deployed recently: shed load", current=current, failures=failures)
    row = next((r for r in history.get("revisions") or [] if r.get("number") == current), {})
    now_line = f"revision {current} ({row.get('replicaset')}): the current revision, dying now ({seen})"
    try:
        choice = choose_rollback(revisions(history), int(current or 0), keys=keys,
                                 pinned=policy_pin(policy.known_good, container),
                                 reject=first_of(model_swap(row.get("template"), container),
                                                 in_scope(model_keys, rejector(keys, container, nodes,
                                                                               crashes_by_revision(pods, container),
                                                                               in_events, cannot_start), container)),
                                 conflicts=in_scope(model_keys, policy_conflicts(policy, container)))
    except NoRollbackTarget as exc:
        if under_load:
            return RestoreDecision(SHED, f"revision {current} crash-loops with OOM under load ({seen}) and {exc}: "
                                   "shed load", current=current, failures=failures, skipped=(now_line, *exc.skipped))
        base = served_base(history, keys, container, policy, in_events, cannot_start, model_keys)
        if base is not None:
            return RestoreDecision(HANDOVER, f"revision {current} crash-loops ({seen}) and {exc}: no rollback; "
                                   f"runbook step 4 instead — the budget's smallest change on revision "
                                   f"{base.number}, the last that served", current=current, revision=base.number,
                                   replicaset=base.replicaset, template=base.template, rule="budget handover",
                                   failures=failures, skipped=(now_line, *exc.skipped))
        return RestoreDecision(REFUSE, f"revision {current} crash-loops ({seen}) and {exc}; no earlier revision "
                               "served that a budget change could start from: see deploys/diagnose.py, then "
                               "deploys/budget.py", current=current, failures=failures,
                               skipped=(now_line, *exc.skipped))
    rev = choice.revision
    return RestoreDecision(ROLLBACK, f"revision {current} crash-loops ({seen}); roll back to revision {rev.number} "
                           f"({choice.rule}: {choice.detail})", current=current, revision=rev.number,
                           replicaset=rev.replicaset, template=rev.template, rule=choice.rule, detail=choice.detail,
                           failures=failures, skipped=(now_line, *choice.skipped))


def keys_of(policy: Policy) -> Keys:
    """The policy's annotation keys."""
    return Keys(policy.annotation_prefix)


def _forced(history: Mapping[str, Any], keys: Keys, forced: int, container: str | None,
            nodes: Sequence[Mapping[str, Any]] | None, in_events: Mapping[int, EventCrash], override: bool,
            cannot_start: StartCheck | None = None, dying: Mapping[str, int] | None = None,
            model_keys: ModelKeys | None = None) -> RestoreDecision:
    current = history.get("current_revision")
    rev = next((r for r in revisions(history) if r.number == forced), None)
    if rev is None:  # a rollback renumbers its ReplicaSet and keeps the old number in revision-history
        rev = next((r for r in revisions(history) if str(forced) in earlier_numbers(r.annotations)), None)
        if rev is not None and rev.number == current:
            return _forced_current(f"{forced} is the current revision (renumbered {rev.number} when it was rolled "
                                   "back to)", current, dying, override)
    if rev is None:
        return RestoreDecision(REFUSE, f"host data revision: {forced} is not in the rollout history of "
                               f"{history.get('kind') or 'deployment'} {history.get('deployment')} (revisions: "
                               f"{', '.join(str(r.number) for r in revisions(history))})", current=current)
    if rev.number == current:
        return _forced_current(f"{forced} is the current revision", current, dying, override)
    doubt = in_scope(model_keys, lambda r: against(r, keys, container, nodes, None, in_events,
                                                   cannot_start=cannot_start), container)(rev)
    named = f"revision {forced}" + (f" (now numbered {rev.number})" if rev.number != forced else "")
    never = (cannot_start(rev) if cannot_start is not None else None) or (  # vLLM's refusal is always also a doubt
        in_scope(model_keys, lambda r: certain_refusal(r, container, nodes) or hub_refused(r, container))(rev)
        if doubt else None)
    if never:  # vLLM refuses it before it loads anything: no override makes it start, so none is offered
        return RestoreDecision(REFUSE, f"host data revision: {named} is not restored: it cannot start ({never}); "
                               "name another revision", current=current)
    if doubt and not override:
        return RestoreDecision(REFUSE, f"host data revision: {named} is not restored: {doubt}; to restore it "
                               "anyway, add --data override=evidence", current=current)
    return RestoreDecision(ROLLBACK, f"the operator forced {named} (host data revision)", current=current,
                           revision=rev.number, replicaset=rev.replicaset, template=rev.template, rule=RULE_FORCED,
                           detail=f"revision {rev.number} ({rev.replicaset}) named by the operator",
                           warnings=(f"warning: forced despite the evidence (override=evidence): {doubt}",)
                           if doubt else ())


def _forced_current(what: str, current: Any, dying: Mapping[str, int] | None, override: bool) -> RestoreDecision:
    """The operator named the revision that runs now: nothing to restore — unless its pods are crash-looping, the
    live evidence a recorded crash would be for any other revision: refused like one (the run would only wait on
    the crash loop and fail), restored-as-is with ``override=evidence`` (its wait then fails as it will)."""
    if dying and not override:
        seen = ", ".join(f"{n} pod(s) {k}" for k, n in dying.items())
        return RestoreDecision(REFUSE, f"host data revision: {what} and it is crash-looping now ({seen}): nothing "
                               "to restore to; name an earlier revision, or to wait on it anyway add --data "
                               "override=evidence", current=current)
    return RestoreDecision(NONE, f"host data revision: {what}", current=current)


def served_base(history: Mapping[str, Any], keys: Keys, container: str | None, policy: Policy,
                in_events: Mapping[int, EventCrash] | None = None, cannot_start: StartCheck | None = None,
                model_keys: ModelKeys | None = None) -> Revision | None:
    """The last revision that served, for a budget change to start from: the newest earlier one (marked, pinned,
    then the rest) not seen dying whose start fits the card it pins — held back only by where its pods would go
    now, which the budget's GPU pin decides again."""
    current = int(history.get("current_revision") or 0)
    pinned = policy_pin(policy.known_good, container)
    history_now = next((r for r in revisions(history) if r.number == current), None)
    swap = model_swap(history_now.template if history_now is not None else None, container)
    earlier = earlier_revisions(revisions(history), current)
    ranked = sorted(earlier, key=lambda r: (not r.annotations.get(keys.known_good), not pinned(r), -r.number))
    for rev in ranked:
        if swap(rev) is None and standing_crash(keys, rev.annotations) is None and standing_event_crash(
                keys, rev.annotations, (in_events or {}).get(rev.number)) is None and \
                (cannot_start is None or cannot_start(rev) is None) and \
                in_scope(model_keys, lambda r: failed_prediction(predict_template(r.template, container)),
                         container)(rev) is None:
            return rev
    return None


def shed_flags(flags: Mapping[str, str], policy: Policy) -> dict[str, str]:
    """The policy's step-1 shedding flags (max-num-seqs, max-model-len) that would *lower* what runs now."""
    out: dict[str, str] = {}
    shed = policy.load_shedding
    for flag, value in (("max-num-seqs", shed.max_num_seqs), ("max-model-len", shed.max_model_len)):
        if value is None:
            continue
        running = parse_flag_int(flags[flag]) if flag in flags else None
        if running is None or running > value:
            out[flag] = str(value)
    return out
