"""What a ``@k8s`` host's data may say, and how the connector reads it: the keys pyinfra is told about, their
checks, and the error a host fails with when its inventory is wrong.

Apart from the connector because others read the same keys: the rollout wait's progress interval
(``operations.util.wait``) and the drift runner's exit code for bad input (``HostDataError``).
"""

from __future__ import annotations

import os
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
