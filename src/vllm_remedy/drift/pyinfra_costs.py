"""Four of pyinfra 3.10's per-host costs that a fleet check multiplies, paid once per run instead.

Measured with cProfile on ``bench/bench_drift.py`` (500 hosts):

+ Loading an inventory, pyinfra looks up each ``@connector/...`` host's connector with
  ``get_all_connectors()``, which scans every installed distribution's entry points (importlib.metadata):
  500 hosts, 500 scans of ~150 distributions. The set of installed connectors cannot change during a load.
+ Every operation call and every fact read runs ``pop_global_arguments``, which calls
  ``all_global_arguments()`` — ``typing.get_type_hints`` over pyinfra's argument TypedDicts, re-evaluated
  each time (11 times per host in a drift check). The hints are class annotations: constant.
+ ... and then looks up each of the ~25 global arguments in the host's data: every lookup calls
  ``inventory.get_groups_data(groups)``, which merges the dicts of every group the host is in (360 merges per
  host). A run that only plans changes no inventory, host or group data.
+ pyinfra 3.10 keeps no fact cache: a drift check reads the Deployment fact four times per host (the checks and
  three operations), each read paying the argument handling above, a JSON parse and the fact's processing. In a
  run whose connector answers from a read snapshot (``K8sConnector.share``) a fact cannot change: it is
  processed once per host and each caller gets its own copy.

Each is pyinfra's own answer computed once; the answers are unchanged (tests compare). Scoped with context
managers so nothing outlives the run that asked for it.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from pyinfra.api import arguments, connectors, facts
from pyinfra.api import inventory as pyinfra_inventory
from pyinfra.api.host import Host


@contextmanager
def connectors_listed_once() -> Iterator[None]:
    """While loading an inventory: pyinfra's connector lookups answered from one entry-point scan."""
    listed = connectors.get_all_connectors()
    execution = {name: cls for name, cls in listed.items() if cls.handles_execution}
    saved = pyinfra_inventory.get_all_connectors, pyinfra_inventory.get_execution_connectors
    pyinfra_inventory.get_all_connectors = lambda: dict(listed)
    pyinfra_inventory.get_execution_connectors = lambda: dict(execution)
    try:
        yield
    finally:
        pyinfra_inventory.get_all_connectors, pyinfra_inventory.get_execution_connectors = saved


@contextmanager
def global_arguments_typed_once() -> Iterator[None]:
    """While operations and facts run: ``all_global_arguments()`` evaluated once (a fresh list per call)."""
    hints = arguments.all_global_arguments()
    saved = arguments.all_global_arguments, facts.all_global_arguments
    arguments.all_global_arguments = facts.all_global_arguments = lambda: list(hints)
    try:
        yield
    finally:
        arguments.all_global_arguments, facts.all_global_arguments = saved


@contextmanager
def host_data_merged_once(hosts: Iterable[Host]) -> Iterator[None]:
    """While a run that changes no inventory data plans: each host's inventory-level data (override, host, groups,
    global - pyinfra's waterfall, first wins) merged into one dict. Data set on the host during the run
    (``host.data.x = ...``) and ``@deploy`` defaults are looked up as before, before and after it."""
    saved: list[tuple[Any, tuple[Any, ...]]] = []
    for host in hosts:
        datas = host.data.__dict__.get("datas")
        # pyinfra 3.10's Host: (run overrides, inventory override, host, groups, global, deploy defaults)
        if not (isinstance(datas, tuple) and len(datas) == 6 and all(callable(d) for d in datas[1:])):
            continue  # another pyinfra layout: leave it alone (slower, never wrong)
        merged: dict[str, Any] = {}
        for layer in reversed(datas[1:5]):
            merged.update(layer())
        saved.append((host.data, datas))
        host.data.__dict__["datas"] = (datas[0], merged, datas[5])
    try:
        yield
    finally:
        for data, datas in saved:
            data.__dict__["datas"] = datas


@contextmanager
def facts_read_once(hosts: Iterable[Host], wanted: Callable[[Host], bool]) -> Iterator[None]:
    """While a run whose reads are a snapshot plans: each ``wanted`` host's facts processed once per (fact, arguments);
    every caller gets a fresh copy. A fact that fails, or whose data is not plain (marshal), is read every time."""
    patched = []
    for host in hosts:
        if wanted(host):
            host.get_fact = _once_per_host(host.get_fact)  # type: ignore[method-assign]
            patched.append(host)
    try:
        yield
    finally:
        for host in patched:
            del host.get_fact  # the class's method again


def _once_per_host(read: Callable[..., Any]) -> Callable[..., Any]:
    kept: dict[Any, bytes] = {}

    def get_fact(name_or_cls: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            key = (name_or_cls, args, tuple(sorted(kwargs.items())))
            hash(key)
        except TypeError:
            return read(name_or_cls, *args, **kwargs)
        if key in kept:
            return marshal.loads(kept[key])
        value = read(name_or_cls, *args, **kwargs)
        if value is not None:
            with suppress(ValueError):  # not plain data: nothing kept
                kept[key] = marshal.dumps(value)
        return value

    return get_fact
