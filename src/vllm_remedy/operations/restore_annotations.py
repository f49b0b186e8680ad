"""What restore's rollback says beside its diff, and what later operations of the run say after it.

The Deployment annotations a rollback changes: kubectl's undo replaces ``/metadata/annotations`` with the target
ReplicaSet's copies; ours changes only those (``kube.rollout.rollback_annotations``) and keeps the Deployment's
others. What it does change (a value the revision ran with, a toggle record that goes with the template) is still a
write, so ``--dry``, the prompt and the ``-y`` log show it next to the template's diff — every write shown before it
is made.

After a rollback is planned, the run's later operations decide on the state it leaves (``operations.util.planned``),
while the facts still number the revision it replaces as current: ``after_rollback`` names the revision restored
instead, and ``wait_line`` says that the rollback's wait, which ``--dry`` never runs, will come.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pyinfra import host

from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.kube.annotations import canonical_json
from vllm_remedy.kube.rollout import annotation_changes
from vllm_remedy.operations.util import K8sHost, planned
from vllm_remedy.policy import format_duration
from vllm_remedy.remedies.restore import NONE, RestoreDecision


def annotation_lines(ctx: K8sHost, deployment: Mapping[str, Any], revision: int | None) -> list[str]:
    """Lines for the diff: each Deployment annotation the rollback to ``revision`` changes (``-``: now, ``+``: after,
    values as JSON strings so no value can print a line of its own); [] when it changes none but our audit."""
    rows = (host.get_fact(RolloutHistory) or {}).get("revisions") or []
    row = next((r for r in rows if r.get("number") == revision), None)
    if row is None:
        return []
    changes = annotation_changes(deployment, row.get("annotations") or {}, ctx.keys)
    if not changes:
        return []
    lines = [f"deployment annotations the rollback changes (kubectl's undo takes them from revision {revision}'s "
             f"ReplicaSet {row.get('replicaset')}; the Deployment's other annotations are kept):"]
    for key, now, after in changes:
        if now is not None:
            lines.append(f"-  {key}: {canonical_json(now)}")
        if after is not None:
            lines.append(f"+  {key}: {canonical_json(after)}")
    return lines


def after_rollback(host: Any, ctx: K8sHost, decision: RestoreDecision) -> RestoreDecision:
    """``decision`` as later operations of a run that rolls back word it: "after the rollback to revision 14: no pod is
    crash-looping", not the number the revision replaced (``--dry``) or the restored one took (``-y``) had."""
    target = planned.rolled_back_to(host, ctx.deployment_path)
    if target is None or decision.action != NONE:
        return decision
    head = f"revision {decision.current}: "
    rest = decision.reason[len(head):] if decision.reason.startswith(head) else decision.reason
    return replace(decision, reason=f"after the rollback to revision {target}: {rest}")


def wait_line(ctx: K8sHost, revision: int | None, wait: bool, timeout: float | None) -> list[str]:
    """The rollback's wait, said with its diff: ``--dry`` and the prompt never run it, ``-y`` runs it next."""
    if not wait:
        return []
    seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
    return [f"will wait for revision {revision} to roll out (up to {format_duration(int(seconds))} of cluster time, "
            "failing fast if it crash-loops)"]
