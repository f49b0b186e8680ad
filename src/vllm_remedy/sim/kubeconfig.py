"""Kubeconfig for the rehearsal clusters: one context per simulated cluster, named after it.

Contexts are named exactly as the clusters so that a host string ``@k8s/<cluster>/...`` and
``kubectl --context <cluster>`` name the same thing. With auth on, ``<cluster>`` uses the default
user's token and every other token gets a ``<cluster>-<user>`` context (e.g. a read-only one).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml


def render(server_url: str, clusters: list[str], users: dict[str, str] | None = None,
           default_user: str | None = None, current: str | None = None, ca_pem: bytes | None = None,
           ) -> dict[str, Any]:
    """The kubeconfig document. ``users`` maps user name → bearer token; ``ca_pem`` the HTTPS CA."""
    users = users or {}
    default_user = default_user or (next(iter(users)) if users else None)
    kube_users = [{"name": "sim", "user": {}}] + [{"name": f"sim-{u}", "user": {"token": t}} for u, t in users.items()]
    tls = {"certificate-authority-data": base64.b64encode(ca_pem).decode()} if ca_pem else {}
    contexts = []
    for name in clusters:
        contexts.append({"name": name, "context": {
            "cluster": name, "user": f"sim-{default_user}" if default_user else "sim"}})
        contexts += [{"name": f"{name}-{u}", "context": {"cluster": name, "user": f"sim-{u}"}}
                     for u in users if u != default_user]
    return {"apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": n, "cluster": {"server": f"{server_url}/clusters/{n}", **tls}} for n in clusters],
            "users": kube_users, "contexts": contexts,
            "current-context": current or (clusters[0] if clusters else "")}


def write(path: Path, server_url: str, clusters: list[str], users: dict[str, str] | None = None,
          default_user: str | None = None, current: str | None = None, ca_pem: bytes | None = None) -> Path:
    """Write the kubeconfig (mode 0600, as it may hold tokens) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(render(server_url, clusters, users, default_user, current, ca_pem), sort_keys=False)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path
