"""Two of pyinfra 3.10's per-host costs that a fleet check multiplies, paid once per run instead.

Measured with cProfile on ``bench/bench_drift.py`` (500 hosts), together ~40 % of the runner's CPU:

+ Loading an inventory, pyinfra looks up each ``@connector/...`` host's connector with
  ``get_all_connectors()``, which scans every installed distribution's entry points (importlib.metadata):
  500 hosts, 500 scans of ~150 distributions. The set of installed connectors cannot change during a load.
+ Every operation call and every fact read runs ``pop_global_arguments``, which calls
  ``all_global_arguments()`` — ``typing.get_type_hints`` over pyinfra's argument TypedDicts, re-evaluated
  each time (11 times per host in a drift check). The hints are class annotations: constant.

Both are pyinfra's own functions answered from one evaluation; their results are unchanged (tests compare).
Scoped with context managers so nothing outlives the run that asked for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyinfra.api import arguments, connectors, facts
from pyinfra.api import inventory as pyinfra_inventory


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
