"""What the StatefulSet and LeaderWorkerSet evidence operations share: both kinds keep their revisions as
ControllerRevisions, so recording a crash is the same guarded, idempotent annotation patch on the same kind of
object (``remedies.evidence`` decides what to write). The operations themselves stay per kind
(``operations.sts_evidence``, ``operations.lws_evidence``): they differ in the fact they read and in how a pod
names its revision.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyinfra import host
from pyinfra.api import FactBase, FunctionCommand

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import JSON_PATCH, KubeClient
from vllm_remedy.operations.evidence import record_dying, record_ops, seen_dying
from vllm_remedy.operations.util import K8sHost, k8s_host


def revision_path(namespace: str, name: str) -> str:
    """A ControllerRevision's API path."""
    return KubeClient.object_path(namespace, "controllerrevisions", name)


def record_revisions(fact: type[FactBase]) -> Iterator[FunctionCommand]:
    """The body of a set kind's ``crash_recorded`` operation: ``fact`` gives the set's ``rollout`` history (one row
    per ControllerRevision) and ``pod_rows``."""
    ctx = k8s_host(host)
    facts = host.get_fact(fact)
    history, pods = facts["rollout"], facts["pod_rows"]
    now = ctx.client.server_time()
    dying = seen_dying(history, pods, ctx.container, now, ctx.policy.confirm.stable_for.total_seconds())
    yield from record_dying(ctx, history, dying, (), now, "controllerrevisions")


def record_on_revision(ctx: K8sHost, name: str, failure: str | None) -> str:
    """Record the crash a wait failed on, on ControllerRevision ``name``; what was done, in a line. Never raises: a
    record that cannot be written is a warning, not a second failure."""
    try:
        path = revision_path(ctx.namespace, name)
        ops = record_ops({failure or "unknown": 1}, "", ctx.keys, ctx.client, ctx.client.request("GET", path),
                         ctx.client.server_time())
        if not ops:
            return f"the crash is already recorded on controllerrevision {name}"
        ctx.client.request("PATCH", path, body=ops, content_type=JSON_PATCH)
    except UserError as exc:
        return f"warning: the crash could not be recorded on its ControllerRevision: {exc}"
    return f"recorded on controllerrevision {name} that it was seen dying ({failure or 'unknown'}): restore will " \
           "not return to it"
