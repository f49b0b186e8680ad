"""When pods wait to be deleted onto a StatefulSet's update revision, that revision is judged like any rollback
target: a colleague's template edit over a crash-looping revision (revision 3 = the bad revision 2 plus an env var)
makes the update revision one nobody saw, and no pod of it runs yet, so "no pod is crash-looping" says nothing about
it. When the evidence or the memory model speaks against it, the set is rolled back to the newest good revision
instead; judged good, it is still not ours, and its pods are named, never deleted onto it
(``statefulset._resume``, ``sts_wait.foreign_update``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_remedy.kube.rollout import NoRollbackTarget, choose_rollback, policy_pin
from vllm_remedy.kube.sts_wait import stuck_pods
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.evidence import against, crashes_by_revision, rejector
from vllm_remedy.remedies.restore import NONE, REFUSE, ROLLBACK, RestoreDecision, keys_of, revisions
from vllm_remedy.remedies.restore_policy import policy_conflicts


def judge_update(decision: RestoreDecision, facts: Mapping[str, Any], policy: Policy, container: str | None,
                 nodes: Sequence[Mapping[str, Any]] | None) -> RestoreDecision:
    """``decision`` unchanged unless it is "nothing crash-loops" while pods wait to be deleted onto an update
    revision predicted to fail or seen crash-looping: then a rollback to the newest good revision, or a refusal
    when none is left (pure)."""
    sts, pods = dict(facts["statefulset"]), list(facts["pods"])
    stuck = stuck_pods(sts, pods)
    if decision.action != NONE or not stuck:
        return decision
    history = facts["rollout"]
    current = history.get("current_revision")
    rows = revisions(history)
    update = next((r for r in rows if r.number == current), None)
    if update is None:
        return decision
    keys = keys_of(policy)
    dying = crashes_by_revision(facts["pod_rows"], container)
    # the update revision is the set's own template: a timed toggle on it is the set's, expiring there (a colleague
    # edit over an expired toggle is theirs to keep; the revert takes the flag off it, never a rollback)
    doubt = against(update, keys, container, nodes, dying, toggles=False)
    if doubt is None:
        return decision
    line = (f"revision {current} ({update.replicaset}): the update revision pods {', '.join(stuck)} would roll onto "
            f"when deleted: {doubt}")
    try:
        choice = choose_rollback(rows, int(current or 0), keys=keys, pinned=policy_pin(policy.known_good, container),
                                 reject=rejector(keys, container, nodes, dying),
                                 conflicts=policy_conflicts(policy, container))
    except NoRollbackTarget as exc:
        return RestoreDecision(REFUSE, f"{line}; not deleted, and {exc}: see deploys/diagnose.py", current=current,
                               skipped=(line, *exc.skipped))
    rev = choice.revision
    return RestoreDecision(ROLLBACK, f"{line}; roll back to revision {rev.number} instead ({choice.rule}: "
                           f"{choice.detail})", current=current, revision=rev.number, replicaset=rev.replicaset,
                           template=rev.template, rule=choice.rule, detail=choice.detail,
                           skipped=(line, *choice.skipped), warnings=decision.warnings)
