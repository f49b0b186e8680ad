"""GET verbs: get, list, watch, pods/log, pods/proxy and the scale subresource."""

from __future__ import annotations

import base64
import json
import random
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

from vllm_remedy.sim.api import events_v1, heartbeats, tables
from vllm_remedy.sim.api.http import Request, Response, json_response
from vllm_remedy.sim.api.routing import Route
from vllm_remedy.sim.api.selectors import field_matcher, format_label_selector, label_matcher
from vllm_remedy.sim.clock import parse_timestamp
from vllm_remedy.sim.protocols import ClusterLike
from vllm_remedy.sim.store import ApiError, Store, not_found

Obj = dict[str, Any]
DEFAULT_WATCH_SECONDS = 1800
IDLE_TICK = 5.0  # real seconds: an idle watch sends a BOOKMARK (if allowed) or checks the client is still there


def matcher(route: Route, req: Request) -> Any:
    """A predicate for labelSelector/fieldSelector, or None to list everything without filtering."""
    labels = label_matcher(req.query.get("labelSelector"))
    fields = field_matcher(req.query.get("fieldSelector"), route.resource.store_key)
    if labels is None and fields is None:
        return None
    return lambda obj: (labels is None or labels(obj)) and (fields is None or fields(obj))


def with_type(route: Route, obj: Obj, now: float | None = None, req: Request | None = None) -> Obj:
    """Stored objects omit apiVersion/kind; clients expect them on every read. With ``now`` (the cluster's),
    node heartbeats are shown as of then. Times stay on the cluster clock here; kubectl gets them moved onto its
    wall clock on the way out (``reader_clock``)."""
    if route.resource.group == "events.k8s.io":
        obj = events_v1.from_core(obj)
    obj.setdefault("apiVersion", route.resource.api_version)
    obj.setdefault("kind", route.resource.kind)
    return obj if now is None else heartbeats.fresh(route.resource.key, obj, now)


def get(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """GET one object, as a Table when kubectl asks for one (its default for `kubectl get`)."""
    assert route.name is not None
    obj = with_type(route, cluster.store.get(route.resource.store_key, route.namespace or "", route.name),
                    cluster.clock.now(), req)
    if req.wants_table():
        return json_response(tables.table(route.resource.store_key, [obj], cluster.clock.now(), resource_version=None,
                                          include_object=req.query.get("includeObject", "Metadata")),
                             content_type=tables.TABLE_CONTENT_TYPE)
    return json_response(obj)


def _page(items: list[Obj], req: Request) -> tuple[list[Obj], Obj]:
    """``limit``/``continue`` paging over the (namespace, name)-sorted list; the token names the last key."""
    start = req.query.get("continue")
    if start:
        try:
            after = tuple(json.loads(base64.urlsafe_b64decode(start.encode())))
            assert len(after) == 2 and all(isinstance(x, str) for x in after)
        except (ValueError, AssertionError, TypeError) as exc:
            raise ApiError(400, "BadRequest", "continue key is not valid") from exc
        items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after]
    limit = _int_param(req, "limit") or 0
    if limit <= 0 or len(items) <= limit:
        return items, {}
    last = items[limit - 1]["metadata"]
    token = base64.urlsafe_b64encode(json.dumps([last.get("namespace", ""), last["name"]]).encode()).decode()
    return items[:limit], {"continue": token, "remainingItemCount": len(items) - limit}


def list_objects(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """LIST with selectors and limit/continue paging, as a Table or a typed List."""
    items, rv = cluster.store.list(route.resource.store_key, route.namespace, matcher(route, req))
    items, more = _page(items, req)
    now = cluster.clock.now()
    if req.wants_table():
        table = tables.table(route.resource.store_key, items, cluster.clock.now(), resource_version=rv,
                             include_object=req.query.get("includeObject", "Metadata"))
        table["metadata"].update(more)
        return json_response(table, content_type=tables.TABLE_CONTENT_TYPE)
    return json_response({"kind": f"{route.resource.kind}List", "apiVersion": route.resource.api_version,
                          "metadata": {"resourceVersion": rv, **more},
                          "items": [with_type(route, o, now, req) for o in items]})


def _int_param(req: Request, name: str, default: int | None = None) -> int | None:
    value = req.query.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ApiError(400, "BadRequest", f"invalid value for {name}: {value!r}: expected an integer") from exc


def watch(cluster: ClusterLike, route: Route, req: Request, stop: threading.Event,
          drop_after: float | None = None) -> Response:
    """A chunked stream of ``{"type","object"}`` lines; replays from ``resourceVersion``; ends at timeout."""
    store: Store = cluster.store
    match = matcher(route, req)
    timeout = _int_param(req, "timeoutSeconds", DEFAULT_WATCH_SECONDS) or DEFAULT_WATCH_SECONDS
    if drop_after is not None:
        timeout = min(timeout, max(int(drop_after), 0))
    deadline = time.monotonic() + min(timeout, 3600)
    rv_text = req.query.get("resourceVersion", "")
    table = req.wants_table()
    bookmarks = req.query.get("allowWatchBookmarks") in ("true", "1")
    if rv_text in ("", "0"):
        initial, rv = store.list(route.resource.store_key, route.namespace, match)
        since = int(rv)
    else:
        since = _int_param(req, "resourceVersion") or 0
        initial = []

    def line(kind: str, obj: Obj, first: bool) -> bytes:
        if table and kind in ("ADDED", "MODIFIED", "DELETED"):
            obj = tables.table(route.resource.store_key, [obj], cluster.clock.now(), resource_version=None,
                               include_object=req.query.get("includeObject", "Metadata"))
            if not first:
                obj.pop("columnDefinitions")
        return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"

    def events() -> Iterator[bytes]:
        first = True
        for obj in initial:
            yield line("ADDED", with_type(route, obj, cluster.clock.now(), req), first)
            first = False
        try:
            feed = store.watch(route.resource.store_key, route.namespace, since, deadline=deadline, stop=stop,
                               idle_every=IDLE_TICK)
            for event in feed:
                if event is None and not bookmarks:
                    yield b""  # lets the server notice a client that hung up
                    continue
                if event is None:
                    yield line("BOOKMARK", {"kind": route.resource.kind, "apiVersion": route.resource.api_version,
                                            "metadata": {"resourceVersion": store.resource_version}}, False)
                    continue
                kind = event.type
                if match is not None:
                    # An object that leaves the selector is DELETED for this watch and one that enters it
                    # ADDED, judged on both sides of the change as the apiserver's watch cache does.
                    now_in = match(event.object)
                    was_in = event.previous is not None and match(event.previous)
                    if kind == "MODIFIED" and now_in != was_in:
                        kind = "ADDED" if now_in else "DELETED"
                    elif not now_in and not was_in:
                        continue
                yield line(kind, with_type(route, event.object, cluster.clock.now(), req), first)
                first = False
        except ApiError as err:  # 410 Gone arrives in-stream, as from the apiserver's watch cache
            yield line("ERROR", err.status(), False)

    return Response(200, content_type="application/json", stream=events())


def container_of(pod: Obj, req: Request) -> str:
    """The container a log/exec request means; a multi-container pod must name one, as on a real API."""
    names = [c.get("name", "") for c in pod.get("spec", {}).get("containers") or []]
    wanted = req.query.get("container")
    name = pod["metadata"]["name"]
    if wanted:
        if wanted not in names + [c.get("name") for c in pod.get("spec", {}).get("initContainers") or []]:
            raise ApiError(400, "BadRequest", f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(names) == 1:
        return names[0]
    raise ApiError(400, "BadRequest",
                   f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")


def _since(cluster: ClusterLike, req: Request) -> float | None:
    """The simulated time from which ``sinceSeconds``/``sinceTime`` keep lines (both: a 400, as kube says)."""
    seconds, stamp = _int_param(req, "sinceSeconds"), req.query.get("sinceTime")
    if seconds is not None and stamp:
        raise ApiError(422, "Invalid", "PodLogOptions is invalid: at most one of sinceTime or sinceSeconds may be "
                                       "specified")
    if seconds is not None:
        if seconds < 1:
            raise ApiError(422, "Invalid", "PodLogOptions is invalid: sinceSeconds: Invalid value: "
                                           f"{seconds}: must be greater than 0")
        return cluster.clock.now() - seconds
    if stamp:
        try:
            return parse_timestamp(stamp)
        except ValueError as exc:
            raise ApiError(400, "BadRequest", f"sinceTime: invalid RFC 3339 time {stamp!r}") from exc
    return None


def logs(cluster: ClusterLike, route: Route, req: Request, stop: threading.Event) -> Response:
    """``pods/log``: previous/container/tailLines/limitBytes/timestamps/sinceSeconds/sinceTime; ``follow``
    streams until the pod goes. Line times are the cluster's simulated clock, like every other time it shows."""
    assert route.name is not None
    namespace = route.namespace or ""
    pod = cluster.store.get("pods", namespace, route.name)
    container = container_of(pod, req)
    previous = req.query.get("previous") in ("true", "1")
    tail = _int_param(req, "tailLines")
    limit = _int_param(req, "limitBytes")
    stamped = req.query.get("timestamps") in ("true", "1")
    since = _since(cluster, req)

    def read() -> str:
        text = cluster.read_log(namespace, route.name or "", container, previous, since is not None or stamped)
        if since is None:
            return text
        kept = [line for line in text.splitlines(keepends=True) if parse_timestamp(line.split(" ", 1)[0]) >= since]
        return "".join(kept if stamped else (line.split(" ", 1)[1] for line in kept))

    def trim(text: str) -> bytes:
        if tail is not None:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-tail:]) if tail > 0 else ""
        data = text.encode()
        return data[:limit] if limit is not None else data

    text = read()
    if req.query.get("follow") not in ("true", "1") or previous:
        return Response(200, trim(text), "text/plain")

    def follow() -> Iterator[bytes]:
        sent = text
        yield trim(text)
        while not stop.wait(0.5):
            try:
                now = read()
            except ApiError:
                return
            if now.startswith(sent):
                if len(now) > len(sent):
                    yield now[len(sent):].encode()
            else:
                yield now.encode()
            sent = now

    return Response(200, content_type="text/plain", stream=follow())


def proxy(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """``pods/NAME[:PORT]/proxy/PATH`` → the simulated container's HTTP endpoint."""
    assert route.name is not None
    parts = route.name.split(":")
    name, port_text = (parts[-2], parts[-1]) if len(parts) >= 2 else (parts[0], "")
    if len(parts) == 3 and parts[0] not in ("http", "https"):
        raise ApiError(400, "BadRequest", f"invalid scheme in {route.name!r}")
    pod = cluster.store.get("pods", route.namespace or "", name)
    if port_text and not re.fullmatch(r"\d+", port_text):
        ports = {p.get("name"): p.get("containerPort") for c in pod["spec"].get("containers") or []
                 for p in c.get("ports") or []}
        if port_text not in ports:
            raise ApiError(503, "ServiceUnavailable", f"no such port name {port_text!r} on pod {name}")
        port = int(ports[port_text])
    elif port_text:
        port = int(port_text)
    else:
        declared = [p.get("containerPort") for c in pod["spec"].get("containers") or [] for p in c.get("ports") or []]
        port = int(declared[0]) if declared else 80
    query = "&".join(f"{k}={v}" for k, v in req.query.items())
    path = "/" + route.rest + (f"?{query}" if query else "")
    status, content_type, body = cluster.proxy(route.namespace or "", name, port, path)
    return Response(status, body, content_type)


def service_proxy(cluster: ClusterLike, route: Route, req: Request) -> Response:
    """``services/[SCHEME:]NAME[:PORT]/proxy/PATH`` → a Ready pod of the Service's Endpoints, as kube-apiserver
    picks one: PORT is the Service's port number or name (omitted: its unnamed port), the pod is reached on that
    port's resolved target; no such port or no Ready pod is kube's 503."""
    assert route.name is not None
    parts = route.name.split(":")
    if len(parts) > 3 or (len(parts) == 3 and parts[0] not in ("http", "https")):
        raise ApiError(400, "BadRequest", f"invalid service request {route.name!r}")
    name, port_ref = (parts[-2], parts[-1]) if len(parts) == 3 else (parts[0], parts[1] if len(parts) == 2 else "")
    namespace = route.namespace or ""
    service = cluster.store.get("services", namespace, name)
    if port_ref.isdigit():
        named = [p.get("name") or "" for p in (service.get("spec") or {}).get("ports") or []
                 if p.get("port") == int(port_ref)]
        if not named:
            raise ApiError(503, "ServiceUnavailable", f'no service port {port_ref} found for service "{name}"')
        port_ref = named[0]
    endpoints = cluster.store.find("endpoints", namespace, name) or {}
    choices = [(a["targetRef"]["name"], int(p["port"])) for subset in endpoints.get("subsets") or []
               for p in subset.get("ports") or [] if (p.get("name") or "") == port_ref
               for a in subset.get("addresses") or [] if (a.get("targetRef") or {}).get("kind") == "Pod"]
    if not choices:
        raise ApiError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
    pod, port = random.choice(choices)
    query = "&".join(f"{k}={v}" for k, v in req.query.items())
    status, content_type, body = cluster.proxy(namespace, pod, port, "/" + route.rest + (f"?{query}" if query else ""))
    return Response(status, body, content_type)


def scale_of(obj: Obj, group_resource: str) -> Obj:
    """The autoscaling/v1 Scale view of a deployment or replicaset."""
    meta = obj["metadata"]
    selector = format_label_selector(obj.get("spec", {}).get("selector"))
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": obj.get("spec", {}).get("replicas", 0)},
            "status": {"replicas": obj.get("status", {}).get("replicas", 0),
                       "selector": "" if selector == "<none>" else selector}}


def get_scale(cluster: ClusterLike, route: Route) -> Response:
    """The scale subresource, which kubectl scale and HPAs read instead of the Deployment."""
    assert route.name is not None
    obj = cluster.store.find(route.resource.key, route.namespace or "", route.name)
    if obj is None:
        raise not_found(route.resource.key, route.name)
    return json_response(scale_of(obj, route.resource.key))
