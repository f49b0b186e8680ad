"""The wait every deploy ends with, as a FunctionCommand body: rolled out and Ready, in cluster time.

It fails fast (with the classified startup log as evidence) when the new pods crash-loop or cannot be
scheduled — ``kube.wait.wait_restored`` decides; this module only reports it on the host's line.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.wait import wait_restored
from vllm_remedy.operations.util.context import k8s_host
from vllm_remedy.operations.util.show import note
from vllm_remedy.remedies.diagnose import evidence_lines


def wait_rollout(state: Any, host: Any, timeout: float, label: str, replicaset: str | None = None) -> bool:
    """FunctionCommand body: wait (cluster time) until rolled out and Ready; fail fast with the classified log."""
    try:
        ctx = k8s_host(host)
        result = wait_restored(ctx.client, ctx.namespace, ctx.deployment, timeout, ClusterClock(ctx.client))
    except UserError as exc:
        note(host, f"{label}: {exc}", error=True)
        return False
    if result.ok:
        note(host, f"{label}: {result.message} after {result.elapsed:.0f}s (cluster time)")
        return True
    note(host, f"{label}: {result.outcome} after {result.elapsed:.0f}s: {result.message}", error=True)
    crash = result.crash
    if crash is not None and crash.log:
        for line in evidence_lines(crash.log)[-10:]:
            note(host, f"  {line}", error=True)
    return False
