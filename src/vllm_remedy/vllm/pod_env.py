"""The value one environment variable has in vLLM's process, as far as the manifests say it.

Kubernetes builds a container's environment from ``envFrom`` (in order, a later source overwriting an earlier one's
key, so an unreadable source listed later makes an earlier value unknown), then ``env`` (later entries win, ``$(X)``
expanded from the entries before them); the launch command can then change it (``cmdline.env``). A value that comes
from a Secret, a field or resource reference, or a ConfigMap that is not among the manifests being checked cannot
be read here: the result then says which variable and why instead of guessing "unset".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import env as launch
from vllm_remedy.vllm.cmdline.argv_shape import kind_of
from vllm_remedy.vllm.cmdline.kubelet_env import environment as _environment
from vllm_remedy.vllm.cmdline.kubelet_env import expand_arg, wildcard

__all__ = ["ConfigMaps", "EnvValue", "config_map_problem", "config_maps", "expand_arg", "invalid", "read"]

ConfigMaps = Mapping[str, Mapping[str, str]]  # ConfigMap name -> its data, from the manifests checked


@dataclass(frozen=True)
class EnvValue:
    """The variable's value in vLLM's process (None: unset), or ``unknown``: why it cannot be read."""

    name: str
    value: str | None
    unknown: str | None = None


def config_maps(docs: list[Any], namespace: str, default: str = "default") -> dict[str, dict[str, str]]:
    """The ConfigMaps among ``docs`` in ``namespace`` (a namespace-less one gets ``default``, as kubectl apply would
    place it), by name: a pod's reference resolves only in its own namespace."""
    out: dict[str, dict[str, str]] = {}
    for doc in docs:
        items = doc.get("items") if isinstance(doc, Mapping) and doc.get("kind") == "List" else [doc]
        for d in items or []:
            if isinstance(d, Mapping) and d.get("kind") == "ConfigMap":
                meta = d.get("metadata") or {}
                if str(meta.get("namespace") or default) != namespace:
                    continue
                out[str(meta.get("name") or "")] = {str(k): "" if v is None else str(v)  # null: "" (argv_shape)
                                                    for k, v in (d.get("data") or {}).items()}
    return out


def invalid(container: Mapping[str, Any]) -> str | None:
    """Why Kubernetes refuses the container's ``env`` (one line naming the variable), None when it takes it.

    ``env`` is a list of ``{name, value | valueFrom}`` objects whose ``name`` and ``value`` are strings: the API server
    refuses any other shape (``env: "FOO=1"``, ``env: ["FOO=1"]``, an entry without a name, both a value and a
    valueFrom) and a YAML boolean or number as a value (``value: True`` unquoted decodes as a bool, 400 Bad Request),
    so no pod ever runs with it. Reading ``True`` as the text "True" would call a variable set in a manifest that
    never applies. The YAML's own spelling is gone once decoded (``y`` and ``true`` are both True), so the advice is
    to quote what was meant, not a guess at it.
    """
    env = container.get("env")
    if env is None:
        return None
    if not isinstance(env, list):
        return (f"env is {kind_of(env)} ({env!r}), not a list of {{name, value}} entries, so Kubernetes refuses the "
                "manifest")
    for i, entry in enumerate(env):
        if not isinstance(entry, Mapping):
            return (f"env[{i}] is {kind_of(entry)} ({entry!r}), not a {{name, value}} entry, so Kubernetes refuses "
                    "the manifest")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            what = "has no name" if name is None or name == "" else f"has name {name!r}, {kind_of(name)}, not a string"
            return f"env[{i}] {what}, so Kubernetes refuses the manifest"
        value = entry.get("value")
        if isinstance(value, str) and value and entry.get("valueFrom") is not None:
            return (f"env {name}: both value and valueFrom are set, so Kubernetes refuses the manifest (keep one "
                    "of them)")
        if value is not None and not isinstance(value, str):
            return (f"env {name}: value {value!r} is {kind_of(value)}, not a string, so Kubernetes refuses the "
                    "manifest (quote the value as you meant it)")
    return None


def config_map_problem(doc: Any) -> str | None:
    """Why the API server refuses a ConfigMap's ``data`` (a map of string to string), one phrase naming the key;
    None for any other object or a valid one. ``{X: 1}`` unquoted is an integer there, refused with 400."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "ConfigMap":
        return None
    data = doc.get("data")
    if data is None:
        return None
    name = f"ConfigMap {(doc.get('metadata') or {}).get('name')}"
    if not isinstance(data, Mapping):
        return f"{name}: data is {kind_of(data)}, not a map of strings, so Kubernetes refuses it"
    for key, value in data.items():
        if value is not None and not isinstance(value, str):  # null decodes as "" (Go's JSON rules, argv_shape)
            return (f"{name}: data.{key}: value {value!r} is {kind_of(value)}, not a string, so Kubernetes refuses it "
                    "(data is map[string]string: quote the value as you meant it)")
    return None


def read(container: Mapping[str, Any], name: str, maps: ConfigMaps | None = None) -> EnvValue:
    """``name``'s value in the process the container's command starts; UserError for an ``env`` Kubernetes
    refuses (:func:`invalid`)."""
    if (why := invalid(container)) is not None:
        raise UserError(why)
    value, why = _from_spec(container, name, maps or {})
    if why is not None:
        return EnvValue(name, None, why)
    value, why = launch.apply(value, launch.changes(container, name))
    return EnvValue(name, value, f"the launch command changes it: {why}" if why else None)


def _from_spec(container: Mapping[str, Any], name: str, maps: ConfigMaps) -> tuple[str | None, str | None]:
    known, opaque = _environment(container, maps)
    if name in opaque:
        return None, f"{name} {opaque[name]}"
    if name not in known and (why := wildcard(opaque, name)) is not None:
        return None, f"{name}: {why}"
    return known.get(name), None
