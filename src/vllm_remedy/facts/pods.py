"""The pods of an ``@k8s`` host: health per pod and container, and the classified startup log of each crash.

Why the log is part of the fact: "pods crash-loop" is not a diagnosis. Step 2 of the runbook reads the
*previous* container's log (the one that died) for the CUDA OOM / no-cache-blocks / max-seq-len
signature, and CUDA OOM is an ordinary ``Error``/exit 1 to Kubernetes — only the log tells it apart from
the kernel's ``OOMKilled``. The connector fetches the logs of failed containers in the same answer.

    pyinfra inventories/local.py fact vllm_remedy.facts.pods.Pods
    pyinfra inventories/local.py fact vllm_remedy.facts.pods.Pods logs=all
    pyinfra inventories/local.py fact vllm_remedy.facts.pods.ContainerLog pod=<pod> container=vllm previous=true
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from vllm_remedy.facts.base import JsonFact
from vllm_remedy.kube.health import ContainerHealth, PodHealth, pod_health
from vllm_remedy.kube.history import find_new_replicaset, owned_replicasets, revision_of
from vllm_remedy.kube.wait import classify_log


def _startup(log: Mapping[str, Any] | None, c: ContainerHealth) -> dict[str, Any] | None:
    """Classified log of one container, or None when none was read; an unreadable log says why."""
    if log is None:
        failure, _ = classify_log(None, c.exit_code, c.terminated_reason)
        return {"failure": failure, "previous": None, "report": None} if failure else None
    if "error" in log:
        failure, _ = classify_log(None, c.exit_code, c.terminated_reason)
        return {"failure": failure, "previous": log.get("previous"), "report": None, "log_error": log["error"]}
    failure, report = classify_log(str(log.get("text") or ""), c.exit_code, c.terminated_reason)
    return {"failure": failure, "previous": log.get("previous"), "report": report.to_dict() if report else None}


def _container_row(c: ContainerHealth, log: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"name": c.name, "ready": c.ready, "restarts": c.restarts, "state": c.state,
            "waiting_reason": c.waiting_reason, "waiting_message": c.waiting_message, "exit_code": c.exit_code,
            "terminated_reason": c.terminated_reason, "crash_looping": c.crash_looping,
            "host_oom_killed": c.host_oom_killed, "failed": c.failed, "startup": _startup(log, c)}


def _pod_row(pod: Mapping[str, Any], health: PodHealth, revision: int | None, new: bool,
             logs: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": health.name, "node": health.node, "phase": health.phase, "ready": health.ready,
            "ready_since": health.ready_since, "unschedulable": health.unschedulable,
            # since when the scheduler has refused it (drift's ``unschedulable`` row dates "serving nothing" by it)
            "unschedulable_since": next((c.get("lastTransitionTime") for c in (pod.get("status") or {}).get(
                "conditions") or [] if c.get("type") == "PodScheduled"), None) if health.unschedulable else None,
            "template_hash": health.template_hash, "revision": revision, "new": new,
            "deleting": bool((pod.get("metadata") or {}).get("deletionTimestamp")),
            "restarts": health.restarts, "crash_looping": health.crash_looping,
            "host_oom_killed": health.host_oom_killed,
            "containers": [_container_row(c, logs.get(f"{health.name}/{c.name}")) for c in health.containers]}


def pods_data(deployment: Mapping[str, Any], replicasets: list[Mapping[str, Any]], pods: list[Mapping[str, Any]],
              logs: Mapping[str, Any] | None = None, container: str | None = None) -> dict[str, Any]:
    """Plain-data pod picture (pure). ``logs`` maps ``pod/container`` → ``{previous, text}`` or ``{error}``."""
    logs = logs or {}
    owned = owned_replicasets(deployment, replicasets)
    new_rs = find_new_replicaset(deployment, owned)
    new_uid = (new_rs or {}).get("metadata", {}).get("uid")
    revision_by_uid = {rs["metadata"].get("uid"): revision_of(rs) for rs in owned}
    rows = []
    for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name", "")):
        owners = [r.get("uid") for r in (pod.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")]
        revision = next((revision_by_uid[u] for u in owners if u in revision_by_uid), None)
        rows.append(_pod_row(pod, pod_health(pod), revision, bool(new_uid) and new_uid in owners, logs))
    failures: dict[str, int] = {}
    for row in rows:
        for c in row["containers"]:
            failure = (c["startup"] or {}).get("failure")
            if failure and (container is None or c["name"] == container):
                failures[failure] = failures.get(failure, 0) + 1
    live = [r for r in rows if not r["deleting"]]
    return {
        "deployment": (deployment.get("metadata") or {}).get("name"),
        "container": container,
        "new_revision": revision_of(new_rs) if new_rs else None,
        "total": len(live),
        "ready": sum(1 for r in live if r["ready"]),
        "crash_looping": [r["name"] for r in live if r["crash_looping"]],
        "unschedulable": [r["name"] for r in live if r["unschedulable"]],
        "failures": dict(sorted(failures.items())),
        "pods": rows,
    }


class Pods(JsonFact[dict[str, Any]]):
    """Pods of the host's Deployment with health and classified startup logs.

    + logs: ``crashed`` (default) reads the log of each failed container's last death; ``all`` also the
      current log of running containers (their startup figures); ``none`` reads no logs.
    + tail: lines of each log to read (default 3000).
    """

    def command(self, logs: str = "crashed", tail: int | None = None) -> str:
        words = ["k8s-pods", "--logs", str(logs)]
        if tail is not None:
            words += ["--tail", str(tail)]
        return shlex.join(words)

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        return pods_data(document.get("deployment") or {}, list(document.get("replicasets") or []),
                         list(document.get("pods") or []), document.get("logs") or {}, document.get("container"))


class ContainerLog(JsonFact[dict[str, Any]]):
    """One container's log (``previous`` = the instance that died), with its classified startup report."""

    def command(self, pod: str, container: str, previous: bool = False, tail: int | None = None) -> str:
        """``previous`` also accepts the strings the pyinfra CLI passes (``previous=true``)."""
        words = ["k8s-logs", str(pod), str(container)]
        if previous in (True, "true", "True", "yes", "1"):
            words.append("--previous")
        if tail is not None:
            words += ["--tail", str(tail)]
        return shlex.join(words)

    def build(self, document: dict[str, Any]) -> dict[str, Any]:
        text = str(document.get("text") or "")
        failure, report = classify_log(text, None, None)
        return {"pod": document.get("pod"), "container": document.get("container"),
                "previous": document.get("previous"), "lines": text.splitlines(), "failure": failure,
                "report": report.to_dict() if report else None}
