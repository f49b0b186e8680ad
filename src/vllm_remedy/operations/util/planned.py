"""The objects as this run's earlier operations will have left them: what later operations plan on while
changes are detected.

Why: pyinfra detects every operation's changes before it executes any (``--dry``, the prompt), each body
reading the cluster as it is *now*. A deploy whose second operation changes an object the first one
already changes (``budget.py``: the GPU pin, then the smallest fix; ``restore.py``: the route shift, then
the route shifted back) would show a diff planned on a state execution never sees — the approved diff is
then not the run. So while detecting, each planned write leaves its result here (``write.write_command``
records it), and the next operation's read of that object (``context.deployment_object``,
:func:`current`) returns it instead. Executing bodies read the cluster, which by then really is in that
state; a ``-y`` run never detects, so it never reads from here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

#: (run, host, API path) → the object once the writes planned so far in this run are made.
_PLANNED: dict[tuple[int, str, str], dict[str, Any]] = {}
#: Keys of Deployments whose pod template an earlier operation of the run plans to change.
_RETEMPLATED: set[tuple[int, str, str]] = set()
#: Keys of workloads an operation of the run rolls back (planned or written) → the revision it restores.
_ROLLED_BACK: dict[tuple[int, str, str], int] = {}


def _key(host: Any, path: str) -> tuple[int, str, str]:
    return (id(getattr(host, "state", None)), str(host.name), path)


def _detecting(host: Any) -> bool:
    state = getattr(host, "state", None)
    return state is not None and not state.is_executing


def current(host: Any, path: str, fresh: Mapping[str, Any]) -> dict[str, Any]:
    """``fresh`` (the object as read now), or - while changes are detected - the object an earlier operation of
    this run plans to write."""
    planned = _PLANNED.get(_key(host, path)) if _detecting(host) else None
    return copy.deepcopy(planned if planned is not None else dict(fresh))


def record(host: Any, path: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    """While detecting: the write planned on ``before`` leaves ``after``; later reads of ``path`` get it. A spec
    change bumps ``metadata.generation`` as the API server would (a rollout wait sees it as not yet observed)."""
    if not _detecting(host):
        return
    planned = copy.deepcopy(dict(after))
    before_spec, after_spec = before.get("spec") or {}, planned.get("spec") or {}
    if before_spec != after_spec:
        meta = planned.setdefault("metadata", {})
        meta["generation"] = int((before.get("metadata") or {}).get("generation") or 0) + 1
    if before_spec.get("template") != after_spec.get("template"):
        _RETEMPLATED.add(_key(host, path))
    _PLANNED[_key(host, path)] = planned


def pods(host: Any, path: str, fact: Mapping[str, Any] | None) -> Any:
    """The Pods fact of the Deployment at ``path`` as the run will leave it: once an earlier operation plans a new pod
    template, no pod running now is of the revision that will be current (the rollout replaces them all) — what a
    ``-y`` run's later operations see right after that write."""
    if fact is None or not _detecting(host) or _key(host, path) not in _RETEMPLATED:
        return fact  # None: the fact failed, and pyinfra failed the host
    return {**fact, "pods": [{**pod, "new": False} for pod in fact.get("pods") or []]}


def rolled_out(host: Any, path: str) -> None:
    """While detecting: an operation waits for the rollout of the Deployment at ``path`` (it fails the host if that
    never finishes), so later operations see it rolled out and Ready."""
    key = _key(host, path)
    planned = _PLANNED.get(key) if _detecting(host) else None
    if planned is None:
        return
    replicas = int((planned.get("spec") or {}).get("replicas", 1))
    status = {k: v for k, v in (planned.get("status") or {}).items() if k != "conditions"}
    status.update(observedGeneration=(planned.get("metadata") or {}).get("generation"), replicas=replicas,
                  updatedReplicas=replicas, readyReplicas=replicas, availableReplicas=replicas)
    planned["status"] = status


def rolls_back(host: Any, path: str, revision: int) -> None:
    """An operation of this run rolls the workload at ``path`` back to ``revision`` (in ``--dry`` and at the prompt
    it plans to, with ``-y`` it does): later operations name that revision, not the one the facts still call current.
    """
    _ROLLED_BACK[_key(host, path)] = revision


def rolled_back_to(host: Any, path: str) -> int | None:
    """The revision an earlier operation of this run rolls the workload at ``path`` back to, or None."""
    return _ROLLED_BACK.get(_key(host, path))


def detecting(host: Any) -> bool:
    """Whether this body runs to detect changes (``--dry``, the prompt), not to execute them."""
    return _detecting(host)


def forget(run: int) -> None:
    """Drop one run's planned objects (the Python API reuses the process)."""
    for key in [k for k in _PLANNED if k[0] == run]:
        del _PLANNED[key]
    for key in [k for k in _ROLLED_BACK if k[0] == run]:
        del _ROLLED_BACK[key]
    _RETEMPLATED.difference_update([k for k in _RETEMPLATED if k[0] == run])
