"""OpenAPI v3 component schemas, generated from the official Python client's model classes.

``kubectl explain deployment.spec.strategy`` walks ``components.schemas`` of ``/openapi/v3/apis/apps/v1`` from
the schema tagged with the kind's group-version-kind, following ``$ref``s. The client's models carry the
same facts the apiserver's spec does: each field's JSON name (``attribute_map``), its type
(``openapi_types``: ``V1DeploymentStrategy``, ``List[V1Container]``, ``Dict[str, str]``; older releases
spell them ``list[...]``/``dict(str, ...)``) and descriptions (pydantic ``Field`` descriptions and class
docstrings in client ≥ 36, property docstrings before that). Generating from them keeps the explain text
what the Kubernetes API documents, with no schema text written here.

Left out: patch-merge extensions and enums (kubectl only reads those from a PATCH operation that
declares a strategic-merge request body, which ours do not, so apply keeps its compiled-in types).
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import re
from typing import Any

Obj = dict[str, Any]
_SCALARS: dict[str, Obj] = {"str": {"type": "string"}, "int": {"type": "integer", "format": "int32"},
                            "bool": {"type": "boolean"}, "float": {"type": "number", "format": "double"},
                            "datetime": {"type": "string", "format": "date-time"},
                            "date": {"type": "string", "format": "date"},
                            "bytes": {"type": "string", "format": "byte"}, "object": {"type": "object"}}
# Part of the v3 documents' hash, so kubectl's cache of them follows an upgrade of the client they come from.
SCHEMA_SOURCE = f"kubernetes-client-{importlib.metadata.version('kubernetes')}-v1"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"  # as the apiserver's spec names it
_LIST = re.compile(r"^(?:List|list)\[(.+)\]$")
_MAP = re.compile(r"^(?:Dict\[str, (.+)\]|dict\(str, (.+)\))$")
_MODEL = re.compile(r"^([A-Z][a-z]+)*?(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")


def _models() -> Any:
    from kubernetes.client import models  # heavy import: only when a schema is first asked for

    return models


def component_name(cls_name: str) -> str:
    """``V1DeploymentStrategy`` → ``io.k8s.api.v1.DeploymentStrategy``; a client prefix (``EventsV1Event``)
    becomes the group part. kubectl shows the last segment as the field's type."""
    found = _MODEL.match(cls_name)
    if found is None:
        return f"io.k8s.api.{cls_name}"
    prefix = re.match(r"^((?:[A-Z][a-z]+)*?)V\d", cls_name)
    group = prefix.group(1).lower() if prefix and prefix.group(1) else "api"
    return f"io.k8s.{group}.{found.group(2).lower()}.{found.group(3)}"


def _clean(text: str) -> str:
    return " ".join(line.replace("# noqa: E501", "").strip() for line in text.splitlines()).strip()


def class_description(cls: type) -> str:
    """The type's own description: the docstring up to its ``Attributes:`` section (empty for the older,
    description-less generator output)."""
    doc = inspect.getdoc(cls) or ""
    if doc.startswith("NOTE: This class is auto generated"):
        return ""
    return _clean(doc.split("Attributes:", 1)[0])


def field_description(cls: type, attr: str) -> str:
    """A field's description from its pydantic ``Field``, or from the property docstring of older clients."""
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict) and attr in fields:
        return (fields[attr].description or "").strip()
    prop = inspect.getattr_static(cls, attr, None)
    doc = inspect.getdoc(prop) if isinstance(prop, property) else None
    if not doc:
        return ""
    body = doc.split("\n", 1)[1] if "\n" in doc else ""
    return _clean(body.split(":return:", 1)[0])


def _int_or_string(cls: type, attr: str) -> bool:
    fields = getattr(cls, "model_fields", None)
    if not isinstance(fields, dict) or attr not in fields:
        return False
    text = str(fields[attr].annotation)
    return "int" in text and "str" in text


def _type(spec: str, pending: list[str]) -> Obj:
    """The schema of an ``openapi_types`` spelling; model names are queued for their own component."""
    if spec in _SCALARS:
        return dict(_SCALARS[spec])
    listed = _LIST.match(spec)
    if listed:
        return {"type": "array", "items": _type(listed.group(1), pending)}
    mapped = _MAP.match(spec)
    if mapped:
        return {"type": "object", "additionalProperties": _type(mapped.group(1) or mapped.group(2), pending)}
    pending.append(spec)
    return {"allOf": [{"$ref": f"#/components/schemas/{component_name(spec)}"}], "default": {}}


def model_schema(cls: type, pending: list[str]) -> Obj:
    """One model class as an object schema: properties by JSON name, descriptions, required fields."""
    props: Obj = {}
    required = []
    for attr, spec in cls.openapi_types.items():  # type: ignore[attr-defined]
        name = cls.attribute_map[attr]  # type: ignore[attr-defined]
        prop = {"allOf": [{"$ref": f"#/components/schemas/{INT_OR_STRING}"}]} \
            if spec == "object" and _int_or_string(cls, attr) else _type(spec, pending)
        text = field_description(cls, attr)
        if text:
            prop["description"] = text
        props[name] = prop
        fields = getattr(cls, "model_fields", None)
        if isinstance(fields, dict) and attr in fields and fields[attr].is_required():
            required.append(name)
    out: Obj = {"type": "object", "properties": props}
    text = class_description(cls)
    if text:
        out["description"] = text
    if required:
        out["required"] = required
    return out


def root_class(group: str, version: str, kind: str) -> str | None:
    """The client's class for a served kind (``V1Deployment``; ``EventsV1Event`` beside core's ``CoreV1Event``)."""
    models = _models()
    head = (group.split(".")[0] if group else "core").capitalize()
    for name in (f"{head}{version.capitalize()}{kind}", f"{version.capitalize()}{kind}"):
        if isinstance(getattr(models, name, None), type):
            return name
    return None


@functools.cache
def schemas(roots: tuple[tuple[str, str, str], ...]) -> Obj:
    """``components.schemas`` for the (group, version, kind) roots and every type they reach; each root
    carries ``x-kubernetes-group-version-kind``, which is how kubectl explain finds it."""
    models = _models()
    out: Obj = {}
    gvk: dict[str, list[Obj]] = {}
    pending: list[str] = []
    for group, version, kind in roots:
        name = root_class(group, version, kind)
        if name is not None:
            pending.append(name)
            gvk.setdefault(component_name(name), []).append({"group": group, "kind": kind, "version": version})
    while pending:
        name = pending.pop()
        key = component_name(name)
        cls = getattr(models, name, None)
        if key in out or not isinstance(getattr(cls, "openapi_types", None), dict):
            continue
        out[key] = model_schema(cls, pending)
        if key in gvk:
            out[key]["x-kubernetes-group-version-kind"] = gvk[key]
    out[INT_OR_STRING] = {"type": "string", "format": "int-or-string",  # the apiserver's shape of it
                          "description": "IntOrString is a type that can hold an int32 or a string."}
    return dict(sorted(out.items()))
