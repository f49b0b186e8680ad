"""The ConfigMaps a Deployment's vLLM container takes its environment from, read from the cluster.

``check`` reads a pod's ``valueFrom.configMapKeyRef`` and ``envFrom.configMapRef`` from the ConfigMaps among the
files checked; drift and the deploys look at a live Deployment, whose ConfigMaps are in its namespace. The pod's
HF_ENDPOINT or HF_HUB_OFFLINE set there is the Hub its vLLM asks (``hub.pod``): read it where it is, so that a
mirror shared by a cluster's Deployments is the one asked and not this machine's. A ConfigMap that cannot be read
(absent, forbidden) is left out: the variable then stays unknown, and the model "cannot predict".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: check never imports the kubernetes client
    from vllm_remedy.kube.client import KubeClient


def names(container: Mapping[str, Any]) -> list[str]:
    """The ConfigMaps the container's ``env`` and ``envFrom`` name, each once, in order."""
    found: list[str] = []
    for entry in container.get("env") or []:
        ref = ((entry.get("valueFrom") or {}) if isinstance(entry, Mapping) else {}).get("configMapKeyRef")
        if isinstance(ref, Mapping) and ref.get("name"):
            found.append(str(ref["name"]))
    for source in container.get("envFrom") or []:
        ref = source.get("configMapRef") if isinstance(source, Mapping) else None
        if isinstance(ref, Mapping) and ref.get("name"):
            found.append(str(ref["name"]))
    return list(dict.fromkeys(found))


def read(client: KubeClient | None, namespace: str, container: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The container's ConfigMaps from ``namespace`` by name (``pod_env.config_maps``' shape); one that cannot be
    read is not in it."""
    from vllm_remedy.kube.errors import KubeError

    out: dict[str, dict[str, str]] = {}
    if client is None:
        return out
    for name in names(container):
        try:
            data = client.request("GET", client.object_path(namespace, "configmaps", name, group="v1")).get("data")
        except KubeError:
            continue
        out[name] = {str(k): "" if v is None else str(v) for k, v in (data or {}).items()}
    return out
