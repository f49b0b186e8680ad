"""What kube-apiserver's validation refuses in a Secret or a ConfigMap: 422 Invalid, in its words.

Transcribed from ``ValidateSecret`` / ``ValidateSecretUpdate`` / ``ValidateConfigMap`` / ``ValidateConfigMapUpdate``
(pkg/apis/core/validation/validation.go) and ``IsConfigMapKey`` (apimachinery pkg/util/validation): every key of
``data`` (``stringData`` is merged into it first, so its keys are reported as ``data[...]``) and of a ConfigMap's
``binaryData`` must be a config key; a typed Secret must carry its type's keys (``kubernetes.io/tls``: ``tls.crt`` and
``tls.key``; ``basic-auth``: ``username`` or ``password``; ``ssh-auth``: a non-empty ``ssh-privatekey``; the docker
types: their key, holding a JSON object; ``service-account-token``: the service account's name annotation); an
update may not change ``type``, nor the data of an object created ``immutable: true`` (nor unset that flag).

The Status is ``errors.NewInvalid``'s: reason Invalid, one ``details.causes`` entry per field error (type, body,
field path), message ``Secret "x" is invalid: <error>`` or ``[<error>, <error>]`` for several (duplicates dropped,
as ``ErrorList.ToAggregate`` does). kubectl prints ``The Secret "x" is invalid: ...`` from those causes.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]

_KEY = re.compile(r"[-._a-zA-Z0-9]+")
KEY_MAX = 253  # DNS1123SubdomainMaxLength, in bytes (Go's len)
#: ``RegexError(configMapKeyErrMsg, configMapKeyFmt, "key.name", "KEY_NAME", "key-name")``, double spaces included.
KEY_FORMAT = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
              "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
IMMUTABLE = "field is immutable"
WHEN_IMMUTABLE = "field is immutable when `immutable` is set"
REDACTED = "<secret contents redacted>"
SA_NAME = "kubernetes.io/service-account.name"
_TYPES = {"Required": "FieldValueRequired", "Invalid": "FieldValueInvalid", "Forbidden": "FieldValueForbidden",
          "TooLong": "FieldValueTooLong", "Duplicate": "FieldValueDuplicate"}
_BODIES = {"Required": "Required value", "Invalid": "Invalid value", "Forbidden": "Forbidden", "TooLong": "Too long",
           "Duplicate": "Duplicate value"}
#: ``core.MaxSecretSize``: what a Secret's decoded ``data``, or a ConfigMap's ``data`` plus ``binaryData``, may total.
MAX_SIZE = 1024 * 1024
#: ``field.TooLong``'s detail (apimachinery pkg/util/validation/field/errors.go).
TOO_LONG = f"must have at most {MAX_SIZE} bytes"


@dataclass(frozen=True)
class FieldError:
    """One ``field.Error``: its kind (Required, Invalid, Forbidden, Duplicate), path, bad value (Invalid, Duplicate)
    and detail."""

    kind: str
    field: str
    detail: str = ""
    value: str | None = None

    def body(self) -> str:
        """``ErrorBody``: the type's words, an Invalid's value as Go's ``%q`` prints it, then ``: detail``."""
        text = _BODIES[self.kind]
        if self.kind in ("Invalid", "Duplicate"):
            text += f": {go_quote(self.value or '')}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def go_quote(text: str) -> str:
    """Go's ``%q``: printable runes kept, ``"`` and ``\\`` escaped, the rest as ``\\n``, ``\\x..`` or ``\\u....``."""
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in named:
            out.append(named[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def key_errors(key: str) -> list[str]:
    """``IsConfigMapKey``: why ``key`` cannot name a ConfigMap or Secret entry (empty: it can)."""
    errs = []
    if len(key.encode()) > KEY_MAX:
        errs.append(f"must be no more than {KEY_MAX} characters")
    if not _KEY.fullmatch(key):
        errs.append(KEY_FORMAT)
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _keys(data: Any, where: str) -> list[FieldError]:
    return [FieldError("Invalid", f"{where}[{k}]", msg, k) for k in sorted(map(str, data or {}))
            for msg in key_errors(k)]


def _bytes(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except binascii.Error:  # refused earlier as a 400 (``defaults._default_secret``)
        return str(value).encode()


def secret_errors(obj: Obj) -> list[FieldError]:
    """``ValidateSecret`` on a Secret whose ``stringData`` is already merged into ``data``: keys, then the decoded
    values' total against ``MAX_SIZE`` (``field.TooLong(dataPath, ...)``), then the type's keys."""
    data = obj.get("data") or {}
    errs = _keys(data, "data")
    if sum(len(_bytes(v)) for v in data.values()) > MAX_SIZE:
        errs.append(FieldError("TooLong", "data", TOO_LONG))
    kind = obj.get("type") or "Opaque"
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if kind == "kubernetes.io/service-account-token" and not annotations.get(SA_NAME):
        errs.append(FieldError("Required", f"metadata.annotations[{SA_NAME}]"))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errs.append(FieldError("Required", f"data[{key}]"))
        elif (why := json_object_error(_bytes(data[key]))) is not None:
            errs.append(FieldError("Invalid", f"data[{key}]", why, REDACTED))
    elif kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        errs += [FieldError("Required", "data[username]"), FieldError("Required", "data[password]")]
    elif kind == "kubernetes.io/ssh-auth" and not _bytes(data.get("ssh-privatekey", "")):
        errs.append(FieldError("Required", "data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        errs += [FieldError("Required", f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    return errs


def _immutable(old: Obj, new: Obj, fields: tuple[str, ...]) -> list[FieldError]:
    """An object created ``immutable: true`` keeps that flag and its data (``ValidateSecretUpdate``)."""
    if old.get("immutable") is not True:
        return []
    errs = [] if new.get("immutable") is True else [FieldError("Forbidden", "immutable", WHEN_IMMUTABLE)]
    return errs + [FieldError("Forbidden", f, WHEN_IMMUTABLE) for f in fields
                   if dict(old.get(f) or {}) != dict(new.get(f) or {})]


def secret_update_errors(old: Obj, new: Obj) -> list[FieldError]:
    """``ValidateSecretUpdate``: ``type`` is immutable, an immutable Secret's data too, then ``ValidateSecret``."""
    errs = []
    if (new.get("type") or "Opaque") != (old.get("type") or "Opaque"):
        errs.append(FieldError("Invalid", "type", IMMUTABLE, str(new.get("type") or "")))
    return errs + _immutable(old, new, ("data",))


def configmap_errors(obj: Obj) -> list[FieldError]:
    """``ValidateConfigMap``: config keys in ``data`` and ``binaryData``, and no key in both."""
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    errs = []
    for key in sorted(map(str, data)):
        errs += [FieldError("Invalid", f"data[{key}]", msg, key) for msg in key_errors(key)]
        if key in binary:
            errs.append(FieldError("Invalid", f"data[{key}]", "duplicate of key present in binaryData", key))
    errs += _keys(binary, "binaryData")
    total = sum(len(str(v).encode()) for v in data.values()) + sum(len(_bytes(v)) for v in binary.values())
    if total > MAX_SIZE:  # ``field.TooLong(field.NewPath(""), ...)``: a nameless root path prints as ``[]``
        errs.append(FieldError("TooLong", "[]", TOO_LONG))
    return errs


def check(resource_key: str, obj: Obj, old: Obj | None = None, meta: list[FieldError] | None = None) -> None:
    """Raise 422 Invalid as the apiserver does for a Secret or ConfigMap write (``old``: the stored one, on update;
    ``meta``: ``ValidateObjectMeta``'s errors, which come first)."""
    meta = list(meta or [])
    if resource_key == "secrets":
        errs = (secret_update_errors(old, obj) if old is not None else []) + meta + secret_errors(obj)
        kind = "Secret"
    elif resource_key == "configmaps":
        errs = (_immutable(old, obj, ("data", "binaryData")) if old is not None else []) + meta + configmap_errors(obj)
        kind = "ConfigMap"
    else:
        return
    if errs:
        raise invalid(kind, str((obj.get("metadata") or {}).get("name") or ""), errs)


def invalid(kind: str, name: str, errs: list[FieldError]) -> ApiError:
    """``errors.NewInvalid`` for a core kind: causes per error, the aggregate (deduplicated) in the message."""
    texts = list(dict.fromkeys(str(e) for e in errs))
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    causes = [{"reason": _TYPES[e.kind], "message": e.body(), "field": e.field} for e in errs]
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {aggregate}',
                    {"name": name, "kind": kind, "causes": causes})


def json_object_error(raw: bytes) -> str | None:
    """What Go's ``json.Unmarshal`` into a ``map[string]interface{}`` says of ``raw`` (None: it decodes)."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return "unexpected end of JSON input"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            return "unexpected end of JSON input"
        char = text[exc.pos]
        literal = next((w for w in ("null", "true", "false") if text[exc.pos:].startswith(w[0])), None)
        if exc.msg == "Expecting value" and literal is not None:  # Go's scanner reads a literal letter by letter
            rest = text[exc.pos:]
            i = next((i for i in range(1, len(literal)) if i >= len(rest) or rest[i] != literal[i]), len(literal))
            if i >= len(rest):
                return "unexpected end of JSON input"
            return f"invalid character {_char(rest[i])} in literal {literal} (expecting {_char(literal[i])})"
        quoted = _char(char)
        where = {"Expecting value": "looking for beginning of value",
                 "Expecting ':' delimiter": "after object key",
                 "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
                 "Extra data": "after top-level value"}.get(exc.msg, "after object key:value pair"
                                                             if exc.msg == "Expecting ',' delimiter" else "")
        return f"invalid character {quoted} {where}".rstrip()
    if value is None or isinstance(value, dict):
        return None
    got = {list: "array", str: "string", bool: "bool"}.get(type(value), "number")
    return f"json: cannot unmarshal {got} into Go value of type map[string]interface {{}}"


def _char(char: str) -> str:
    """Go's ``quoteChar``: ``'x'``, an apostrophe as ``'\\''``, a double quote bare, other runes as ``%q`` does."""
    return "'\\''" if char == "'" else "'" + go_quote(char)[1:-1].replace('\\"', '"') + "'"
