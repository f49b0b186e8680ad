"""Just enough OpenAPI for ``kubectl apply --server-side --dry-run=server``, ``kubectl diff`` and ``explain``.

kubectl 1.32 reads ``/openapi/v3`` and checks that each kind's PATCH operation takes ``dryRun`` and
``fieldValidation``; kubectl 1.20 reads ``/openapi/v2`` as protobuf (gnostic ``openapi_v2.Document``)
for the same dryRun check. The v3 documents carry component schemas generated from the official
client's models (``openapi_schemas``) for ``kubectl explain``; the PATCH operations declare no request
body, so kubectl still computes strategic merge patches from its compiled-in types. v2 has no schemas.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from vllm_remedy.sim.api.openapi_schemas import SCHEMA_SOURCE, schemas
from vllm_remedy.sim.api.resources import RESOURCES, Resource

Obj = dict[str, Any]
PATCH_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force")
PROTO_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _item_path(r: Resource) -> str:
    ns = "/namespaces/{namespace}" if r.namespaced else ""
    return f"/{_gv_path(r.group, r.version)}{ns}/{r.plural}/{{name}}"


def _gvk(r: Resource) -> Obj:
    return {"group": r.group, "version": r.version, "kind": r.kind}


def _served(group: str, version: str) -> list[Resource]:
    return [r for r in RESOURCES if (r.group, r.version) == (group, version)]


def _v3_paths(served: list[Resource]) -> Obj:
    paths = {}
    for r in served:
        params = [{"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}} for p in PATCH_PARAMS]
        paths[_item_path(r)] = {"patch": {
            "operationId": f"patch{r.kind}", "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": _gvk(r), "parameters": params,
            "responses": {"200": {"description": "OK"}}}}
    return paths


@functools.cache
def v3_group_doc(group: str, version: str) -> Obj | None:
    """The per-group-version v3 document: one PATCH operation per kind, and the kinds' schemas (cached:
    callers must not modify it)."""
    served = _served(group, version)
    if not served:
        return None
    roots = tuple(sorted({(r.group, r.version, r.kind) for r in served if r.stored and not r.crd}))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": _v3_paths(served),
            "components": {"schemas": schemas(roots)}}


def _hash(doc: Obj) -> str:
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()


def v3_root(prefix: str) -> Obj:
    """``/openapi/v3``: kubectl fetches each entry's serverRelativeURL verbatim, so it carries the cluster
    prefix (client-go's RequestURI drops the kubeconfig server path)."""
    paths = {}
    for group, version in sorted({(r.group, r.version) for r in RESOURCES}):
        gv = _gv_path(group, version)
        # The schemas follow from the kinds served, so hashing the paths (not the whole, slow-to-build
        # document) still changes the hash whenever the document changes.
        served = _served(group, version)
        digest = _hash({"paths": _v3_paths(served), "kinds": sorted(r.kind for r in served),
                        "schemas": SCHEMA_SOURCE})
        paths[gv] = {"serverRelativeURL": f"{prefix}/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}


def v2_json() -> Obj:
    """The OpenAPI v2 document: only each kind's PATCH with dryRun, which is all kubectl checks."""
    paths: Obj = {}
    for r in RESOURCES:
        params = [{"name": p, "in": "query", "type": "string", "uniqueItems": True} for p in PATCH_PARAMS]
        paths[_item_path(r)] = {"patch": {"operationId": f"patch{r.kind}", "x-kubernetes-action": "patch",
                                          "x-kubernetes-group-version-kind": _gvk(r), "parameters": params,
                                          "responses": {"200": {"description": "OK"}}}}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths,
            "definitions": {}}


# -- protobuf (wire format by hand: only length-delimited string/message fields are needed) -----------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _named_any(name: str, yaml_text: str) -> bytes:
    return _field(1, name) + _field(2, _field(2, yaml_text))  # NamedAny{name, value: Any{yaml}}


def _query_param(name: str) -> bytes:
    sub = _field(2, "query") + _field(4, name) + _field(6, "string")  # QueryParameterSubSchema{in, name, type}
    non_body = _field(3, sub)  # NonBodyParameter.query_parameter_sub_schema
    return _field(1, _field(2, non_body))  # ParametersItem.parameter → Parameter.non_body_parameter


def _operation(r: Resource) -> bytes:
    gvk = f"group: {json.dumps(r.group)}\nkind: {r.kind}\nversion: {r.version}\n"
    out = _field(5, f"patch{r.kind}")
    out += b"".join(_field(8, _query_param(p)) for p in PATCH_PARAMS)
    out += _field(13, _named_any("x-kubernetes-action", "patch\n"))
    out += _field(13, _named_any("x-kubernetes-group-version-kind", gvk))
    return out


def v2_protobuf() -> bytes:
    """gnostic ``openapi_v2.Document`` with one PATCH operation per kind (field numbers from OpenAPIv2.proto)."""
    info = _field(1, "Kubernetes") + _field(2, "v1.32.0")
    paths = b"".join(_field(2, _field(1, _item_path(r)) + _field(2, _field(8, _operation(r))))
                     for r in RESOURCES)  # Paths.path: NamedPathItem{name, value: PathItem{patch}}
    return _field(1, "2.0") + _field(2, info) + _field(8, paths)
