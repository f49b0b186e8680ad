"""Record what a run saw dying on a LeaderWorkerSet's ControllerRevisions, as ``operations.evidence`` does on a
Deployment's ReplicaSets and ``operations.sts_evidence`` on a StatefulSet's: the same ``<prefix>crashed`` record and
known-good withdrawal (``remedies.evidence``), the same guarded, idempotent annotation patch, and never a failed
host for a record that cannot be written.

Why on the ControllerRevision: it is the revision; the LWS controller renumbers it to the top when a rollback
writes its template back and keeps the object (and so the record), so ``restore`` never returns to a revision
already seen crash-looping — without it the rollback flip-flopped between two bad revisions.

    from vllm_remedy.operations import lws_evidence

    lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
"""

from __future__ import annotations

from collections.abc import Iterator

from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.lws_history import NAME_LABEL, REVISION_LABEL
from vllm_remedy.operations.revision_evidence import record_on_revision, record_revisions
from vllm_remedy.operations.util import K8sHost


@operation()
def crash_recorded() -> Iterator[FunctionCommand]:
    """
    Record on each ControllerRevision whose pods (leaders or workers) crash-loop or were OOMKilled that it was
    seen dying (failure class, cluster time), and withdraw a known-good mark there. Never fails the host.

    **Example:**

    .. code:: python

        lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    """
    yield from record_revisions(LeaderWorkerSetState)


def record_wait_crash(ctx: K8sHost, pod: str, failure: str | None) -> str:
    """Record the crash an LWS wait failed on, on the ControllerRevision its pod's template-revision-hash names;
    what was done, in a line. Never raises: a record that cannot be written is a warning, not a second failure."""
    try:
        obj = ctx.client.request("GET", KubeClient.object_path(ctx.namespace, "pods", pod, group="v1"))
        digest = ((obj.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL)
        query = [("labelSelector", f"{NAME_LABEL}={ctx.deployment},{REVISION_LABEL}={digest}")]
        found = ctx.client.request("GET", KubeClient.object_path(ctx.namespace, "controllerrevisions"), query=query)
    except UserError as exc:
        return f"warning: the crash could not be recorded on its ControllerRevision: {exc}"
    items = sorted(found.get("items") or [], key=lambda r: int(r.get("revision") or 0))
    if not digest or not items:
        return ""
    return record_on_revision(ctx, str(items[-1]["metadata"]["name"]), failure)
