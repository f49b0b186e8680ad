"""One request against one cluster: discovery, OpenAPI, auth, faults, then the verb.

Every failure leaves here as a Kubernetes ``Status`` with the right code — an unexpected exception
becomes a 500 Status, never a dropped connection — because kubectl prints Status messages verbatim
and a hung or reset connection would make the rehearsal lie about what users would see.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from vllm_remedy.sim.api import openapi, portforward, reads, resources, reviews, streams, websocket, writes
from vllm_remedy.sim.api.auth import Authorizer, Identity
from vllm_remedy.sim.api.faults import Faults
from vllm_remedy.sim.api.http import Request, Response, error_response, json_response
from vllm_remedy.sim.api.routing import Route, parse
from vllm_remedy.sim.protocols import ClusterLike
from vllm_remedy.sim.store import ApiError

log = logging.getLogger(__name__)

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-vllm-remedy-sim", "gitCommit": "0" * 40,
           "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.4",
           "compiler": "gc", "platform": "linux/amd64"}


@dataclass
class ApiContext:
    """Per-cluster API state that is not objects: auth, faults, and the server's stop signal."""

    cluster: ClusterLike
    prefix: str  # URL path prefix of this cluster, e.g. /clusters/prod
    auth: Authorizer = field(default_factory=Authorizer)
    faults: Faults = field(default_factory=Faults)
    stop: threading.Event = field(default_factory=threading.Event)


def installed_crds(ctx: ApiContext) -> frozenset[str]:
    """Names of the CustomResourceDefinitions stored in the cluster: a CRD kind is served only once installed."""
    return frozenset(o["metadata"]["name"] for o in ctx.cluster.store.list(resources.CRDS)[0])


def _discovery(ctx: ApiContext, req: Request) -> Response | None:
    path = req.path.rstrip("/") or "/"
    parts = [p for p in path.split("/") if p]
    if path == "/version":
        return json_response(VERSION)
    if path in ("/healthz", "/livez", "/readyz"):
        return Response(200, b"ok", "text/plain")
    if path == "/api":
        return json_response(resources.api_versions())
    if path == "/apis":
        return json_response(resources.api_group_list(installed_crds(ctx)))
    if len(parts) == 2 and parts[0] == "api":
        doc = resources.resource_list("", parts[1], installed_crds(ctx))
    elif len(parts) == 2 and parts[0] == "apis":
        doc = resources.api_group(parts[1], installed_crds(ctx))
    elif len(parts) == 3 and parts[0] == "apis":
        doc = resources.resource_list(parts[1], parts[2], installed_crds(ctx))
    elif path == "/openapi/v2":
        if "protobuf" in req.headers.get("accept", ""):
            return Response(200, openapi.v2_protobuf(), "application/octet-stream")
        return json_response(openapi.v2_json())
    elif path == "/openapi/v3":
        return json_response(openapi.v3_root(ctx.prefix))
    elif parts[:2] == ["openapi", "v3"]:
        gv = parts[2:]
        group, version = ("", gv[1]) if gv[:1] == ["api"] and len(gv) == 2 else (
            (gv[1], gv[2]) if gv[:1] == ["apis"] and len(gv) == 3 else ("-", "-"))
        doc = openapi.v3_group_doc(group, version)
    else:
        return None
    if doc is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return json_response(doc)


def _verb(req: Request, route: Route) -> str:
    if req.method == "GET":
        if route.name is None:
            return "watch" if route.watch_prefix or req.query.get("watch") in ("true", "1") else "list"
        return "get"
    if route.subresource in ("exec", "attach", "portforward"):
        return "create"  # RBAC: exec/attach need create on pods/exec, pods/attach
    if route.subresource == "proxy":
        return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(req.method, "get")
    return {"POST": "create", "PUT": "update", "PATCH": "patch",
            "DELETE": "delete" if route.name else "deletecollection"}.get(req.method, "unknown")


def _review(ctx: ApiContext, req: Request, route: Route, identity: Identity | None) -> Response:
    """The self-reviews: access (``auth can-i``), rules (``can-i --list``), identity (``auth whoami``)."""
    kind = route.resource.kind
    if kind == "SelfSubjectReview":
        return reviews.identity_review(identity)
    if kind == "SelfSubjectRulesReview":
        return reviews.rules_review(ctx.cluster, ctx.cluster.name, req, identity)
    return reviews.access_review(ctx.cluster, ctx.cluster.name, ctx.auth, req, identity)


def _route(ctx: ApiContext, req: Request, route: Route, verb: str, drop_after: float | None) -> Response:
    cluster = ctx.cluster
    sub = route.subresource
    if sub == "log":
        if req.method != "GET":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        return reads.logs(cluster, route, req, ctx.stop)
    if sub == "proxy":
        return reads.service_proxy(cluster, route, req) if route.resource.plural == "services" \
            else reads.proxy(cluster, route, req)
    if sub in ("exec", "attach"):
        inbox = websocket.Inbox()
        session = (streams.attach(cluster, route, req, ctx.stop, inbox) if sub == "attach"
                   else streams.exec_(cluster, route, req, req.multi.get("command", []), inbox, ctx.stop))
        accept, protocol = websocket.negotiate(req.headers)  # after validation: errors are plain Statuses
        return Response(101, stream=session, upgrade=(accept, protocol), inbox=inbox)
    if sub == "portforward":
        accept, protocol, session, inbox = portforward.open_session(cluster, route, req, ctx.stop)
        return Response(101, stream=session, upgrade=(accept, protocol), inbox=inbox)
    if route.resource.stored_as and verb not in route.resource.verbs:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    if verb == "get":
        return reads.get_scale(cluster, route) if sub == "scale" else reads.get(cluster, route, req)
    if verb == "list":
        return reads.list_objects(cluster, route, req)
    if verb == "watch":
        return reads.watch(cluster, route, req, ctx.stop, drop_after)
    if verb == "create":
        return writes.create(cluster, route, req)
    if verb == "update":
        return writes.update(cluster, route, req)
    if verb == "patch":
        return writes.patch(cluster, route, req)
    if verb in ("delete", "deletecollection"):
        return writes.delete(cluster, route, req)
    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def handle(ctx: ApiContext, req: Request) -> Response:
    """Answer ``req``; always returns a Response (errors as Status objects)."""
    try:
        identity = ctx.auth.authenticate(req.headers.get("authorization"))
        found = _discovery(ctx, req) if req.method == "GET" else None
        if found is not None:
            return found
        route = parse(req.path, installed_crds(ctx))
        verb = _verb(req, route)
        if not route.resource.stored:
            if verb != "create" or route.name is not None:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                                                        "resource")
            return _review(ctx, req, route, identity)
        rbac_resource = route.resource.key if not route.subresource else (
            f"{route.resource.plural}/{route.subresource}"
            + (f".{route.resource.group}" if route.resource.group else ""))
        namespace = route.namespace if route.resource.namespaced else None
        if route.resource.key == "namespaces":
            namespace = route.name
        ctx.auth.authorize(identity, ctx.cluster.name, verb, rbac_resource, namespace, route.name, ctx.cluster.store)
        drop_after = ctx.faults.before(verb, route.resource.key, route.name)
        return _route(ctx, req, route, verb, drop_after)
    except ApiError as err:
        return error_response(err)
    except Exception as exc:  # a bug must still answer with a Status, never reset the connection
        log.exception("internal error on %s %s", req.method, req.path)
        return error_response(ApiError(500, "InternalError", f"Internal error occurred: {exc!r}"))
