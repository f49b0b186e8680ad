"""One in-process pyinfra run, as the drift runner drives it: the inventory loaded as the CLI loads it, every host
connected in parallel, work done per host in greenlets with pyinfra's contexts set, one operation run in
change-detection mode at a time, and what each host printed kept per host and per operation.

Apart from ``runner`` (what drift and expire do with a run: checks, the deploys' fix, reverts) because this is
pyinfra's API alone, the part that changes when pyinfra does.

Must run in a process where ``gevent.monkey.patch_all()`` ran before urllib3 was imported — see
``python -m vllm_remedy.drift`` — or every host is served one after another. A fresh Inventory and State
per run (pyinfra's state does not survive reuse).
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gevent
from pyinfra.api import Config, State
from pyinfra.api.exceptions import ConnectError
from pyinfra.api.host import Host
from pyinfra.api.inventory import Inventory
from pyinfra.context import ctx_config, ctx_host, ctx_state
from pyinfra_cli.inventory import make_inventory

from vllm_remedy.connectors.fleet import FleetReads
from vllm_remedy.connectors.host_data import HostDataError
from vllm_remedy.connectors.k8s import K8sConnector
from vllm_remedy.drift.pyinfra_costs import connectors_listed_once, global_arguments_typed_once, host_data_merged_once
from vllm_remedy.drift.workloads import HostFailed
from vllm_remedy.errors import UserError
from vllm_remedy.operations.util import forget, forget_plans, refusal

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
        raise UserError(
            f"{inventory_path}: cannot load the inventory: {type(cause).__name__}: {' '.join(str(cause).split())}"
        ) from exc
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


def per_host(run: Run, work: Callable[[Host], dict[str, Any]]) -> list[dict[str, Any]]:
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


def run_operation(
    run: Run, host: Host, label: str, op: Callable[..., Any], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
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
    return {
        "operation": label,
        "changes": meta.ops_change > before and refused is None,
        "refused": refused,
        "notRun": False,
        "lines": lines,
        "noop": noop,
    }


def not_run(label: str) -> dict[str, Any]:
    """An operation after a refusal: a deploy run stops the host at the refusal, so it neither runs nor changes."""
    return {"operation": label, "changes": False, "refused": None, "notRun": True, "lines": [], "noop": None}


def close(run: Run) -> None:
    """Disconnect every host and drop what the run kept in pyinfra's state; never fails a finished run."""
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
