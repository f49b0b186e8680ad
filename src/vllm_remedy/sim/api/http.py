"""The request/response values passed between the socket layer and the handlers (no I/O here)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from vllm_remedy.sim.api.websocket import Inbox
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request body limit (3 MiB)


@dataclass
class Request:
    """A parsed HTTP request, independent of the server, so handlers can be driven directly in tests."""

    method: str
    path: str  # below the cluster prefix, e.g. /apis/apps/v1/namespaces/llm/deployments
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    user: str | None = None
    multi: dict[str, list[str]] = field(default_factory=dict)  # repeated query parameters (exec's command)
    connection: dict[str, Any] = field(default_factory=dict)  # state kept across one connection's requests

    @property
    def content_type(self) -> str:
        """The media type without parameters; the patch kind and body decoding depend on it."""
        return self.headers.get("content-type", "application/json").split(";")[0].strip().lower()

    def wants_table(self) -> bool:
        """kubectl asks ``application/json;as=Table;v=v1;g=meta.k8s.io`` (among alternatives)."""
        for alt in self.headers.get("accept", "").split(","):
            params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in alt.split(";")[1:])}
            if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") == "v1":
                return True
        return False

    def dry_run(self) -> bool:
        """True for dryRun=All; any other value is a 400, as kube-apiserver answers."""
        value = self.query.get("dryRun")
        if value is None:
            return False
        if value != "All":
            raise ApiError(400, "BadRequest", f'Invalid dryRun value "{value}": only "All" is supported')
        return True

    def json_body(self, *, yaml_ok: bool = False) -> Any:
        """Decode the body; malformed input is a 400 with the decoder's reason, never a 500."""
        if self.content_type == "application/vnd.kubernetes.protobuf":
            from vllm_remedy.sim.api.protobuf import decode  # typed clients: kubectl create deployment, debug

            return decode(self.body)
        if "protobuf" in self.content_type or "cbor" in self.content_type:
            raise ApiError(415, "UnsupportedMediaType",
                           f"the body of the request was in an unknown format ({self.content_type}) - accepted "
                           "media types include: application/json, application/yaml")
        if not self.body.strip():
            raise ApiError(400, "BadRequest", "the request body is empty")
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError(400, "BadRequest", f"the request body is not UTF-8: {exc}") from exc
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            if not yaml_ok:
                raise ApiError(400, "BadRequest", f"couldn't get version/kind; json parse error: {exc}") from exc
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ApiError(400, "BadRequest", f"error converting YAML to JSON: {exc}".replace("\n", " ")) from exc

    def object_body(self, *, yaml_ok: bool = False) -> Obj:
        """The body as an object, 400 otherwise, so handlers can rely on a dict with dict metadata."""
        body = self.json_body(yaml_ok=yaml_ok)
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body must be a JSON object")
        if not isinstance(body.get("metadata", {}), dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        return body


@dataclass
class Response:
    """What a handler returns: a body, a chunked stream, or a WebSocket upgrade."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    stream: Iterator[Any] | None = None  # chunked bytes (watch, log follow), or (channel, data) when upgraded
    headers: dict[str, str] = field(default_factory=dict)
    upgrade: tuple[str, str] | None = None  # (Sec-WebSocket-Accept, subprotocol) for exec/attach
    inbox: Inbox | None = None  # where the upgraded connection's input goes (stdin, close)


def json_response(obj: Any, status: int = 200, content_type: str = "application/json") -> Response:
    """Compact JSON, as the real API server sends it."""
    return Response(status, json.dumps(obj, separators=(",", ":")).encode(), content_type)


def error_response(err: ApiError) -> Response:
    """A Status object with the error's code, the shape kubectl parses into its error line."""
    return json_response(err.status(), err.code)
