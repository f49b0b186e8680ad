"""The wait every deploy ends with, as a FunctionCommand body: rolled out and Ready, in cluster time.

A vLLM container with no readiness or startup probe is Ready as soon as it starts, so for one the wait also
needs vLLM's serving line (or ``/health``) and no restart (``kube.serving``) and says so. It fails fast (with the
classified startup log as evidence) when the new pods crash-loop or cannot be scheduled —
``kube.watch.watch_restored`` decides (over watches, by the poll's rules); this module only
reports it on the host's line.

A wait of minutes says how far it has got: every ``progress_seconds`` of real time (host data, default 5;
0: silent) the Ready/desired replicas and the newest new pod's stage (``kube.progress``: Pending and why,
pulling the image, loading weights, profiling, capturing CUDA graphs, serving, crashed and how). On a
terminal that is one live line per waiting host, rewritten in place (``live``); otherwise (a CronJob's log,
a pipe) a plain line with the host prefix, printed only when it changed or every ``HEARTBEAT`` reports.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from vllm_remedy.connectors.host_data import PROGRESS_SECONDS
from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import JSON_PATCH, KubeClient
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.history import template_of
from vllm_remedy.kube.progress import ProgressReader
from vllm_remedy.kube.wait import Crash, ProgressHook
from vllm_remedy.kube.watch import watch_restored
from vllm_remedy.operations.util import live
from vllm_remedy.operations.util.context import K8sHost, k8s_host
from vllm_remedy.operations.util.refusal import fails_later
from vllm_remedy.operations.util.show import noop, note
from vllm_remedy.operations.util.write import Change, change_ops
from vllm_remedy.remedies.diagnose import evidence_lines
from vllm_remedy.remedies.evidence import record_changes
from vllm_remedy.remedies.restore import crash_failures

#: Outside a terminal an unchanged report is repeated every this many reports (a minute at the default 5 s).
HEARTBEAT = 12


def wait_rollout(state: Any, host: Any, timeout: float, label: str, replicaset: str | None = None,
                 settle: float = 0.0) -> bool:
    """FunctionCommand body: wait (cluster time) until rolled out and Ready — and, with ``settle``, no pod restarted
    for that long after; fail fast with the classified log."""
    try:
        ctx = k8s_host(host)
        client = ctx.client.live()  # the cluster as it is now, not the run's read snapshot
        try:
            with progress_reports(host, ctx) as progress:
                result = watch_restored(client, ctx.namespace, ctx.deployment, timeout, ClusterClock(client),
                                        progress=progress, settle=settle, serving=True, container=ctx.container)
        finally:  # the rollout changed what the run read before it
            ctx.client.renew()
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
    if crash is not None and crash.kind == "crash-loop":
        said = record_crash(ctx, crash)
        if said:
            note(host, f"{label}: {said}", error=said.startswith("warning"))
    return False


def record_crash(ctx: K8sHost, crash: Crash) -> str:
    """Record the crash a wait failed on on its pod's ReplicaSet (a guarded patch of our annotations, idempotent);
    what was done, in a line. Never raises: a record that cannot be written is a warning, not a second failure."""
    client = ctx.client.live()
    try:
        pod = client.request("GET", KubeClient.object_path(ctx.namespace, "pods", crash.pod, group="v1"))
        owner = next((r.get("name") for r in (pod.get("metadata") or {}).get("ownerReferences") or []
                      if r.get("controller") and r.get("kind") == "ReplicaSet"), None)
        if not owner:
            return ""
        path = KubeClient.object_path(ctx.namespace, "replicasets", owner)
        basis = client.request("GET", path)
        now = client.server_time()
        failure = crash.failure or "unknown"
        notes = (basis.get("metadata") or {}).get("annotations") or {}
        ops = change_ops(Change(annotations=record_changes(ctx.keys, notes, {failure: 1}, now)), ctx.keys,
                         client, basis, now)
        if not ops:
            return f"the crash is already recorded on replicaset {owner}"
        try:
            client.request("PATCH", path, body=ops, content_type=JSON_PATCH)
        finally:
            ctx.client.renew(path)
    except UserError as exc:
        return f"warning: the crash could not be recorded on its ReplicaSet: {exc}"
    return f"recorded on replicaset {owner} that it was seen dying ({failure}): restore will not return to it"


class Reports:
    """The wait's progress hook: looks every ``every`` real seconds and shows what it saw (live or as lines)."""

    def __init__(self, host: Any, reader: ProgressReader, every: float, board: live.LiveLines | None,
                 real: Any = time.monotonic) -> None:
        self.host, self.reader, self.every, self.board, self.real = host, reader, every, board, real
        self.due = real() + every
        self.start: float | None = None
        self.said, self.said_at = "", 0.0

    def __call__(self, deployment: Mapping[str, Any], pods: list[dict[str, Any]], now: float) -> None:
        if self.start is None:
            self.start = now
        real = self.real()
        if real < self.due:
            return
        self.due = real + self.every
        progress = str(self.reader.read(deployment, pods))
        text = f"progress at {max(now - self.start, 0.0):.0f}s: {progress}"
        if self.board is not None:
            self.board.show(str(self.host.name), f"    {self.host.print_prefix}{text}")
        elif progress != self.said or real - self.said_at >= HEARTBEAT * self.every:
            note(self.host, text)
            self.said, self.said_at = progress, real


@contextmanager
def progress_reports(host: Any, ctx: K8sHost) -> Iterator[ProgressHook | None]:
    """The progress hook for one wait (None when the host's ``progress_seconds`` is 0); its live line goes
    when the wait ends, so the verdict is printed in its place."""
    every = float(getattr(getattr(host, "connector", None), "progress_seconds", PROGRESS_SECONDS))
    if every <= 0:
        yield None
        return
    board = live.board() if live.is_terminal() else None
    try:
        yield Reports(host, ProgressReader(ctx.client.live(), ctx.namespace, ctx.container), every, board)
    finally:
        if board is not None:
            board.drop(str(host.name))


def crash_loop_ahead(state: Any, host: Any, ctx: K8sHost, read: Mapping[str, Any], planned: Mapping[str, Any],
                     pods: Mapping[str, Any], label: str) -> None:
    """While detecting: this run writes no template (``planned``, the workload as its earlier operations leave it,
    has the template ``read`` has) and the current revision's pods are crash-looping, so the wait ``-y`` reaches
    fails fast on that crash loop. Say so with the wait's label and fail the host now: ``--dry`` exits 1 as ``-y``
    will."""
    if state.is_executing or template_of(dict(planned)) != template_of(dict(read)):
        return
    dying = crash_failures(pods, ctx.container)
    if not dying:
        return
    seen = ", ".join(f"{n} pod(s) {k}" for k, n in dying.items())
    wait_fails(state, host, label, f"the current revision is crash-looping ({seen}) and this run writes nothing that "
               "replaces it")


def wait_fails(state: Any, host: Any, label: str, why: str) -> None:
    """While detecting: the wait ``label`` will fail fast (``why``); say it as that wait will and fail the host now,
    so ``--dry`` exits 1 as ``-y`` will (every kind's wait on a crash loop nothing in the run replaces)."""
    note(host, f"{label}: will fail: {why}; see deploys/restore.py and deploys/diagnose.py", error=True)
    fails_later(state, host)


def still_loading(state: Any, host: Any, where: str, label: str, held: list[str]) -> bool:
    """A rollout kubectl would call complete: True, with a note, when its probe-less pods ``held`` do not serve yet
    (Ready without a probe means started: a rerun after a run died mid-wait must not call a loading vLLM done), so
    the caller yields its kind's wait; else the "rolled out" noop and False. Every kind's ``rolled_out`` asks here."""
    if not held:
        noop(state, host, f"{where} is rolled out")
        return False
    note(host, f"{label}: no readiness probe, and pod(s) {', '.join(held)} do not show vLLM's serving line yet: "
         "waiting for it")
    return True
