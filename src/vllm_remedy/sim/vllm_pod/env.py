"""Substitutions that happen before vLLM sees its argv: kubelet's ``$(VAR)`` and, in ``sh -c`` scripts, the shell's.

Real manifests write ``--model=$(MODEL_ID)`` (Vertex, KServe) or ``--tensor-parallel-size $TP_SIZE`` inside a
script; the container runs with the expanded values, so the simulator must judge those, not the tokens.
``pod_env`` builds the environment the way kubelet does (``envFrom`` ConfigMaps and Secrets, then ``env`` in order
with ``valueFrom`` read from the pod's namespace and ``$(VAR)`` of earlier entries), and ``script_env`` adds what an
``sh -c`` script exports or prefixes to the vLLM command (``VAR=1 exec vllm serve ...``); ``with_env`` writes the
result back as literal entries so everything downstream reads one env. Anything unknown stays verbatim, as kubelet
leaves an undefined ``$(VAR)`` and as the memory model then reports it.

``kubelet`` is this module's own reading of the kubelet's ``expansion.Expand`` (third_party/forked/golang/expansion):
``$$`` is ``$``, ``$(`` runs to the next ``)`` whatever the name holds (``$(max-model-len)``, a ConfigMap key made a
variable, included) and an undefined name is written back as ``$(name)``, so ``$$(X)`` and an undefined ``$(X)`` both
reach vLLM as the literal word ``$(X)``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Mapping
from typing import Any, Protocol

from vllm_remedy.vllm.cmdline import ServerCommand, parse, shell

_SHELL = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.S)


class Objects(Protocol):
    """What ``pod_env`` needs of the store: ``find`` (None when the object is missing)."""

    def find(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...


def literal_env(container: Mapping[str, Any]) -> dict[str, str]:
    """Name → value for env entries with a literal value (later entries win, like kubelet)."""
    out: dict[str, str] = {}
    for entry in container.get("env") or []:
        if isinstance(entry, Mapping) and "name" in entry and "value" in entry:
            out[str(entry["name"])] = str(entry["value"])
    return out


def kubelet(text: str, env: Mapping[str, str]) -> str:
    """``text`` as the kubelet hands it on: each ``$(name)`` defined in ``env`` replaced, ``$$`` made ``$``, scanning
    left to right with each ``$`` read once; ``$(name)`` undefined, ``$(`` never closed and a lone ``$`` kept."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] != "$" or i + 1 == len(text):
            out.append(text[i])
            i += 1
        elif text[i + 1] == "$":
            out.append("$")
            i += 2
        elif text[i + 1] == "(" and (end := text.find(")", i + 2)) != -1:
            name = text[i + 2:end]
            out.append(env.get(name, f"$({name})"))
            i = end + 1
        else:
            out.append(text[i:i + 2])
            i += 2
    return "".join(out)


def kubelet_expand(container: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with command/args as the process receives them (``kubelet`` with the container's env) and that env left
    out: a ``$`` still in them is literal text (an undefined ``$(X)``, a ``$$(X)`` escape), so no later reading of
    the copy may expand it a second time (the process's env is written back from ``pod_env``, ``with_env``)."""
    env = literal_env(container)
    out = copy.deepcopy(dict(container))
    for key in ("command", "args"):
        if isinstance(out.get(key), list):
            out[key] = [kubelet(v, env) if isinstance(v, str) else v for v in out[key]]
    out.pop("env", None)
    out.pop("envFrom", None)
    return out


def shell_expand(value: str, env: Mapping[str, str]) -> str:
    """``$X``, ``${X}``, ``${X:-default}`` with the container's env (what ``sh -c`` would do)."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        return m.group(2) if m.group(2) is not None else m.group(0)

    return _SHELL.sub(one, value)


def pod_env(container: Mapping[str, Any], pod: Mapping[str, Any], store: Objects | None) -> dict[str, str]:
    """The container's environment as kubelet builds it: ``envFrom`` sources in order (a ``prefix`` before each key),
    then ``env`` in order, later names winning; ``valueFrom`` reads ConfigMap/Secret keys in the pod's namespace and
    a few pod fields. A source that is missing is skipped: only an optional one can be by the time the container
    runs, as the kubelet refuses to create it otherwise (``config_error``)."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    out: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        if not isinstance(source, Mapping):
            continue
        prefix = str(source.get("prefix") or "")
        for kind, resource in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            ref = source.get(kind)
            if isinstance(ref, Mapping) and ref.get("name"):
                data = _data(store, resource, namespace, str(ref["name"]))
                out.update({f"{prefix}{k}": v for k, v in data.items()})
    for entry in container.get("env") or []:
        if not isinstance(entry, Mapping) or "name" not in entry:
            continue
        if "value" in entry:
            out[str(entry["name"])] = kubelet(str(entry["value"]), out)
        elif isinstance(entry.get("valueFrom"), Mapping):
            value = _value_from(entry["valueFrom"], pod, namespace, store)
            if value is not None:
                out[str(entry["name"])] = value
    return out


_KINDS = {"configmaps": ("configmap", "ConfigMap"), "secrets": ("secret", "Secret")}


def config_error(container: Mapping[str, Any], pod: Mapping[str, Any], store: Objects | None) -> str | None:
    """Why the kubelet will not create this container (``CreateContainerConfigError``), in its words, or None.

    kubelet's makeEnvironmentVariables: ``envFrom`` sources, then ``env`` entries, the first required ConfigMap or
    Secret that is missing (``secret "x" not found``, the kubelet's object cache naming the resource in the
    singular) or key that is absent (``couldn't find key k in Secret ns/x``) stops it; ``optional: true`` skips."""
    if store is None:
        return None
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    for source in container.get("envFrom") or []:
        for kind, resource in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            ref = source.get(kind) if isinstance(source, Mapping) else None
            if (isinstance(ref, Mapping) and ref.get("name") and not ref.get("optional")
                    and store.find(resource, namespace, str(ref["name"])) is None):
                return f'{_KINDS[resource][0]} "{ref["name"]}" not found'
    for entry in container.get("env") or []:
        ref = entry.get("valueFrom") if isinstance(entry, Mapping) else None
        for kind, resource in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
            key_ref = ref.get(kind) if isinstance(ref, Mapping) else None
            if not isinstance(key_ref, Mapping) or not key_ref.get("name") or key_ref.get("optional"):
                continue
            name, key = str(key_ref["name"]), str(key_ref.get("key", ""))
            if store.find(resource, namespace, name) is None:
                return f'{_KINDS[resource][0]} "{name}" not found'
            if key not in _data(store, resource, namespace, name):
                return f"couldn't find key {key} in {_KINDS[resource][1]} {namespace}/{name}"
    return None


def config_map_data(store: Objects | None, namespace: str, name: str) -> dict[str, str]:
    """A ConfigMap's data ({} when it is missing): what a configMap volume mounts as files."""
    return _data(store, "configmaps", namespace, name)


def _data(store: Objects | None, resource: str, namespace: str, name: str) -> dict[str, str]:
    """A ConfigMap's data, or a Secret's (base64 ``data`` decoded, ``stringData`` as written)."""
    obj = store.find(resource, namespace, name) if store is not None else None
    if obj is None:
        return {}
    out = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
    if resource == "secrets":
        decoded = {}
        for k, v in out.items():
            try:
                decoded[k] = base64.b64decode(v, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                decoded[k] = v
        out = decoded | {str(k): str(v) for k, v in (obj.get("stringData") or {}).items()}
    return out


_FIELDS = {"metadata.name": ("metadata", "name"), "metadata.namespace": ("metadata", "namespace"),
           "spec.nodeName": ("spec", "nodeName"), "spec.serviceAccountName": ("spec", "serviceAccountName")}


def _value_from(ref: Mapping[str, Any], pod: Mapping[str, Any], namespace: str, store: Objects | None) -> str | None:
    for kind, resource in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
        key_ref = ref.get(kind)
        if isinstance(key_ref, Mapping) and key_ref.get("name") and key_ref.get("key"):
            return _data(store, resource, namespace, str(key_ref["name"])).get(str(key_ref["key"]))
    field = ref.get("fieldRef")
    if isinstance(field, Mapping) and str(field.get("fieldPath")) in _FIELDS:
        part, name = _FIELDS[str(field["fieldPath"])]
        value = (pod.get(part) or {}).get(name)
        return None if value is None else str(value)
    return None


def with_env(container: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """A copy whose ``env`` is ``values`` as literal entries (``envFrom`` dropped: it is in them)."""
    out = copy.deepcopy(dict(container))
    out.pop("envFrom", None)
    out["env"] = [{"name": k, "value": v} for k, v in values.items()]
    return out


def command_env(cmd: ServerCommand, container: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, str]:
    """What vLLM's process gets on top of the container's env from its command: in an ``sh -c`` script, ``export
    X=...`` statements before the vLLM command and the ``X=... [exec] [env Y=...] vllm serve`` prefix of that command
    (shell-expanded with the env so far); in a plain argv, ``env X=... vllm serve``'s assignments."""
    env = dict(values)
    if cmd.script is None:
        words = [str(w) for key in ("command", "args") for w in container.get(key) or []]
        hit = parse.entrypoint(words)
        for word in words[:hit[0]] if hit else []:
            if (m := _ASSIGN.match(word)) is not None:
                env[m.group(1)] = m.group(2)
        return {k: v for k, v in env.items() if values.get(k) != v}
    field, index = cmd.script
    for stmt in shell.statements(str((container.get(field) or [])[index])):
        words = [w.value for w in stmt.words]
        hit = parse.entrypoint(words)
        prefix = words[:hit[0]] if hit is not None else words[1:] if words[:1] == ["export"] else []
        for word in prefix:
            if (m := _ASSIGN.match(word)) is not None:
                env[m.group(1)] = shell_expand(m.group(2), env)
        if hit is not None:
            break
    return {k: v for k, v in env.items() if values.get(k) != v}
