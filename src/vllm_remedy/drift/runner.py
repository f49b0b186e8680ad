"""Run the drift checks and the deploys' own operations through pyinfra's Python API, one greenlet per host.

Why the deploys' operations and not a diff of our own: the fix a drift report proposes must be exactly what
``pyinfra INVENTORY deploys/budget.py`` would do — same planner, same refusals, same GitOps stance, same
diff and prediction. pyinfra's ``--dry`` cannot say "drift" (it exits 0 with changes) and ``--dry --json``
drops the diff, so we drive the API: connect, run each operation in change-detection mode (the body runs up
to its first yield, nothing executes), and keep what each printed, per host and per operation.

Must run in a process where ``gevent.monkey.patch_all()`` ran before urllib3 was imported — see
``python -m vllm_remedy.drift`` — or every host is served one after another. A fresh Inventory and State
per run (pyinfra's state does not survive reuse).
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gevent
from pyinfra.api import Config, State
from pyinfra.api.exceptions import ConnectError, PyinfraError
from pyinfra.api.host import Host
from pyinfra.api.inventory import Inventory
from pyinfra.api.operations import run_ops
from pyinfra.context import ctx_config, ctx_host, ctx_state
from pyinfra_cli.inventory import make_inventory

from vllm_remedy import gitops
from vllm_remedy.connectors.fleet import FleetReads
from vllm_remedy.connectors.host_data import HostDataError
from vllm_remedy.connectors.k8s import K8sConnector
from vllm_remedy.drift import checks, report
from vllm_remedy.drift.fallback_route import check_fallback_route
from vllm_remedy.drift.pyinfra_costs import (
    connectors_listed_once,
    facts_read_once,
    global_arguments_typed_once,
    host_data_merged_once,
)
from vllm_remedy.drift.workloads import (
    NO_FIX,
    TOGGLED,
    HostFailed,
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
from vllm_remedy.operations.util import K8sHost, forget, forget_plans, k8s_host, refusal
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.enforce_eager import UNREADABLE
from vllm_remedy.remedies.enforce_eager import expired as expired_toggles

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PREFIXED = re.compile(r"^\[(?P<host>[^\]]+)\](?P<text>.*)$")
_NOISE = ("Connected", "Loaded fact", "Ready:")
#: How an operation says why it does nothing (``operations.util.noop``): kept apart from what it would change.
NOOP = "noop: "


class LineLog(logging.Handler):
    """pyinfra's log lines, sorted per host and per operation (hosts run concurrently in greenlets)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.current: dict[str, str] = {}
        self.lines: dict[tuple[str, str], list[str]] = {}
        self.errors: dict[str, list[str]] = {}
        #: pyinfra pads every host's prefix to the longest name; a diff's own indentation must survive.
        self.padding: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        """File each ``[host] ...`` line under the operation that host is running now (greenlets interleave);
        connect/fact chatter is dropped, ERROR lines are kept aside as the host's failure reason."""
        text = _ANSI.sub("", record.getMessage())
        for line in text.splitlines():
            match = _PREFIXED.match(line)
            if not match:
                continue
            host, said = match["host"], match["text"].rstrip()
            pad = 1 + self.padding.get(host, 0)
            said = said[pad:] if said[:pad].isspace() else said.lstrip(" ")
            if record.levelno >= logging.ERROR:
                self.errors.setdefault(host, []).append(" ".join(said.split()))
            if said.startswith(_NOISE):
                continue
            self.lines.setdefault((host, self.current.get(host, "")), []).append(said)

    def begin(self, host: str, label: str) -> None:
        """Lines ``host`` logs from now on belong to ``label`` ("" between operations)."""
        self.current[host] = label

    def take(self, host: str, label: str) -> list[str]:
        """Hand over and forget what ``host`` printed under ``label``: a later take (execute) gets only new lines."""
        return self.lines.pop((host, label), [])

    def error(self, host: str, fallback: str) -> str:
        """The host's pyinfra ERROR lines as one reason (deduplicated, pyinfra's generic "could not load fact" line
        dropped), else ``fallback``: the single line the report shows for a failed host."""
        said = [e for e in self.errors.get(host, []) if e and not e.startswith("Error: could not")]
        return " / ".join(dict.fromkeys(said)) or fallback


@dataclass
class Run:
    """One pyinfra run: its State, the hosts asked for and what was captured."""

    state: State
    hosts: list[Host]
    log: LineLog
    fleet: FleetReads | None = None  # the reads its hosts share (a run that only plans)
    connect_errors: dict[str, str] = field(default_factory=dict)
    bad_input: set[str] = field(default_factory=set)  # hosts whose inventory data is wrong (HostDataError)


def _limit(inventory: Inventory, patterns: Iterable[str]) -> list[Host]:
    """pyinfra's ``--limit``: a group name or an fnmatch pattern on host names."""
    patterns = list(patterns)
    if not patterns:
        return list(inventory)
    chosen: list[Host] = []
    for pattern in patterns:
        try:
            group = inventory.get_group(pattern)
        except Exception:  # pyinfra's NoGroupError: fall back to host-name patterns
            group = [h for h in inventory if fnmatch.fnmatch(h.name, pattern)]
        chosen += [h for h in group if h not in chosen]
    return chosen


def start(inventory_path: str, limit: Iterable[str] = (), fleet: FleetReads | None = None) -> Run:
    """Load the inventory (as the CLI would, cwd-relative group data), connect every host in parallel (through
    ``fleet``'s shared reads when given: a run that never writes)."""
    if not os.path.isfile(inventory_path):
        raise UserError(f"{inventory_path}: no such inventory file")
    log = LineLog()
    logger = logging.getLogger("pyinfra")
    logger.handlers = [log]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    state = State(check_for_changes=True)
    try:
        with ctx_state.use(state), connectors_listed_once():  # inventory files run with a State in context
            inventory = make_inventory(inventory_path, cwd=os.getcwd())
    except Exception as exc:  # the user's inventory code: any error is bad input, named with the file
        cause = getattr(exc, "exception", exc)  # pyinfra_cli wraps it in UnexpectedExternalError, str() of which fails
        raise UserError(f"{inventory_path}: cannot load the inventory: {type(cause).__name__}: "
                        f"{' '.join(str(cause).split())}") from exc
    hosts = _limit(inventory, limit)
    if not hosts:
        raise UserError(f"{inventory_path}: no host matches" + (f" --limit {' '.join(limit)}" if limit else ""))
    state.init(inventory, Config(), initial_limit=hosts)
    run = Run(state, hosts, log, fleet)
    if fleet is not None:
        for host in hosts:
            if isinstance(host.connector, K8sConnector):
                host.connector.share(fleet)
    log.padding = {h.name: len(h.print_prefix_padding) for h in hosts}

    def connect(host: Host) -> None:
        try:
            host.connect(show_errors=False, raise_exceptions=True)
        except ConnectError as exc:
            run.connect_errors[host.name] = " ".join(str(exc.args[0] if exc.args else exc).split())
            if isinstance(exc, HostDataError):
                run.bad_input.add(host.name)
        except Exception as exc:  # a connector bug must fail its host, not the run
            run.connect_errors[host.name] = f"{type(exc).__name__}: {exc}"

    gevent.joinall([state.pool.spawn(connect, h) for h in hosts])
    for host in hosts:
        if host.connected:
            state.activate_host(host)
    return run


def _per_host(run: Run, work: Callable[[Host], dict[str, Any]]) -> list[dict[str, Any]]:
    """``work`` for every connected host in parallel (pyinfra's contexts set), errors caught per host."""
    results: dict[str, dict[str, Any]] = {}

    def one(host: Host) -> None:
        with ctx_config.use(run.state.config.copy()), ctx_host.use(host):
            try:
                results[host.name] = work(host)
            except (HostFailed, UserError) as exc:
                results[host.name] = {"host": host.name, "error": " ".join(str(exc).split())}
            except Exception as exc:  # an operation bug: report it on this host, keep the others
                reason = run.log.error(host.name, f"{type(exc).__name__}: {exc}")
                results[host.name] = {"host": host.name, "error": reason}

    with ctx_state.use(run.state), global_arguments_typed_once(), host_data_merged_once(run.hosts):
        gevent.joinall([run.state.pool.spawn(one, h) for h in run.hosts if h.name not in run.connect_errors])
    for name, reason in run.connect_errors.items():
        results[name] = {"host": name, "error": reason, "bad_input": name in run.bad_input}
    return [results[h.name] for h in run.hosts]


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


def _operation(run: Run, host: Host, label: str, op: Callable[..., Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Run one operation in change-detection mode; what it printed, whether it would change, any refusal.

    A refusal (``operations.util.refusal``) is no change: a deploy run fails the host there, writing nothing."""
    meta = run.state.get_meta_for_host(host)
    before = meta.ops_change
    run.log.begin(host.name, label)
    try:
        op(name=label, **kwargs)
    except Exception as exc:  # a failed fact surfaces as an exception in the body: name the operation
        raise HostFailed(f"{label}: {run.log.error(host.name, f'{type(exc).__name__}: {exc}')}") from exc
    run.log.begin(host.name, "")
    if host in run.state.failed_hosts:
        raise HostFailed(f"{label}: {run.log.error(host.name, 'failed')}")
    said = run.log.take(host.name, label)
    lines = [line for line in said if not line.startswith(NOOP)]
    noop = next((line.removeprefix(NOOP) for line in said if line.startswith(NOOP)), None)
    stop = refusal.refusal(run.state, host)
    refused = stop.reason if stop is not None else None
    return {"operation": label, "changes": meta.ops_change > before and refused is None, "refused": refused,
            "notRun": False, "lines": lines, "noop": noop}


def not_run(label: str) -> dict[str, Any]:
    """An operation after a refusal: a deploy run stops the host at the refusal, so it neither runs nor changes."""
    return {"operation": label, "changes": False, "refused": None, "notRun": True, "lines": [], "noop": None}


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
    owner = gitops.detect(deployment)
    operations = ([("Smallest flag change that restores headroom", inferenceservice.smallest_fix, {})] if isvc
                  else [] if kind in NO_FIX else fix_operations(ctx.policy, kind))
    fix: list[dict[str, Any]] = []
    for label, op, kwargs in operations:  # in the deploy's order; a refusal stops the host, as it stops a run
        refused = any(f["refused"] for f in fix)
        fix.append(not_run(label) if refused else _without_unreadable(_operation(run, host, label, op, kwargs)))
    return {"host": host.name, "error": None, "policy": ctx.policy.source, "cluster_time": now,
            "fix_note": fix_note(kind),
            "accept_unknown": ctx.policy.drift.accepts_unknown,
            "checks": [c.to_json() for c in (*result.checks, route)], "observed": result.observed.to_json(),
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
            hosts = _per_host(run, lambda h: plan_host(run, h))
    finally:
        _close(run)
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
            return {"host": host.name, "error": None, **_operation(run, host, label, revert_of(ctx.kind), {})}

        prepared = _per_host(run, prepare)
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
        _close(run)
    return {"inventory": inventory_path, "limit": list(limit), "seconds": round(time.monotonic() - started, 3),
            "hosts": hosts}


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


def _close(run: Run) -> None:
    for host in run.hosts:
        if host.connected:
            try:
                host.disconnect()
            except Exception:  # closing must not turn a finished check into an error
                logging.getLogger(__name__).debug("disconnect failed", exc_info=True)
    if run.fleet is not None:
        run.fleet.close()
    forget(run.state)
    forget_plans(run.state)
