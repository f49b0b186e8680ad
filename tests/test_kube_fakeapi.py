"""A tiny stand-in kube-apiserver for the kube/ tests: stores objects, records every request, injects faults.

Why not the rehearsal cluster: these tests pin down request/retry behaviour and what real kubectl sends,
independent of the simulator; the simulator gets its own integration tests. Discovery documents are the
minimum kubectl 1.32 needs for ``rollout history|undo``.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jsonpatch

from vllm_remedy.kube.selectors import matches

APPS = {"deployments": "Deployment", "replicasets": "ReplicaSet"}
CORE = {"pods": "Pod", "events": "Event", "nodes": "Node"}
SHORT = {"deployments": ["deploy"], "replicasets": ["rs"], "pods": ["po"], "nodes": ["no"], "events": ["ev"]}


def _resources(kinds: dict[str, str], namespaced: set[str], subresources: list[str]) -> list[dict[str, Any]]:
    out = []
    for name, kind in kinds.items():
        out.append({"name": name, "singularName": kind.lower(), "namespaced": name in namespaced, "kind": kind,
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                    "shortNames": SHORT[name], "categories": ["all"]})
    for sub in subresources:
        out.append({"name": sub, "singularName": "", "namespaced": True, "kind": "Status", "verbs": ["get"]})
    return out


DISCOVERY = {
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"},
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1",
                "resources": _resources(CORE, {"pods", "events"}, ["pods/log"])},
    "/apis/apps/v1": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
                      "resources": _resources(APPS, set(APPS), ["deployments/status", "deployments/scale"])},
}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeApi:
    """Objects keyed by (resource, namespace, name); ``faults`` (status, 0 = none) and ``delays`` (seconds
    before answering) are consumed one per request."""

    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    faults: list[int] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    logs: dict[tuple[str, str, bool], str] = field(default_factory=dict)
    rv: int = 1000

    def add(self, resource: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.rv += 1
        meta.setdefault("resourceVersion", str(self.rv))
        self.objects[(resource, meta.get("namespace", ""), meta["name"])] = copy.deepcopy(obj)

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        return self.objects[(resource, namespace, name)]

    def start(self) -> str:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, payload: Any, ctype: str = "application/json") -> None:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _status(self, code: int, reason: str, message: str) -> None:
                self._reply(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": message, "reason": reason, "code": code})

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                query = dict(parse_qsl(parts.query))
                headers = {k.lower(): v for k, v in self.headers.items()}
                api.seen.append(Seen(self.command, parts.path, query, headers, body))
                if api.delays:
                    time.sleep(api.delays.pop(0))
                if api.faults:
                    code = api.faults.pop(0)
                    if code:
                        self._status(code, "InternalError" if code >= 500 else "Forbidden", f"injected {code}")
                        return
                self._route(parts.path, query, body)

            do_GET = do_PATCH = do_PUT = do_POST = do_DELETE = _handle

            def _route(self, path: str, query: dict[str, str], body: bytes) -> None:
                if path in DISCOVERY and self.command == "GET":
                    self._reply(200, DISCOVERY[path])
                    return
                seg = path.strip("/").split("/")
                if seg[:2] == ["apis", "apps"]:
                    seg = seg[3:]
                elif seg[:2] == ["api", "v1"]:
                    seg = seg[2:]
                else:
                    self._status(404, "NotFound", "the server could not find the requested resource")
                    return
                namespace = ""
                if seg and seg[0] == "namespaces":
                    namespace, seg = seg[1], seg[2:]
                resource, name, sub = seg[0], (seg[1] if len(seg) > 1 else ""), (seg[2] if len(seg) > 2 else "")
                if not name:
                    self._list(resource, namespace, query)
                    return
                key = (resource, namespace, name)
                if key not in api.objects:
                    group = "apps" if resource in APPS else ""
                    self._status(404, "NotFound", f'{resource}{"." + group if group else ""} "{name}" not found')
                    return
                if sub == "log":
                    previous = query.get("previous") == "true"
                    text = api.logs.get((name, query.get("container", ""), previous))
                    if text is None:
                        self._status(400, "BadRequest",
                                     f'previous terminated container "{query.get("container")}" in pod '
                                     f'"{name}" not found')
                        return
                    self._reply(200, text, "text/plain")
                    return
                if self.command == "PATCH":
                    self._patch(key, query, body)
                    return
                self._reply(200, api.objects[key])

            def _list(self, resource: str, namespace: str, query: dict[str, str]) -> None:
                items = [copy.deepcopy(o) for (r, ns, _), o in sorted(api.objects.items())
                         if r == resource and (not namespace or ns == namespace)]
                if "labelSelector" in query:
                    sel = _parse_equality_selector(query["labelSelector"])
                    items = [o for o in items if matches(sel, o["metadata"].get("labels"))]
                if "fieldSelector" in query:
                    fkey, _, fval = query["fieldSelector"].partition("=")
                    items = [o for o in items if _field(o, fkey) == fval]
                kind = (APPS.get(resource) or CORE.get(resource, "Object")) + "List"
                self._reply(200, {"kind": kind, "apiVersion": "apps/v1" if resource in APPS else "v1",
                                  "metadata": {"resourceVersion": str(api.rv)}, "items": items})

            def _patch(self, key: tuple[str, str, str], query: dict[str, str], body: bytes) -> None:
                ctype = self.headers.get("Content-Type", "")
                if ctype != "application/json-patch+json":
                    self._status(415, "UnsupportedMediaType", f"fake api only applies json patches, got {ctype}")
                    return
                current = api.objects[key]
                try:
                    updated = jsonpatch.apply_patch(current, json.loads(body))
                except jsonpatch.JsonPatchTestFailed as exc:
                    self._status(422, "Invalid", f"the server rejected our request: {exc}")
                    return
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                    self._status(422, "Invalid", str(exc))
                    return
                if updated != current and query.get("dryRun") != "All":
                    api.rv += 1
                    updated["metadata"]["resourceVersion"] = str(api.rv)
                    if updated.get("spec") != current.get("spec"):
                        updated["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
                    api.objects[key] = updated
                self._reply(200, updated)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _parse_equality_selector(text: str) -> dict[str, Any]:
    labels = {}
    for part in filter(None, text.split(",")):
        k, _, v = part.partition("=")
        labels[k.strip()] = v.strip()
    return {"matchLabels": labels}


def _field(obj: dict[str, Any], dotted: str) -> Any:
    cur: Any = obj
    for piece in dotted.split("."):
        cur = cur.get(piece) if isinstance(cur, dict) else None
    return cur


def kubeconfig_text(server: str, context: str = "fake") -> str:
    """A kubeconfig pointing at ``server`` with one context named ``context``."""
    return (f"apiVersion: v1\nkind: Config\ncurrent-context: {context}\n"
            f"clusters:\n- name: {context}-cluster\n  cluster:\n    server: {server}\n"
            f"contexts:\n- name: {context}\n  context:\n    cluster: {context}-cluster\n    user: {context}-user\n"
            f"users:\n- name: {context}-user\n  user:\n    token: fake-token\n")


def test_fake_api_serves_discovery_and_404() -> None:
    import urllib.error
    import urllib.request

    api = FakeApi()
    base = api.start()
    try:
        with urllib.request.urlopen(base + "/apis/apps/v1") as resp:
            assert json.load(resp)["groupVersion"] == "apps/v1"
        try:
            urllib.request.urlopen(base + "/apis/apps/v1/namespaces/llm/deployments/missing")
            raise AssertionError("expected 404")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
            assert json.load(exc)["message"] == 'deployments.apps "missing" not found'
    finally:
        api.stop()
