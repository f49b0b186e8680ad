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

import contextlib
import functools
from collections.abc import Iterator

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.kube.client import JSON_PATCH, KubeClient
from vllm_remedy.kube.lws_history import NAME_LABEL, REVISION_LABEL
from vllm_remedy.operations.evidence import record_ops, seen_dying
from vllm_remedy.operations.sts_evidence import revision_path
from vllm_remedy.operations.util import K8sHost, k8s_host, noop, observe, show, write_command
from vllm_remedy.remedies.evidence import record_changes


@operation()
def crash_recorded() -> Iterator[FunctionCommand]:
    """
    Record on each ControllerRevision whose pods (leaders or workers) crash-loop or were OOMKilled that it was
    seen dying (failure class, cluster time), and withdraw a known-good mark there. Never fails the host.

    **Example:**

    .. code:: python

        lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    """
    ctx = k8s_host(host)
    facts = host.get_fact(LeaderWorkerSetState)
    history, pods = facts["rollout"], facts["pod_rows"]
    now = ctx.client.server_time()
    dying = seen_dying(history, pods, ctx.container, now, ctx.policy.confirm.stable_for.total_seconds())
    rows = {str(r.get("replicaset")): r for r in history.get("revisions") or []}
    planned: list[str] = []
    commands: list[FunctionCommand] = []
    for name, failures in dying.items():
        row = rows.get(name) or {}
        changes = record_changes(ctx.keys, row.get("annotations") or {}, failures, now)
        if not changes:
            continue
        what = ", ".join(f"{n} pod(s) {k}" for k, n in failures.items())
        label = (f"record on controllerrevision {name} (revision {row.get('number')}) that it was seen dying ({what})"
                 + ("; withdraw its known-good mark" if ctx.keys.known_good_withdrawn in changes else ""))
        planned.append(label)
        path = revision_path(ctx.namespace, name)
        with contextlib.suppress(UserError):  # unreadable now: the write reads it again and warns if it still fails
            observe(state, host, path, ctx.client.request("GET", path))
        commands.append(write_command(path, functools.partial(record_ops, failures, "", ctx.keys), label,
                                      required=False))
    if planned:  # shown before the first yield: change detection (--dry, the prompt) runs the body only that far
        show(state, host, planned, topic="evidence")
        yield from commands
    else:
        noop(state, host, "no crash to record" if not dying else "every crash seen is already recorded")


def record_wait_crash(ctx: K8sHost, pod: str, failure: str | None) -> str:
    """Record the crash an LWS wait failed on, on the ControllerRevision its pod's template-revision-hash names;
    what was done, in a line. Never raises: a record that cannot be written is a warning, not a second failure."""
    try:
        obj = ctx.client.request("GET", KubeClient.object_path(ctx.namespace, "pods", pod, group="v1"))
        digest = ((obj.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL)
        query = [("labelSelector", f"{NAME_LABEL}={ctx.deployment},{REVISION_LABEL}={digest}")]
        found = ctx.client.request("GET", KubeClient.object_path(ctx.namespace, "controllerrevisions"), query=query)
        items = sorted(found.get("items") or [], key=lambda r: int(r.get("revision") or 0))
        if not digest or not items:
            return ""
        name = str(items[-1]["metadata"]["name"])
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
