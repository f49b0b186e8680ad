"""Decode the protobuf request bodies kubectl's typed clients send (``kubectl create deployment``,
``create configmap``, ``create secret``, ``create namespace``, ``run``, ``debug``) into the JSON objects the API stores.

kubectl encodes these as ``k8s\\0`` + ``runtime.Unknown{typeMeta, raw}`` and does not fall back to
JSON on a 415, so without this those commands cannot create anything. Responses stay JSON, which
every client accepts. Kinds or fields outside ``proto_schema`` are a 415 naming them.
"""

from __future__ import annotations

import base64
import struct
from datetime import datetime, timezone
from functools import cache
from typing import Any

from vllm_remedy.sim.api.proto_schema import TABLE
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
MAGIC = b"k8s\x00"
ROOTS = {("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"), ("v1", "Pod"), ("v1", "ConfigMap"), ("v1", "Secret"),
         ("v1", "Namespace"), ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
         ("authorization.k8s.io/v1", "SelfSubjectRulesReview"), ("authentication.k8s.io/v1", "SelfSubjectReview")}
Field = tuple[str, str, bool, bool]  # json name, type code, repeated, map
# Go structs embedded with `json:",inline"`: a field in protobuf, their fields directly in the parent in JSON.
INLINE = frozenset({("Probe", "handler"), ("Volume", "volumeSource"),
                    ("EphemeralContainer", "ephemeralContainerCommon"),
                    # Go embeds LocalObjectReference, so its ``name`` sits beside ``items``/``key`` in JSON
                    *((m, "localObjectReference") for m in (
                        "ConfigMapVolumeSource", "SecretProjection", "ConfigMapProjection", "ConfigMapEnvSource",
                        "SecretEnvSource", "ConfigMapKeySelector", "SecretKeySelector"))})


def json_fields(message: str) -> dict[str, Field]:
    """JSON field name → field of ``message``, with inline-embedded messages' fields lifted up."""
    out: dict[str, Field] = {}
    for field in schema().get(message, {}).values():
        if (message, field[0]) in INLINE:
            out.update(json_fields(field[1]))
        else:
            out[field[0]] = field
    return out
# gogo-protobuf writes non-pointer scalars even when zero, where Go's JSON (omitempty) leaves them out; these
# pointer fields are the ones whose 0/false is a real value and must survive (replicas: 0 is not "unset").
KEEP_ZERO = frozenset({
    "replicas", "automountServiceAccountToken", "runAsNonRoot", "runAsUser", "runAsGroup", "privileged",
    "allowPrivilegeEscalation", "readOnlyRootFilesystem", "terminationGracePeriodSeconds", "activeDeadlineSeconds",
    "progressDeadlineSeconds", "revisionHistoryLimit", "shareProcessNamespace", "enableServiceLinks",
    "setHostnameAsFQDN", "hostUsers", "optional", "defaultMode", "mode", "priority", "fsGroup", "immutable",
    "deletionGracePeriodSeconds", "controller", "blockOwnerDeletion", "tolerationSeconds", "expirationSeconds"})


@cache
def schema() -> dict[str, dict[int, Field]]:
    """Field numbers per message, parsed once from the compact table in proto_schema."""
    messages: dict[str, dict[int, Field]] = {}
    current = ""
    for line in TABLE.strip("\n").splitlines():
        if line.startswith("  "):
            body = line.strip()
        else:
            current, _, body = line.partition(":")
            messages[current] = {}
        for item in filter(None, body.split(",")):
            name, _, rest = item.partition("=")
            digits = len(rest) - len(rest.lstrip("0123456789"))
            number, kind = int(rest[:digits]), rest[digits:]
            repeated = kind.endswith("*")
            kind = kind.rstrip("*")
            messages[current][number] = (name, kind.lstrip("{"), repeated, kind.startswith("{"))
    return messages


def _unsupported(what: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", f"protobuf body: {what} is not supported by the rehearsal "
                                                 "cluster; send JSON (kubectl apply/create -f, -o json)")


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise ApiError(400, "BadRequest", "protobuf body: truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ApiError(400, "BadRequest", "protobuf body: varint too long")


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(number, wire type, raw value) triples of one message."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ApiError(400, "BadRequest", "protobuf body: truncated field")
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ApiError(400, "BadRequest", f"protobuf body: unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _scalar(kind: str, wire: int, value: Any) -> Any:
    if kind == "s":
        return bytes(value).decode("utf-8", errors="replace")
    if kind == "i":
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == "b":
        return bool(value)
    if kind == "y":
        return base64.b64encode(bytes(value)).decode()
    if kind in ("d", "f"):
        return struct.unpack("<d" if kind == "d" else "<f", value)[0]
    raise _unsupported(f"scalar type {kind}")


def _message(kind: str, buf: bytes) -> Any:
    if kind == "Quantity":
        return _message_fields("Quantity", buf).get("string", "0")
    if kind in ("Time", "MicroTime"):
        parts = _message_fields("Time", buf)
        if not parts.get("seconds"):
            return None
        stamp = datetime.fromtimestamp(parts["seconds"], tz=timezone.utc)
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == "IntOrString":
        parts = _message_fields("IntOrString", buf)
        return parts.get("strVal", "") if parts.get("type") == 1 else parts.get("intVal", 0)
    return _message_fields(kind, buf)


WIRE = {"s": 2, "y": 2, "i": 0, "b": 0, "d": 1, "f": 5}


def _value(kind: str, wire: int, value: Any) -> Any:
    if WIRE.get(kind, 2) != wire:
        raise ApiError(400, "BadRequest", f"protobuf body: wire type {wire} does not fit a field of type {kind}")
    return _scalar(kind, wire, value) if len(kind) == 1 else _message(kind, value)


def _message_fields(kind: str, buf: bytes) -> Obj:
    table = schema().get(kind)
    if table is None:
        raise _unsupported(f"message {kind}")
    out: Obj = {}
    for number, wire, raw in _fields(buf):
        field = table.get(number)
        if field is None:
            raise _unsupported(f"field {number} of {kind}")
        name, sub, repeated, is_map = field
        if name == "status" and sub not in schema():
            continue  # create resets status anyway; the tables leave status messages out
        if is_map:
            if wire != 2:
                raise ApiError(400, "BadRequest", f"protobuf body: map field {name} is not length-delimited")
            entry = {n: (w, v) for n, w, v in _fields(raw)}
            key = _scalar("s", *entry[1]) if 1 in entry else ""
            out.setdefault(name, {})[key] = _value(sub, *entry[2]) if 2 in entry else ""
            continue
        if repeated and wire == 2 and sub in ("i", "b"):
            items, pos = [], 0  # packed repeated scalars
            while pos < len(raw):
                item, pos = _varint(raw, pos)
                items.append(_scalar(sub, 0, item))
            out.setdefault(name, []).extend(items)
            continue
        value = _value(sub, wire, raw)
        if (kind, name) in INLINE and isinstance(value, dict):
            out.update(value)
            continue
        if repeated:
            out.setdefault(name, []).append(value)
        elif value is None or value == "" or (value in (0, False) and len(sub) == 1 and name not in KEEP_ZERO):
            continue
        else:
            out[name] = value
    return out


def decode(body: bytes) -> Obj:
    """A protobuf-encoded Kubernetes object → its JSON form (apiVersion and kind included)."""
    if not body.startswith(MAGIC):
        raise ApiError(400, "BadRequest", "protobuf body: missing the k8s\\0 envelope")
    unknown = {n: v for n, w, v in _fields(body[len(MAGIC):]) if w == 2}
    type_meta = {n: bytes(v).decode(errors="replace") for n, w, v in _fields(unknown.get(1, b"")) if w == 2}
    api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
    if (api_version, kind) not in ROOTS:
        raise _unsupported(f"kind {api_version}/{kind}")
    obj = _message_fields(kind, unknown.get(2, b""))
    return {"apiVersion": api_version, "kind": kind, **obj}
