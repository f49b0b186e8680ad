"""Server-side apply: field ownership (``metadata.managedFields``) and its 409 on conflicts.

Only what ``kubectl apply --server-side`` relies on: applying creates or merges, a field applied by
one manager with a value another manager set is a 409 unless ``force=true``, and fields a manager
stops applying are removed when nobody else owns them. Update/patch writes record their changed
fields for their manager so that an apply after ``kubectl patch`` conflicts as on a real cluster.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from vllm_remedy.sim.api.patch import merge_key, strategic_merge_patch
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
Path = tuple[str, ...]
_MISSING = object()
_TRACKED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def leaves(value: Any, field: str | None = None, prefix: Path = ()) -> set[Path]:
    """Leaf field paths of ``value`` in fieldsV1 segment form (``f:spec``, ``k:{"name":"vllm"}``)."""
    if isinstance(value, dict):
        if not value:
            return {prefix} if prefix else set()
        out: set[Path] = set()
        for k, v in value.items():
            out |= leaves(v, k, (*prefix, f"f:{k}"))
        return out
    key = merge_key(field or "", value) if isinstance(value, list) else None
    if isinstance(value, list) and key and value and all(isinstance(x, dict) and key in x for x in value):
        out = set()
        for item in value:
            seg = "k:" + json.dumps({key: item[key]}, separators=(",", ":"))
            out |= leaves(item, None, (*prefix, seg)) or {(*prefix, seg)}
        return out
    return {prefix}


def owned_view(obj: Obj) -> Obj:
    """The part of an object whose fields are tracked: spec-like fields and a few metadata maps."""
    view = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    meta = obj.get("metadata") or {}
    tracked = {k: meta[k] for k in _TRACKED_METADATA if meta.get(k)}
    if tracked:
        view["metadata"] = tracked
    return view


def get_path(obj: Any, path: Path) -> Any:
    """Follow a managedFields path (f: keys, k: list items by merge key); _MISSING when it is absent."""
    node = obj
    for seg in path:
        if seg.startswith("f:"):
            if not isinstance(node, dict) or seg[2:] not in node:
                return _MISSING
            node = node[seg[2:]]
        else:
            match = json.loads(seg[2:])
            (mk, mv), = match.items()
            if not isinstance(node, list):
                return _MISSING
            node = next((x for x in node if isinstance(x, dict) and x.get(mk) == mv), _MISSING)
            if node is _MISSING:
                return _MISSING
    return node


def delete_path(obj: Any, path: Path) -> None:
    """Remove a field nobody applies any more, as server-side apply prunes it."""
    parent = get_path(obj, path[:-1]) if len(path) > 1 else obj
    seg = path[-1]
    if seg.startswith("f:") and isinstance(parent, dict):
        parent.pop(seg[2:], None)
    elif seg.startswith("k:") and isinstance(parent, list):
        (mk, mv), = json.loads(seg[2:]).items()
        parent[:] = [x for x in parent if not (isinstance(x, dict) and x.get(mk) == mv)]


def to_fields_v1(paths: set[Path]) -> Obj:
    """Encode owned paths as the FieldsV1 tree stored in metadata.managedFields."""
    root: Obj = {}
    for path in sorted(paths):
        node = root
        for seg in path:
            node = node.setdefault(seg, {})
            if seg.startswith("k:"):
                node.setdefault(".", {})
    return root


def from_fields_v1(tree: Obj, prefix: Path = ()) -> set[Path]:
    """Decode a FieldsV1 tree back into leaf paths, to compare owners' fields."""
    children = {k: v for k, v in tree.items() if k != "."}
    if not children:
        return {prefix} if prefix else set()
    out: set[Path] = set()
    for k, v in children.items():
        out |= from_fields_v1(v if isinstance(v, dict) else {}, (*prefix, k))
    return out


def _managers(obj: Obj | None) -> dict[tuple[str, str], Obj]:
    entries = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    return {(e.get("manager", ""), e.get("operation", "")): e for e in entries}


def _entry(manager: str, operation: str, api_version: str, paths: set[Path], when: str) -> Obj:
    return {"manager": manager, "operation": operation, "apiVersion": api_version, "time": when,
            "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}


def _field_text(path: Path) -> str:
    """``.spec.template.spec.containers[name="vllm"].image``, as the apiserver words conflicts."""
    out = ""
    for seg in path:
        if seg.startswith("f:"):
            out += "." + seg[2:]
        else:
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(seg[2:]).items()) + "]"
    return out


def _overlaps(path: Path, owned: set[Path]) -> bool:
    return any(p[: len(path)] == path or path[: len(p)] == p for p in owned)


def _set_entries(obj: Obj, entries: dict[tuple[str, str], Obj]) -> None:
    kept = [e for e in entries.values() if from_fields_v1(e.get("fieldsV1") or {})]
    if kept:
        obj["metadata"]["managedFields"] = kept
    else:
        obj["metadata"].pop("managedFields", None)


def _items(paths: set[Path]) -> set[Path]:
    """The list items (paths ending in a ``k:`` segment) that ``paths`` pass through."""
    return {p[: i + 1] for p in paths for i, seg in enumerate(p) if seg.startswith("k:")}


def apply(live: Obj | None, applied: Obj, manager: str, force: bool, when: str) -> Obj:
    """The object after ``manager`` applies ``applied`` to ``live`` (None: create)."""
    applied = copy.deepcopy(applied)
    applied.get("metadata", {}).pop("managedFields", None)
    paths = leaves(owned_view(applied))
    api_version = applied.get("apiVersion", "")
    if live is None:
        result = applied
        result["metadata"]["managedFields"] = [_entry(manager, "Apply", api_version, paths, when)]
        return result
    entries = _managers(live)
    live_view = owned_view(live)
    conflicts: list[tuple[str, Path]] = []
    applied_view = owned_view(applied)
    for (other, op), entry in entries.items():
        if other == manager and op == "Apply":
            continue
        owned = from_fields_v1(entry.get("fieldsV1") or {})
        for path in sorted(paths):
            current = get_path(live_view, path)
            if current is not _MISSING and current != get_path(applied_view, path) and _overlaps(path, owned):
                conflicts.append((other, path))
    if conflicts and not force:
        lines = "\n".join(f'- conflict with "{m}": {_field_text(p)}' for m, p in conflicts)
        raise ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict(s):\n{lines}",
                       {"causes": [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}"',
                                    "field": _field_text(p)} for m, p in conflicts]})
    for other, path in conflicts:  # force=true: the applier takes the fields over
        for (name, _op), entry in entries.items():
            if name == other:
                owned = from_fields_v1(entry.get("fieldsV1") or {})
                entry["fieldsV1"] = to_fields_v1({p for p in owned if not _overlaps(path, {p})})
    previous = from_fields_v1((entries.get((manager, "Apply")) or {}).get("fieldsV1") or {})
    result = strategic_merge_patch(live, applied)
    others = set().union(*(from_fields_v1(e.get("fieldsV1") or {}) for k, e in entries.items()
                           if k != (manager, "Apply"))) if entries else set()
    # A list item the manager applied before and no longer applies goes as a whole (its "." ownership),
    # defaulted fields in it included, unless another manager owns something in it.
    dropped = _items(previous) - _items(paths)
    for item in sorted(dropped, key=len, reverse=True):
        if not _overlaps(item, others):
            delete_path(result, item)  # first: its leaves' removal below would take its merge key
    for path in sorted(previous - paths, key=len, reverse=True):
        if not _overlaps(path, others):
            delete_path(result, path)
            for depth in range(len(path) - 1, 0, -1):  # drop maps the removal left empty
                parent = get_path(result, path[:depth])
                if parent in ({}, []) and not _overlaps(path[:depth], others | paths):
                    delete_path(result, path[:depth])
    old = entries.get((manager, "Apply"))
    if old is None or from_fields_v1(old.get("fieldsV1") or {}) != paths:
        entries[(manager, "Apply")] = _entry(manager, "Apply", api_version, paths, when)
    _set_entries(result, entries)
    return result


def record_update(old: Obj, new: Obj, manager: str, when: str) -> None:
    """Give ``manager`` the fields an update/patch changed (in place on ``new``), as the apiserver does."""
    old_view, new_view = owned_view(old), owned_view(new)
    changed = {p for p in leaves(new_view) if get_path(old_view, p) != get_path(new_view, p)}
    present = leaves(new_view)
    entries = _managers(old)
    touched = False
    for key, entry in entries.items():
        owned = from_fields_v1(entry.get("fieldsV1") or {})
        kept = {p for p in owned if (key[0] == manager or p not in changed)
                and any(q[: len(p)] == p for q in present)}
        if kept != owned:
            entry["fieldsV1"] = to_fields_v1(kept)
            touched = True
    if changed:
        mine = entries.get((manager, "Update"))
        owned = from_fields_v1(mine.get("fieldsV1") or {}) if mine else set()
        entries[(manager, "Update")] = _entry(manager, "Update", new.get("apiVersion", ""), owned | changed, when)
        touched = True
    if touched or "managedFields" in old.get("metadata", {}):
        new.setdefault("metadata", {})
        _set_entries(new, entries)
