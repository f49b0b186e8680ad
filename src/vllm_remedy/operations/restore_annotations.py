"""The Deployment annotations a rollback changes, as lines of the diff the operator approves.

Why: kubectl's undo replaces ``/metadata/annotations`` with the target ReplicaSet's copies; ours changes only those
(``kube.rollout.rollback_annotations``) and keeps the Deployment's others. What it does change (a value the
revision ran with, a toggle record that goes with the template) is still a write, so ``--dry``, the prompt and the
``-y`` log show it next to the template's diff — every write shown before it is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyinfra import host

from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.kube.annotations import canonical_json
from vllm_remedy.kube.rollout import annotation_changes
from vllm_remedy.operations.util import K8sHost


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
