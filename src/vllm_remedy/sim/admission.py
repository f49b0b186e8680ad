"""Mutating admission plugins a cloud's control plane enables, for worlds that copy that cloud (seed ``admission``).

GKE turns on ``ExtendedResourceToleration`` and taints its GPU node pools ``nvidia.com/gpu=present:NoSchedule``:
a pod that requests ``nvidia.com/gpu`` gets the matching toleration at creation, which is why GPU pods land on
those pools without writing one. A world without the plugin (kind, most self-managed clusters) needs the
toleration in the manifest, so a rehearsal must say which one it copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vllm_remedy.errors import UserError

Obj = dict[str, Any]
Plugin = Callable[[str, Obj], None]


def is_extended_resource(name: str) -> bool:
    """Kubernetes' ``IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io``, not ``requests.*``."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def extended_resource_toleration(resource: str, obj: Obj) -> None:
    """For a new pod: one ``{key: <resource>, operator: Exists, effect: NoSchedule}`` toleration per extended
    resource its containers request or limit (sorted, as the plugin's set is), unless an equal one is there."""
    if resource != "pods":
        return
    spec = obj.get("spec") or {}
    names: set[str] = set()
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for part in ("requests", "limits"):
            names.update(k for k in ((c.get("resources") or {}).get(part) or {}) if is_extended_resource(k))
    if not names:
        return
    tolerations = list(spec.get("tolerations") or [])
    for name in sorted(names):
        wanted = {"key": name, "operator": "Exists", "effect": "NoSchedule"}
        if wanted not in tolerations:
            tolerations.append(wanted)
    obj.setdefault("spec", {})["tolerations"] = tolerations


PLUGINS: dict[str, Plugin] = {"ExtendedResourceToleration": extended_resource_toleration}


def plugins(names: Any, where: str) -> list[Plugin]:
    """The plugins a seed's ``admission: [Name, ...]`` enables; a UserError naming ``where`` for unknown ones."""
    if names is None:
        return []
    if not isinstance(names, list):
        raise UserError(f"{where}: admission: expected a list of plugin names ({', '.join(PLUGINS)})")
    out = []
    for name in names:
        if name not in PLUGINS:
            raise UserError(f"{where}: admission: unknown plugin {name!r} (have: {', '.join(PLUGINS)})")
        out.append(PLUGINS[name])
    return out
