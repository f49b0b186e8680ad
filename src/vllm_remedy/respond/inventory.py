"""The inventory's hosts as the pyinfra CLI expands them, each with its kube access and respond policy (I/O).

Read in a child process (``python -m vllm_remedy.respond.inventory INVENTORY``), as drift does: pyinfra's
inventory loader lives in ``pyinfra_cli``, whose import monkey-patches the whole process for gevent — which the
responder's threads and HTTP server must not be. The child also keeps the user's inventory code out of the
long-running server. Loading takes seconds, so :class:`Cache` loads it once and again only when the file
changes — or, for an alert naming no host, when the last load is older than a minute: a namespace host
(``@k8s/<cluster>/<namespace>``) expands to the vLLM Deployments there at load time.

Each host's data is checked at every load as the deploys' connect checks it (``host_data.unknown_keys``): a
misspelt key must stop the responder at start, not be found at the page it was started to answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vllm_remedy.connectors.host_data import unknown_keys
from vllm_remedy.connectors.hosts import resolve_access
from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.printable import escaped
from vllm_remedy.policy import DEFAULT_POLICY, Policy, load_policies, load_policy, policy_for

from .routing import InventoryHost

#: Host data the parent needs: kube access (the connector's keys) and what the child resolved.
_KEYS = ("context", "kubeconfig", "k8s_contexts")


def load(path: str, timeout: float = 120) -> list[InventoryHost]:
    """Every ``@k8s`` Deployment host of the inventory file at ``path``; UserError naming the file otherwise."""
    if not os.path.isfile(path):
        raise UserError(f"{path}: no such inventory file")
    try:
        done = subprocess.run([sys.executable, "-m", "vllm_remedy.respond.inventory", path], capture_output=True,
                              text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UserError(f"{path}: the inventory did not load within {timeout:.0f}s") from None
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        tail = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["no output"]
        raise UserError(f"{path}: cannot load the inventory (exit {done.returncode}): {tail[0].strip()}") from None
    if "error" in doc:
        raise UserError(str(doc["error"]))
    return [InventoryHost(h["name"], h["cluster"], h["namespace"], h["deployment"], h["data"]) for h in doc["hosts"]]


class Cache:
    """The inventory's hosts, loaded in a child process once and again when the file's mtime or size changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.loads = 0
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._loaded_at = 0.0
        self._hosts: list[InventoryHost] = []

    def hosts(self, max_age: float | None = None) -> list[InventoryHost]:
        """The hosts; reloaded when the file changed or the last load is older than ``max_age`` seconds."""
        with self._lock:
            try:
                st = os.stat(self.path)
            except OSError:
                raise UserError(f"{self.path}: no such inventory file") from None
            stamp = (st.st_mtime_ns, st.st_size)
            stale = max_age is not None and time.monotonic() - self._loaded_at > max_age
            if stamp != self._stamp or stale:
                self._hosts = load(self.path)
                self._stamp, self._loaded_at = stamp, time.monotonic()
                self.loads += 1
            return self._hosts


def client_for(host: InventoryHost) -> KubeClient:
    """The API client the connector would open for ``host`` (host data context, kubeconfig, k8s_contexts)."""
    data = host.data
    access = resolve_access(host.cluster, context=data.get("context"), kubeconfig=data.get("kubeconfig"),
                            aliases=data.get("k8s_contexts"))
    return KubeClient.for_context(access.context, access.kubeconfig)


def owner_deployment(host: InventoryHost, namespace: str, pod: str) -> str | None:
    """The Deployment that owns ``pod`` (through its ReplicaSet), or None when there is no such pod or owner."""
    try:
        client = client_for(host)
        obj = client.request("GET", client.object_path(namespace, "pods", pod, group="v1"))
        rs = _controller(obj, "ReplicaSet")
        if rs is None:
            return None
        return _controller(client.request("GET", client.object_path(namespace, "replicasets", rs)), "Deployment")
    except (KubeError, UserError):
        return None


def _controller(obj: dict[str, Any], kind: str) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind:
            return str(ref.get("name"))
    return None


def _policy(value: Any, namespace: str, deployment: str) -> Policy:
    """Host data ``policy`` as the connector reads it: a Policy, a file, or a directory chosen by target."""
    if value is None:
        return DEFAULT_POLICY
    if isinstance(value, Policy):
        return value
    path = Path(str(value))
    if not path.is_dir():
        return load_policy(path)
    return policy_for(load_policies(path), str(path), namespace, deployment, None)


def _respond(data: dict[str, Any], namespace: str, deployment: str) -> dict[str, Any]:
    try:
        policy = _policy(data.get("policy"), namespace, deployment)
    except UserError as exc:
        return {"error": str(exc)}
    return {"mode": policy.respond.mode, "cooldown": policy.respond.cooldown.total_seconds(),
            "policy": policy.source, "annotation_prefix": policy.annotation_prefix}


def respond_policy(host: InventoryHost) -> dict[str, Any]:
    """The host's ``respond`` policy (mode, cool-down, annotation prefix) as its policy file says now.

    The inventory is loaded again only when its own file changes, so the values resolved at load would keep a
    changed ``respond.cooldown`` (or mode) out until then; a host whose policy is a file or directory is read again
    here, per page (a validated YAML read). A policy built in the inventory's code keeps the values of the load."""
    source = host.data.get("policy_file")
    if not isinstance(source, str):
        return dict(host.data.get("respond") or {})
    return _respond({"policy": source}, host.namespace, host.deployment)


def _child(path: str) -> dict[str, Any]:
    # Imported here, only ever in the child process: pyinfra_cli monkey-patches for gevent (module docstring).
    from pyinfra.api import State
    from pyinfra.context import ctx_state
    from pyinfra_cli.inventory import make_inventory

    try:
        with ctx_state.use(State()):
            inventory = make_inventory(path, cwd=os.getcwd())
    except Exception as exc:  # the user's inventory code: any error is bad input, named with the file
        cause = getattr(exc, "exception", exc)
        return {"error": f"{path}: cannot load the inventory: {type(cause).__name__}: {' '.join(str(cause).split())}"}
    hosts = []
    for host in inventory:
        data = host.data.dict()
        if not data.get("k8s_deployment"):
            continue
        problem = unknown_keys(data, ())  # the deploys' connect would refuse this host at the page
        if problem is not None:
            line = " ".join(problem.removesuffix("; nothing was changed").split())
            return {"error": f"{path}: {escaped(host.name)}: {escaped(line)}"}
        namespace, deployment = str(data["k8s_namespace"]), str(data["k8s_deployment"])
        kept = {k: data[k] for k in _KEYS if isinstance(data.get(k), (str, dict))}
        kept["respond"] = _respond(data, namespace, deployment)
        if isinstance(data.get("policy"), (str, os.PathLike)):  # read again per page (respond_policy)
            kept["policy_file"] = os.path.abspath(os.fspath(data["policy"]))
        hosts.append({"name": host.name, "cluster": str(data["k8s_cluster"]), "namespace": namespace,
                      "deployment": deployment, "data": kept})
    return {"hosts": hosts}


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1]), default=str))
