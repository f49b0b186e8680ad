"""Reading a workload of any kind in :mod:`.kinds`, and telling "not served" from "not found".

Why the distinction matters: ``@k8s/prod/llm/leaderworkerset/x`` against a cluster without the LWS CRD
and against one where ``x`` was deleted both answer 404, but the operator's fix differs (install the CRD or
fix the host name vs. fix the name). Discovery (``GET /apis/<group>/<version>``) says which.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import NotFoundError
from vllm_remedy.kube.kinds import Kind


class NotServedError(UserError):
    """The cluster does not serve this kind at all (its API group or CRD is not installed)."""


def served(client: KubeClient, kind: Kind) -> bool:
    """Whether the cluster's discovery lists ``kind``'s resource (False on a 404 for its group/version)."""
    try:
        listing = client.request("GET", f"/apis/{kind.group}")
    except NotFoundError:
        return False
    return any(r.get("name") == kind.resource for r in listing.get("resources") or [] if isinstance(r, dict))


def _not_served(client: KubeClient, kind: Kind) -> NotServedError:
    return NotServedError(f"kind {kind.kind} ({kind.resource}.{kind.group.split('/')[0]}) is not served by "
                          f"context {client.context}: its API group or CRD is not installed")


def get_workload(client: KubeClient, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
    """The object, or NotServedError when the kind is unknown to the cluster (NotFoundError when only it is absent)."""
    try:
        return client.request("GET", client.object_path(namespace, kind.resource, name, kind.group))
    except NotFoundError:
        if not served(client, kind):
            raise _not_served(client, kind) from None
        raise


def list_workloads(client: KubeClient, kind: Kind, namespace: str) -> list[dict[str, Any]]:
    """Every object of ``kind`` in the namespace; [] when the cluster does not serve the kind (nothing to expand).

    A 403 is raised as is: a kind we may not list could hide a vLLM workload, and callers decide whether that
    stops them (see :func:`vllm_remedy.connectors.namespaces.list_vllm_workloads`).
    """
    if not served(client, kind):
        return []
    got = client.request("GET", client.object_path(namespace, kind.resource, group=kind.group))
    return list(got.get("items") or [])
