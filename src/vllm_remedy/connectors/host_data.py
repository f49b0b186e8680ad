"""What a ``@k8s`` host's data may say, and how the connector reads it: the keys pyinfra is told about, their
checks, and the error a host fails with when its inventory is wrong.

Apart from the connector because others read the same keys: the rollout wait's progress interval
(``operations.util.wait``) and the drift runner's exit code for bad input (``HostDataError``).

Every key a deploy reads is registered here (``DATA_META`` for the connector's, ``DEPLOY_KEYS`` for those one
deploy reads on top), because host data is a plain dict: a misspelt ``polcy`` or ``--data eager_tl=10m`` was
silently absent, and the run went on under the built-in default policy or the policy's longest toggle. An unknown
key now fails the host at connect (``unknown_keys``), before any operation is planned.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyinfra.api.exceptions import ConnectError
from pyinfra.connectors.base import DataMeta
from typing_extensions import TypedDict

from vllm_remedy.errors import UserError


class K8sData(TypedDict, total=False):
    """Host data pyinfra carries for a @k8s host, so operations know which Deployment they act on."""

    k8s_cluster: str
    k8s_namespace: str
    k8s_deployment: str
    k8s_kind: str
    k8s_expand_error: str
    k8s_name_error: str
    k8s_contexts: Any
    kubeconfig: Any
    context: Any
    policy: Any
    container: Any
    progress_seconds: Any


DATA_META: dict[str, DataMeta] = {
    "k8s_cluster": DataMeta("cluster part of the host name (set by the connector)"),
    "k8s_namespace": DataMeta("namespace part of the host name (set by the connector)"),
    "k8s_deployment": DataMeta("workload name (set by the connector)"),
    "k8s_kind": DataMeta("workload kind when not a Deployment (set by the connector)"),
    "k8s_expand_error": DataMeta("why a namespace host could not be expanded (set by the connector)"),
    "k8s_name_error": DataMeta("why the host name is not a @k8s target (set by the connector)"),
    "k8s_contexts": DataMeta("cluster alias → kube context (or {context, kubeconfig})"),
    "kubeconfig": DataMeta("kubeconfig path; default KUBECONFIG / ~/.kube/config / in-cluster"),
    "context": DataMeta("kube context; default the alias's, else the cluster name"),
    "policy": DataMeta("policy YAML path or loaded Policy"),
    "container": DataMeta("name of the vLLM container when several run vLLM"),
    "progress_seconds": DataMeta("real seconds between a rollout wait's progress reports (0: none)"),
}
#: Real seconds between a rollout wait's progress reports unless host data ``progress_seconds`` says otherwise.
PROGRESS_SECONDS = 5.0


def data_seconds(data: K8sData, key: str, default: float) -> float:
    """A number of seconds ≥ 0 from host data (``--data key=2.5`` arrives as text)."""
    value = data.get(key)  # type: ignore[misc]
    if value is None:
        return default
    try:
        seconds = float(value) if not isinstance(value, bool) else -1.0
    except (TypeError, ValueError):
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise UserError(f"host data {key}: expected a number of seconds >= 0, got {value!r}")
    return seconds


def data_str(data: K8sData, key: str) -> str | None:
    """A non-empty string (or a path) from host data; None when unset."""
    value = data.get(key)  # type: ignore[misc]
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if not isinstance(value, str) or not value:
        raise UserError(f"host data {key}: expected a non-empty string, got {value!r}")
    return value


class HostDataError(ConnectError):
    """A host that cannot connect because of what its inventory says (a missing kubeconfig or policy file, an
    unknown context, a policy that does not cover it): bad input, not a failing cluster — callers exit 2."""


#: Keys one deploy reads on top of the connector's (``deploys/<stem>.py`` and the operations it calls). ``--data``
#: naming a key the deploys being run do not read fails the host; in the inventory such a key is a setting kept for
#: another deploy (``eager_ttl`` as a group default read only by enforce_eager) and passes.
DEPLOY_KEYS: dict[str, frozenset[str]] = {
    "budget": frozenset({"override"}),  # override=capacity: its pin step pins where only some replicas fit
    "confirm": frozenset(),
    "diagnose": frozenset(),
    "enforce_eager": frozenset({"enforce_eager", "eager_ttl", "override"}),  # override=capacity: a switch stops serving
    "load_guard": frozenset(),
    "pin_gpu": frozenset({"gpu_product", "override"}),
    "restore": frozenset({"revision", "override"}),
}
#: Keys the connector sets itself (from the host name): never the user's to misspell, so never suggested.
_SET_BY_CONNECTOR = frozenset({"k8s_cluster", "k8s_namespace", "k8s_deployment", "k8s_kind", "k8s_expand_error",
                               "k8s_name_error"})
#: Data pyinfra's own connectors read outside their ``data_meta`` (pyinfra 3.10: @chroot, @dockerssh).
_PYINFRA_EXTRA = frozenset({"chroot_directory", "docker_image"})


def pyinfra_keys() -> frozenset[str]:
    """Data keys pyinfra itself reads: its global arguments as data (``_sudo``, ``_env``, ...) and every installed
    connector's documented data (``ssh_user``, ``docker_identifier``, ...), so a shared group's data passes."""
    from pyinfra.api.arguments import all_argument_meta
    from pyinfra.api.connectors import get_all_connectors

    keys = set(all_argument_meta) | _PYINFRA_EXTRA
    for connector in get_all_connectors().values():
        keys.update(getattr(connector, "data_meta", None) or {})
    return frozenset(keys)


def deploys_run(argv: Sequence[str] | None = None) -> list[str]:
    """The stems of this project's deploy files on the pyinfra command line (``deploys/budget.py`` → ``budget``);
    empty when none is (``vllm-remedy drift``, a deploy of the user's own): then every deploy's keys are known."""
    return [Path(arg).stem for arg in (sys.argv[1:] if argv is None else argv)
            if arg.endswith(".py") and Path(arg).stem in DEPLOY_KEYS]


def unknown_keys(data: Mapping[str, Any], override: Iterable[str], deploys: Sequence[str] = ()) -> str | None:
    """Why this host's data is wrong (one line naming the key), or None.

    ``data`` is the host's whole data (inventory and ``--data``), ``override`` the keys ``--data`` set, ``deploys``
    the deploy stems run (``deploys_run``). A key starting with ``_`` passes: pyinfra's global arguments are spelt
    so, and a group data file's private helpers are too."""
    ours = set(DATA_META) | {k for keys in DEPLOY_KEYS.values() for k in keys}
    known = ours | pyinfra_keys()
    given = set(override)
    problems = []
    for key in sorted(map(str, data)):
        if key.startswith("_"):
            continue
        where = "--data" if key in given else "the inventory"
        if key not in known:
            close = difflib.get_close_matches(key, sorted(ours - _SET_BY_CONNECTOR), n=1, cutoff=0.6)
            hint = (f"did you mean {close[0]!r}?" if close else
                    f"known: {', '.join(sorted(ours - _SET_BY_CONNECTOR))}")
            problems.append(f"unknown data key {key!r} in {where} ({hint})")
        elif (key in given and deploys and key in ours - set(DATA_META)
              and not any(key in DEPLOY_KEYS[d] for d in deploys)):
            readers = [f"deploys/{d}.py" for d, keys in sorted(DEPLOY_KEYS.items()) if key in keys]
            problems.append(f"data key {key!r} in --data is not read by "
                            f"{', '.join(f'deploys/{d}.py' for d in deploys)} (only by {', '.join(readers)})")
    return "; ".join(problems) + "; nothing was changed" if problems else None
