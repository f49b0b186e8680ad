"""Run the drift checks and the deploys' own operations through pyinfra's Python API, one greenlet per host.

Why the deploys' operations and not a diff of our own: the fix a drift report proposes must be exactly what
``pyinfra INVENTORY deploys/budget.py`` would do — same planner, same refusals, same GitOps stance, same
diff and prediction. pyinfra's ``--dry`` cannot say "drift" (it exits 0 with changes) and ``--dry --json``
drops the diff, so we drive the API: connect, run each operation in change-detection mode (the body runs up
to its first yield, nothing executes), and keep what each printed, per host and per operation.

The pyinfra run itself (inventory, connect, greenlets, captured lines, one operation detected) is
``drift.session``; like it, this module must run in a process where gevent's ``patch_all()`` ran first
(``python -m vllm_remedy.drift``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from pyinfra.api.exceptions import PyinfraError
from pyinfra.api.host import Host
from pyinfra.api.operations import run_ops

from vllm_remedy import gitops
from vllm_remedy.connectors.fleet import FleetReads
from vllm_remedy.drift import checks, report
from vllm_remedy.drift.fallback_route import check_fallback_route
from vllm_remedy.drift.kv_auto_rule import check_kv_auto
from vllm_remedy.drift.pyinfra_costs import facts_read_once
from vllm_remedy.drift.session import Run, close, not_run, per_host, run_operation, start
from vllm_remedy.drift.workloads import (
    NO_FIX,
    TOGGLED,
    Step,
    checked_view,
    deployment_of,
    fix_note,
    fix_of,
    revert_of,
    workload_of,
)
from vllm_remedy.errors import UserError
from vllm_remedy.kube.errors import NotFoundError
from vllm_remedy.kube.sts_wait import read_set, stuck_pods
from vllm_remedy.operations import inferenceservice, restore, workload
from vllm_remedy.operations.util import K8sHost, k8s_host
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.enforce_eager import UNREADABLE
from vllm_remedy.remedies.enforce_eager import expired as expired_toggles


def fix_operations(policy: Policy, kind: str = "deployment") -> list[Step]:
    """deploys/budget.py's operations for ``kind``, in its order (``workloads.fix_of``: ``operations.budget.FIX`` or
    ``operations.lws_budget.FIX``, the very list the deploy runs, so this cannot go stale), then - for a Deployment
    with a gateway fallback in the policy - the last step of deploys/restore.py (which shifts traffic back only for
    a Deployment): what would bring a host back to its policy.

    Flags outside their bounds are the budget planner's to fix too (it starts from the current flags
    clamped into the policy), so the report never offers a fix no deploy would make, nor two values
    for one flag. Pinning is a noop without reads where the policy names no GPU product. A route left
    shifted to the fallback goes back once the primary is stable (its noop says until when).
    """
    ops: list[Step] = list(fix_of(kind))
    if policy.fallback is not None and kind == "deployment":
        ops.append((report.SHIFT_BACK, restore.shift_back, {}))
    return ops


def _route_check(ctx: K8sHost) -> checks.Check:
    """The ``fallback-route`` check: the policy's HTTPRoute read with the host's client (404 is a finding, any other
    error an unknown)."""
    fallback = ctx.policy.fallback
    if fallback is None:
        return check_fallback_route(ctx.policy, None)
    try:
        return check_fallback_route(ctx.policy, ctx.client.request("GET", restore.route_path(fallback)))
    except NotFoundError:
        return check_fallback_route(ctx.policy, None, missing=True)
    except UserError as exc:
        return check_fallback_route(ctx.policy, None, " ".join(str(exc).split()))




def _without_unreadable(result: dict[str, Any]) -> dict[str, Any]:
    """An operation's plan minus the unreadable-toggle warning: the enforce-eager check already says it, once."""
    return {**result, "lines": [line for line in result["lines"] if not line.startswith(UNREADABLE)]}


def plan_host(run: Run, host: Host) -> dict[str, Any]:
    """Checks + the fix the deploys would make, for one connected host (raises HostFailed on any error).

    Every kind a namespace host expands to is checked and gets the fix deploys/budget.py makes for that kind."""
    ctx = k8s_host(host)
    kind = str(host.data.get("k8s_kind") or "deployment")
    isvc = kind == "inferenceservice"
    deployment, pods = workload_of(run, host, kind)
    now = ctx.client.server_time()
    result = checks.run_checks(deployment, ctx.policy, now, ctx.container, pods)
    route = _route_check(ctx)
    kv = [c] if (c := check_kv_auto(ctx.policy, result.prediction)) is not None else []  # auto resolved to fp8
    owner = gitops.detect(deployment)
    operations = ([("Smallest flag change that restores headroom", inferenceservice.smallest_fix, {})] if isvc
                  else [] if kind in NO_FIX else fix_operations(ctx.policy, kind))
    fix: list[dict[str, Any]] = []
    for label, op, kwargs in operations:  # in the deploy's order; a refusal stops the host, as it stops a run
        refused = any(f["refused"] for f in fix)
        fix.append(not_run(label) if refused else _without_unreadable(run_operation(run, host, label, op, kwargs)))
    return {"host": host.name, "error": None, "policy": ctx.policy.source, "cluster_time": now,
            "fix_note": fix_note(kind),
            "accept_unknown": ctx.policy.drift.accepts_unknown,
            "checks": [c.to_json() for c in (*result.checks, route, *kv)], "observed": result.observed.to_json(),
            "prediction": result.prediction.to_json() | {"line": result.prediction.line()},
            "gitops": None if owner is None else {**owner.to_json(),
                                                  "mode": "refuse" if owner.controls else ctx.policy.gitops},
            "fix": fix}


def plan(inventory_path: str, limit: Iterable[str] = ()) -> dict[str, Any]:
    """Drift-check every host of the inventory: nothing is written (pyinfra never enters Execute)."""
    started = time.monotonic()
    run = start(inventory_path, limit, FleetReads())  # a plan never writes: one read snapshot per cluster
    try:
        with facts_read_once(run.hosts, lambda h: getattr(h.connector, "snapshot", None) is not None):
            hosts = per_host(run, lambda h: plan_host(run, h))
    finally:
        close(run)
    return {"inventory": inventory_path, "limit": list(limit), "seconds": round(time.monotonic() - started, 3),
            "hosts": hosts}


def expire(inventory_path: str, limit: Iterable[str] = ()) -> dict[str, Any]:
    """Revert every timed toggle past its expiry — the revert every deploy of the host's kind runs first
    (``workloads.revert_of``: a Deployment's or StatefulSet's, or a LeaderWorkerSet's), executed, nothing else."""
    started = time.monotonic()
    run = start(inventory_path, limit)
    label = "Revert expired temporary toggles"
    try:
        due: dict[str, list[str]] = {}
        other: set[str] = set()  # hosts of a kind no deploy records a toggle on (an InferenceService)

        def prepare(host: Host) -> dict[str, Any]:
            ctx = k8s_host(host)
            if ctx.kind not in TOGGLED:  # no deploy records a timed toggle on this kind: skip it, said
                other.add(host.name)
                return {"host": host.name, "error": None, "operation": label, "changes": False, "refused": None,
                        "noop": None, "lines": [f"skipped: {ctx.where}: expire reverts the timed toggles deploys "
                                                "record on Deployments, StatefulSets and LeaderWorkerSets; none is "
                                                "recorded on this kind"]}
            obj = deployment_of(run, host) if ctx.kind == "deployment" else workload_of(run, host, ctx.kind)[0]
            notes = (obj.get("metadata") or {}).get("annotations") or {}
            limit = ctx.policy.enforce_eager.max_duration.total_seconds()
            due[host.name] = [t.name for t in expired_toggles(ctx.keys, notes, ctx.client.server_time(), limit)]
            return {"host": host.name, "error": None, **run_operation(run, host, label, revert_of(ctx.kind), {})}

        prepared = per_host(run, prepare)
        if any(r.get("changes") for r in prepared):
            try:
                run.log.current = {r["host"]: label for r in prepared}
                run_ops(run.state)
            except PyinfraError:
                pass  # "No hosts remaining!": every host failed; reported per host below
        hosts = []
        for result in prepared:
            name = result["host"]
            if result.get("error") is None:
                result["lines"] = result.get("lines", []) + run.log.take(name, label)
                failed = any(h.name == name for h in run.state.failed_hosts)
                result["reverted"] = [] if failed or not result["changes"] else due.get(name, [])
                if result.get("refused"):  # refused while planned: nothing was run, nothing written
                    result["error"] = result["refused"]
                elif failed:
                    result["error"] = run.log.error(name, "revert failed")
                elif due.get(name) and (result.get("noop") or "").startswith(workload.KEPT):
                    result["error"] = result["noop"]  # refused like any write predicted not to start: exit 1
                result["remaining"] = [] if name in other else _remaining(run, name)
                held = _held_by_on_delete(run, name) if result["reverted"] else None
                if held is not None and result.get("error") is None:
                    result["error"] = held  # reverted on paper only: the pods still run the toggle
            hosts.append(result)
    finally:
        close(run)
    return {"inventory": inventory_path, "limit": list(limit), "seconds": round(time.monotonic() - started, 3),
            "hosts": hosts}


#: How long expire waits for a StatefulSet controller to observe its revert before it can judge the pods (kube-
#: controller-manager syncs a set within a second or two; a stalled one is reported, never read as "nothing held").
OBSERVE_SECONDS = 30.0


def _held_by_on_delete(run: Run, name: str) -> str | None:
    """Why a revert has not reached the pods: an OnDelete StatefulSet changes a pod only when it is deleted, and
    expire deletes none (a deploy does, under ``restore.delete_pods: blocking``); None when nothing is held."""
    host = next(h for h in run.hosts if h.name == name)
    ctx = k8s_host(host)
    if ctx.kind != "statefulset":
        return None
    sts, pods = read_set(ctx.client, ctx.namespace, ctx.deployment)
    if ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") != "OnDelete":
        return None
    # status.updateRevision names the revert's revision only once the controller has seen the write: read before
    # that, every pod is "on the update revision" (the toggled one) and a revert that reaches no pod passes
    deadline = time.monotonic() + OBSERVE_SECONDS
    while (seen := int((sts.get("status") or {}).get("observedGeneration") or 0)) < int(
            sts["metadata"].get("generation") or 0):
        if time.monotonic() >= deadline:
            return (f"{ctx.where}: the revert is written, but the StatefulSet controller has not observed it within "
                    f"{OBSERVE_SECONDS:g} s (generation {sts['metadata'].get('generation')}, observed {seen}): whether "
                    "the pods still run the toggle (updateStrategy OnDelete) is unknown; check `kubectl rollout "
                    "status` and delete the pods that do")
        time.sleep(0.2)
        sts, pods = read_set(ctx.client, ctx.namespace, ctx.deployment)
    behind = sorted(stuck_pods(sts, pods))  # under OnDelete: every live pod off the update revision
    if not behind:
        return None
    return (f"{ctx.where}: the toggle is off the template, but pods {', '.join(behind)} keep running it until they "
            "are deleted (updateStrategy OnDelete): delete them, or run a deploy under restore.delete_pods: blocking")


def _remaining(run: Run, name: str) -> list[dict[str, Any]]:
    """Toggles still recorded on the host's workload after the run (their expiry feeds the metric)."""
    host = next(h for h in run.hosts if h.name == name)
    try:
        ctx = k8s_host(host)
        obj = checked_view(ctx.kind, ctx.client.request("GET", ctx.deployment_path))
        _server, observed = checks.observe(obj, ctx.keys, ctx.container)
    except UserError:
        return []
    return [{"name": t.name, "expires": t.expires, "expires_at": checks.expiry_seconds(t)} for t in observed.toggles]
