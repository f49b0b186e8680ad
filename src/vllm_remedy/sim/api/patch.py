"""PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

Strategic merge is what kubectl and the Python client send by default, and what ``kubectl diff``
computes client-side with ``$setElementOrder`` directives, so lists of containers, env vars, ports
and volumes must merge by their keys (the notes' table) instead of being replaced.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]

# List field -> merge key, from the Kubernetes API types' patchMergeKey tags (the lists our resources have).
MERGE_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "imagePullSecrets": "name", "ports": "containerPort", "volumeMounts": "mountPath",
    "volumeDevices": "devicePath", "conditions": "type", "hostAliases": "ip", "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name", "addresses": "type",
}


def merge_key(field: str, items: list[Any]) -> str | None:
    """The merge key of list ``field``; ``ports`` is a Service's (keyed by ``port``) when its items have no
    ``containerPort``, as the two API types tag the same field name differently."""
    if field == "ports" and items and all(isinstance(x, dict) and "port" in x and "containerPort" not in x
                                          for x in items):
        return "port"
    return MERGE_KEYS.get(field)


# Primitive lists whose patch strategy is "merge" (a set union) rather than replace.
MERGE_PRIMITIVE_LISTS = frozenset({"finalizers"})


def json_patch(doc: Obj, ops: Any) -> Obj:
    """RFC 6902. A malformed patch is a 400; an op that fails (``test`` included) is a 422 as in kube."""
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    for op in ops:  # one at a time, so the error names the operation that failed
        if not isinstance(op, dict):
            raise ApiError(400, "BadRequest", f"invalid JSON patch operation: {op!r}")
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc)
        except jsonpatch.JsonPatchTestFailed as exc:
            raise _invalid(f"testing value {op.get('path')} failed: test failed") from exc
        except (jsonpatch.JsonPatchConflict, jsonpointer.JsonPointerException) as exc:
            raise _invalid(f"{op.get('op')} operation does not apply: {exc}") from exc
        except (jsonpatch.InvalidJsonPatch, TypeError, KeyError, ValueError) as exc:
            raise ApiError(400, "BadRequest", f"invalid JSON patch: {exc}") from exc
    return doc


def _invalid(why: str) -> ApiError:
    return ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {why}",
                    {"causes": [{"reason": "FieldValueInvalid", "message": why, "field": "patch"}]})


def merge_patch(doc: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, everything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(doc: Obj, patch: Any) -> Obj:
    """Apply a strategic merge patch to ``doc`` (a new object is returned)."""
    if not isinstance(patch, dict):
        raise ApiError(400, "BadRequest", "strategic merge patch must be a JSON object")
    merged = _merge_map(copy.deepcopy(doc), patch)
    return merged if merged is not None else {}


def _merge_map(doc: Obj | None, patch: Obj) -> Obj | None:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "replace":
        return _strip_directives(body)
    if directive not in (None, "merge"):
        raise ApiError(400, "BadRequest", f"unknown patch type: {directive}")
    result: Obj = dict(doc) if isinstance(doc, dict) else {}
    retain = body.pop("$retainKeys", None)
    orders: dict[str, list[Any]] = {}
    for key, value in body.items():
        if key.startswith("$setElementOrder/"):
            orders[key.partition("/")[2]] = value
        elif key.startswith("$deleteFromPrimitiveList/"):
            field = key.partition("/")[2]
            result[field] = [x for x in result.get(field) or [] if x not in value]
    for key, value in body.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _reorder(field, result[field], order)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current = current if isinstance(current, list) else []
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [_strip_directives(x) for x in patch if not (isinstance(x, dict) and x.get("$patch") == "replace")]
    if field in MERGE_PRIMITIVE_LISTS:
        return current + [x for x in patch if x not in current]
    key = merge_key(field, patch)
    if key is None or not all(isinstance(x, dict) for x in patch):
        return [_strip_directives(x) for x in patch]
    result = [dict(x) if isinstance(x, dict) else x for x in current]
    for item in patch:
        if key not in item:
            raise ApiError(400, "BadRequest", f"map: {item} does not contain declared merge key: {key}")
        index = next((i for i, x in enumerate(result) if isinstance(x, dict) and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
        elif index is None:
            result.append(_strip_directives(item))
        else:
            result[index] = _merge_map(result[index], item) or {}
    return result


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = merge_key(field, items)
    ident = (lambda x: x.get(key) if isinstance(x, dict) else x) if key else (lambda x: x)
    wanted = [ident(o) for o in order]
    ranked = sorted((i for i in items if ident(i) in wanted), key=lambda x: wanted.index(ident(x)))
    rest = iter(ranked)
    # Elements named in the order list take their slots in that order; the others keep their place.
    return [next(rest) if ident(i) in wanted else i for i in items]


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value
