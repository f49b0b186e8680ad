"""Record what a run saw dying on a StatefulSet's ControllerRevisions, as ``operations.evidence`` does on a
Deployment's ReplicaSets: the same ``<prefix>crashed`` record and known-good withdrawal (``remedies.evidence``),
the same guarded, idempotent annotation patch, and never a failed host for a record that cannot be written.

Why on the ControllerRevision: it is the revision, as the ReplicaSet is a Deployment's; the controller keeps the
object (and so the record) when a rollback renumbers it, and ``restore`` reads it back before choosing a target.
Gone pods' Events cannot be counted here: a StatefulSet's pods keep their names (``<set>-<ordinal>``) across
revisions, so an Event does not say which revision's pod it was about.

    from vllm_remedy.operations import sts_evidence

    sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
"""

from __future__ import annotations

from collections.abc import Iterator

from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.sts_history import REVISION_LABEL
from vllm_remedy.operations.revision_evidence import record_on_revision, record_revisions
from vllm_remedy.operations.util import K8sHost


@operation()
def crash_recorded() -> Iterator[FunctionCommand]:
    """
    Record on each ControllerRevision whose pods crash-loop or were OOMKilled that it was seen dying (failure
    class, cluster time), and withdraw a known-good mark there.

    The record outlives the pods, so a later ``restore`` never rolls back onto a revision already seen dying;
    nothing happens when no pod is dying or every record is already in place. Never fails the host.

    **Example:**

    .. code:: python

        sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    """
    yield from record_revisions(StatefulSetState)


def record_wait_crash(ctx: K8sHost, pod: str, failure: str | None) -> str:
    """Record the crash a StatefulSet wait failed on, on the ControllerRevision its pod was made from; what was done,
    in a line. Never raises: a record that cannot be written is a warning, not a second failure."""
    try:
        obj = ctx.client.request("GET", KubeClient.object_path(ctx.namespace, "pods", pod, group="v1"))
    except UserError as exc:
        return f"warning: the crash could not be recorded on its ControllerRevision: {exc}"
    name = ((obj.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL)
    return record_on_revision(ctx, str(name), failure) if name else ""
