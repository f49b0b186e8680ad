"""Write verbs: create (POST), update (PUT), patch (four content types), delete, deletecollection.

Every write goes store-ward through one path — defaulting, validation, managedFields — so that
``dryRun=All`` previews exactly what a real write would store, and a no-op patch stays a no-op.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from vllm_remedy.sim.api import apply as ssa
from vllm_remedy.sim.api.defaults import check_statefulset_update, default_and_validate
from vllm_remedy.sim.api.http import Request, Response, json_response
from vllm_remedy.sim.api.patch import json_patch, merge_patch, strategic_merge_patch
from vllm_remedy.sim.api.reads import matcher, scale_of, with_type
from vllm_remedy.sim.api.resources import BY_KEY, Resource
from vllm_remedy.sim.api.routing import Route
from vllm_remedy.sim.api.validation import check_types, field_validation
from vllm_remedy.sim.controllers.termination import delete_pod, parse_grace
from vllm_remedy.sim.protocols import ClusterLike
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
CONFLICT_RETRIES = 5


def field_manager(req: Request) -> str:
    """The fieldManager query parameter, else the User-Agent's product name, as the apiserver picks it."""
    if req.query.get("fieldManager"):
        return req.query["fieldManager"]
    agent = req.headers.get("user-agent", "unknown")
    return agent.split("/")[0] or "unknown"


def _check_identity(route: Route, obj: Obj) -> None:
    res = route.resource
    if obj.get("apiVersion") not in (None, res.api_version):
        raise ApiError(400, "BadRequest", f"the API version in the data ({obj['apiVersion']}) does not match the "
                                          f"expected API version ({res.api_version})")
    if obj.get("kind") not in (None, res.kind):
        raise ApiError(400, "BadRequest", f"the kind in the data ({obj['kind']}) does not match the expected "
                                          f"kind ({res.kind})")
    meta = obj.setdefault("metadata", {})
    if route.name is not None and meta.get("name") not in (None, route.name):
        raise ApiError(400, "BadRequest", f"the name of the object ({meta['name']}) does not match the name on "
                                          f"the URL ({route.name})")
    if res.namespaced:
        if meta.get("namespace") and route.namespace and meta["namespace"] != route.namespace:
            raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                                              "sent on the request")
        meta["namespace"] = route.namespace or meta.get("namespace") or ""
        if not meta["namespace"]:
            raise ApiError(400, "BadRequest", "an empty namespace may not be set during creation")
    else:
        meta.pop("namespace", None)
    obj["apiVersion"], obj["kind"] = res.api_version, res.kind


def _require_namespace(store: Store, res: Resource, namespace: str) -> None:
    if res.namespaced and store.find("namespaces", "", namespace) is None:
        raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                       {"name": namespace, "kind": "namespaces"})


def create(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """POST: server-owned metadata is reset and the namespace must exist, as kube-apiserver enforces."""
    if route.name is not None:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    obj = req.object_body()
    _check_identity(route, obj)
    res, store = route.resource, cluster.store
    _require_namespace(store, res, obj["metadata"].get("namespace", ""))
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "deletionTimestamp"):
        obj["metadata"].pop(key, None)
    if res.key in ("deployments.apps", "replicasets.apps"):
        obj.pop("status", None)
    warnings = field_validation(res.key, res.kind, obj, req.query.get("fieldValidation"))
    default_and_validate(res.key, obj)
    ssa.record_update({"metadata": {}}, obj, field_manager(req), cluster.clock.timestamp())
    made = store.create(res.key, obj, dry_run=req.dry_run())
    return _warned(json_response(made, 201), warnings)


def _warned(resp: Response, headers: dict[str, str]) -> Response:
    resp.headers.update(headers)
    return resp


def _write(cluster: ClusterLike, route: Route, req: Request, change: Callable[[Obj], Obj], *,
           retry: bool, applied: bool = False) -> Response:
    """Read, change, validate, store — retrying on a 409 caused by a concurrent writer when the caller
    gave no resourceVersion precondition (what the apiserver's GuaranteedUpdate does). ``applied``: the
    change is a server-side apply, which has set managedFields itself (no Update entry for it)."""
    assert route.name is not None
    res, store = route.resource, cluster.store
    status_only = route.subresource == "status"
    for attempt in range(CONFLICT_RETRIES):
        current = store.get(res.key, route.namespace or "", route.name)
        new = change(copy.deepcopy(current))
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise ApiError(422, "Invalid", "the patched object is not a Kubernetes object")
        precondition = new["metadata"].get("resourceVersion")
        user_precondition = precondition != current["metadata"].get("resourceVersion")
        _check_identity(route, new)
        warnings: dict[str, str] = {}
        if status_only:
            check_types(res.key, new)
        else:
            warnings = field_validation(res.key, res.kind, new, req.query.get("fieldValidation"))
            default_and_validate(res.key, new, current)
            if res.key == "statefulsets.apps":
                check_statefulset_update(current, new)
            if not applied:
                ssa.record_update(current, new, field_manager(req), cluster.clock.timestamp())
        try:
            saved = store.update(res.key, new, status=status_only, dry_run=req.dry_run())
        except ApiError as err:
            if err.code == 409 and retry and not user_precondition and attempt < CONFLICT_RETRIES - 1:
                continue
            raise
        return _warned(json_response(with_type(route, saved)), warnings)
    raise AssertionError("unreachable")


def update(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """PUT: whole-object replace guarded by resourceVersion, so stale writers get a 409."""
    if route.name is None:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    body = req.object_body()
    if route.subresource == "scale":
        return _scale(cluster, route, req, lambda scale: body)

    def replace(current: Obj) -> Obj:
        new = copy.deepcopy(body)
        new.setdefault("metadata", {})
        if route.subresource == "status":
            current["status"] = new.get("status", {})
            if new["metadata"].get("resourceVersion"):
                current["metadata"]["resourceVersion"] = new["metadata"]["resourceVersion"]
            return current
        if not new["metadata"].get("resourceVersion"):
            new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        new["metadata"].setdefault("managedFields", current["metadata"].get("managedFields"))
        if new["metadata"]["managedFields"] is None:
            new["metadata"].pop("managedFields")
        return new

    return _write(cluster, route, req, replace, retry=False)


def _patcher(route: Route, req: Request) -> Callable[[Obj], Obj]:
    kind = req.content_type
    if kind == "application/json-patch+json":
        ops = req.json_body()
        return lambda current: json_patch(current, ops)
    if kind == "application/merge-patch+json":
        body = req.json_body()
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "merge patch must be a JSON object")
        return lambda current: merge_patch(current, body)
    if kind == "application/strategic-merge-patch+json":
        if route.resource.crd and route.subresource != "scale":
            raise _unsupported(f"strategic merge patch is not supported for {route.resource.key}")
        body = req.json_body()
        return lambda current: strategic_merge_patch(current, body)
    raise _unsupported(f"the body of the request was in an unknown format ({kind or 'none'})")


def _unsupported(why: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", f"{why} - accepted media types include: {', '.join(PATCH_TYPES)}")


def patch(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """PATCH in merge, JSON, strategic or server-side-apply form; non-apply patches retry on conflict."""
    if route.name is None:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    if req.content_type == "application/apply-patch+yaml":
        return _apply(cluster, route, req)
    change = _patcher(route, req)
    if route.subresource == "scale":
        return _scale(cluster, route, req, change)
    return _write(cluster, route, req, change, retry=True)


def _scale(cluster: ClusterLike, route: Route, req: Request, change: Callable[[Obj], Obj]) -> Response:
    def to_replicas(current: Obj) -> Obj:
        scale = change(scale_of(current, route.resource.key))
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise ApiError(422, "Invalid", f"Scale.autoscaling \"{route.name}\" is invalid: spec.replicas: "
                                           f"Invalid value: {replicas}: must be greater than or equal to 0")
        current["spec"]["replicas"] = replicas
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv:
            current["metadata"]["resourceVersion"] = rv
        return current

    plain = Route(route.resource, route.namespace, route.name)
    saved = _write(cluster, plain, req, to_replicas, retry=True)
    return json_response(scale_of(json.loads(saved.body), route.resource.key))


def _apply(cluster: ClusterLike, route: Route, req: Request) -> Response:
    manager = req.query.get("fieldManager")
    if not manager:
        raise ApiError(400, "BadRequest", "PATCH /apply requires a fieldManager query parameter")
    force = req.query.get("force") in ("true", "1")
    body = req.object_body(yaml_ok=True)
    if route.subresource:
        raise ApiError(400, "BadRequest", f"server-side apply to the {route.subresource} subresource is not served")
    _check_identity(route, body)
    store, res = cluster.store, route.resource
    when = cluster.clock.timestamp()
    if store.find(res.key, route.namespace or "", route.name or "") is None:
        _require_namespace(store, res, body["metadata"].get("namespace", ""))
        new = ssa.apply(None, body, manager, force, when)
        warnings = field_validation(res.key, res.kind, new, req.query.get("fieldValidation"))
        default_and_validate(res.key, new)
        try:
            return _warned(json_response(store.create(res.key, new, dry_run=req.dry_run()), 201), warnings)
        except ApiError as err:
            if err.code != 409:
                raise
    return _write(cluster, route, req, lambda current: ssa.apply(current, body, manager, force, when),
                  retry=True, applied=True)


def _dependents(store: Store, uid: str, namespace: str) -> list[tuple[str, Obj]]:
    found = []
    for key in ("replicasets.apps", "pods"):
        items, _ = store.list(key, namespace or None)
        found += [(key, o) for o in items
                  if any(ref.get("uid") == uid for ref in o["metadata"].get("ownerReferences") or [])]
    return found


def _delete_one(cluster: ClusterLike, key: str, namespace: str, name: str, *, cascade: bool, dry_run: bool,
                grace: int | None = None) -> Obj:
    """Delete with background propagation: owned ReplicaSets and Pods go too (the garbage collector).

    A pod is deleted gracefully: it answers Terminating with its deletionTimestamp until its kubelet stops it.
    """
    store = cluster.store
    if key == "pods":
        return delete_pod(store, cluster.clock, namespace, name, grace, dry_run=dry_run)
    gone = store.delete(key, namespace, name, dry_run=dry_run)
    if dry_run:
        return gone
    if key == "namespaces":
        doomed = [(res.key, obj) for res in BY_KEY.values() if res.namespaced for obj in store.list(res.key, name)[0]]
        namespace = name
    elif cascade:
        doomed = _dependents(store, gone["metadata"].get("uid", ""), namespace)
    else:
        doomed = []
    for dep_key, dep in doomed:
        try:
            _delete_one(cluster, dep_key, namespace, dep["metadata"]["name"], cascade=True, dry_run=False)
        except ApiError as err:  # a controller got there first
            if err.code != 404:
                raise
    return gone


def delete(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """DELETE with propagation policy and preconditions, so cascading deletes behave as on a real cluster."""
    options: Obj = req.object_body() if req.body.strip() else {}
    policy = req.query.get("propagationPolicy") or options.get("propagationPolicy") or "Background"
    pre = options.get("preconditions") or {}
    if not isinstance(pre, dict):
        raise ApiError(400, "BadRequest", "preconditions: expected an object with resourceVersion and/or uid")
    if policy not in ("Background", "Foreground", "Orphan"):
        raise ApiError(400, "BadRequest", f"propagationPolicy: Unsupported value: {policy!r}")
    grace = parse_grace(req.query.get("gracePeriodSeconds", options.get("gracePeriodSeconds")), "DeleteOptions")
    store, key, namespace = cluster.store, route.resource.key, route.namespace or ""
    if route.name is None:
        items, _ = store.list(key, route.namespace, matcher(route, req))
        gone = [_delete_one(cluster, key, o["metadata"].get("namespace", ""), o["metadata"]["name"],
                            cascade=policy != "Orphan", dry_run=req.dry_run(), grace=grace) for o in items]
        return json_response({"kind": f"{route.resource.kind}List", "apiVersion": route.resource.api_version,
                              "metadata": {"resourceVersion": store.resource_version}, "items": gone})
    if route.subresource:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    current = store.get(key, namespace, route.name)
    for field in ("resourceVersion", "uid"):
        if pre.get(field) and pre[field] != current["metadata"].get(field):
            raise ApiError(409, "Conflict", f"Precondition failed: {field} in precondition: {pre[field]}, "
                                            f"{field} in object meta: {current['metadata'].get(field)}")
    gone = _delete_one(cluster, key, namespace, route.name, cascade=policy != "Orphan", dry_run=req.dry_run(),
                       grace=grace)
    if key in ("pods", "namespaces", "services") or gone["metadata"].get("deletionTimestamp"):
        return json_response(with_type(route, gone))  # these return the object (Services: ReturnDeletedObject)
    return json_response(deleted_status(route, gone))


def deleted_status(route: Route, gone: Obj) -> Obj:
    """The Status kube-apiserver answers an immediate DELETE with (``details.kind`` is the resource: the
    generic registry's own quirk), rather than the object, for every kind that does not return it."""
    details = {"name": gone["metadata"]["name"], "group": route.resource.group, "kind": route.resource.plural,
               "uid": gone["metadata"].get("uid", "")}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {k: v for k, v in details.items() if v}}
