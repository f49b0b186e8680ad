"""URL paths → what is being asked for, with kube's 404s for paths that name nothing it serves."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_remedy.sim.api.resources import Resource, lookup
from vllm_remedy.sim.store import ApiError


@dataclass(frozen=True)
class Route:
    """A resource request: ``namespace`` None means across namespaces (or cluster-scoped)."""

    resource: Resource
    namespace: str | None
    name: str | None = None
    subresource: str | None = None
    rest: str = ""  # the path after pods/NAME/proxy
    watch_prefix: bool = False  # legacy /api/v1/watch/... form


def _not_found(path: str) -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {"causes": [
        {"reason": "UnexpectedServerResponse", "message": f"404 page not found: {path}"}]})


def parse(path: str, installed: frozenset[str] | set[str] = frozenset()) -> Route:
    """Parse ``/api/v1/...`` or ``/apis/<group>/<version>/...`` (discovery paths are handled before this);
    ``installed``: the optional CRDs this cluster serves."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise _not_found(path)
    watch_prefix = False
    if rest[:1] == ["watch"]:
        watch_prefix, rest = True, rest[1:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    elif rest[:1] == ["namespaces"] and len(rest) == 2:
        pass  # the Namespace object itself
    resource = lookup(group, version, rest[0], installed) if rest else None
    if resource is None:
        raise _not_found(path)
    if namespace is not None and not resource.namespaced:
        raise _not_found(path)
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    tail = "/".join(rest[3:])
    if sub is not None and sub not in resource.subresources:
        raise _not_found(path)
    if tail and sub != "proxy":
        raise _not_found(path)
    if sub == "proxy" and path.endswith("/") and tail:
        tail += "/"
    return Route(resource, namespace, name, sub, tail, watch_prefix)
