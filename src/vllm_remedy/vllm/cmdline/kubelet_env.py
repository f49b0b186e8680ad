"""Kubernetes' ``$(VAR)`` expansion: in an ``env`` entry's value from the entries before it, and in ``command``/``args``
from the container's whole env, before the process starts (``$$`` escapes, an undefined variable stays as written).

``expand`` is ``Expand`` of third_party/forked/golang/expansion/expand.go as the kubelet runs it
(``ExpandContainerCommandAndArgs``, ``MappingFuncFor``): a ``$`` followed by ``$`` is one ``$``; ``$(`` opens a
reference to whatever text runs to the next ``)`` (any name: an undefined one, ``$(A B)`` included, is written back
as ``$(name)``); ``$(`` with no ``)`` after it, a ``$`` before any other character and a trailing ``$`` stay as they
are. So ``$$(X)`` reaches the process as the literal ``$(X)``, and an undefined ``$(X)`` as ``$(X)``: words vLLM
reads like any other (``command``: a stray positional, a flag value argparse refuses).

Kept in ``cmdline`` so the parser can apply it to the flags it reads (``command``) and ``pod_env`` to the values it
reads, with one implementation and no import cycle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

ConfigMaps = Mapping[str, Mapping[str, str]]  # ConfigMap name -> its data, from the manifests checked
#: What the kubelet adds to the env without the manifest naming it (``MappingFuncFor(tmpEnv, serviceEnv)``): the
#: service links of every Service in the namespace (``{NAME}_SERVICE_HOST``, ``{NAME}_SERVICE_PORT[_{PORT}]``,
#: ``{NAME}_PORT[_{n}_{PROTO}[_PROTO|_PORT|_ADDR]]``, envvars.go) and the LeaderWorkerSet controller's variables.
_SERVICE_LINK = re.compile(r"[A-Z_][A-Z0-9_]*_(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9_]+)?|"
                           r"PORT(?:_\d+_(?:TCP|UDP|SCTP)(?:_PROTO|_PORT|_ADDR)?)?)")
_LWS = frozenset({"LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"})


def expand_arg(container: Mapping[str, Any], text: str, maps: ConfigMaps | None = None) -> str:
    """One ``command``/``args`` string as the process receives it: Kubernetes expands ``$(X)`` there from the
    container's env too (``$$`` escapes, an undefined X stays as written). A reference to a variable this tool cannot
    read (a Secret, a ConfigMap not among the manifests) leaves the text as written."""
    if "$" not in text:
        return text
    out, why = _expand(text, *environment(container, maps or {}))
    return text if why is not None or out is None else out


def unreadable(container: Mapping[str, Any], text: str, maps: ConfigMaps | None = None) -> str | None:
    """Why ``text``'s ``$(X)`` expansion cannot be read (a Secret, an unchecked ConfigMap), None when it can."""
    if "$" not in text:
        return None
    return _expand(text, *environment(container, maps or {}))[1]


def environment(container: Mapping[str, Any], maps: ConfigMaps) -> tuple[dict[str, str], dict[str, str]]:
    """(the variables whose values are read, the ones that cannot be with why; ``*P``: an envFrom source this tool
    cannot read, with ``prefix`` P, may set any variable named P...; ``*`` any at all: see ``wildcard``).

    Kubernetes (``MakeEnvironmentVariables``, kubelet_pods.go) applies ``envFrom`` sources in order, a later source
    overwriting a key an earlier one set, then every ``env`` entry over all of them: so a Secret or an unchecked
    ConfigMap listed after the ConfigMap that sets a variable may reset it (its value is then unknown), one listed
    before it cannot, and an ``env`` entry decides whatever envFrom holds."""
    known: dict[str, str] = {}
    opaque: dict[str, str] = {}  # variables whose value this tool cannot see, with why
    for source in container.get("envFrom") or []:
        if not isinstance(source, Mapping):
            continue
        prefix = str(source.get("prefix") or "")
        ref = source.get("configMapRef")
        if isinstance(ref, Mapping) and str(ref.get("name")) in maps:
            known.update({prefix + k: v for k, v in maps[str(ref.get("name"))].items()})
            opaque = {k: v for k, v in opaque.items() if k not in known}
            continue
        what = (f"ConfigMap {ref.get('name')}, which is not among the manifests checked" if isinstance(ref, Mapping)
                else f"Secret {(source.get('secretRef') or {}).get('name')}, whose values are not read")
        for key in [k for k in known if k.startswith(prefix)]:  # set by an earlier source: this one may reset it
            opaque[key] = (f"may be reset by envFrom {what}: it is listed after the source that sets it, and a "
                           "later envFrom source wins")
            del known[key]
        opaque["*" + prefix] = f"envFrom {what} may set it"
    for entry in container.get("env") or []:
        if not isinstance(entry, Mapping) or "name" not in entry:
            continue
        key = str(entry["name"])
        if "valueFrom" in entry:
            got, why = _value_from(entry["valueFrom"], maps)
        else:
            value = entry.get("value")  # null or absent: the empty string (a non-string: pod_env.invalid's)
            got, why = _expand(value if isinstance(value, str) else "", known, opaque)
        if why is None and got is not None:
            known[key] = got
            opaque.pop(key, None)
        elif why is not None:
            opaque[key] = why
            known.pop(key, None)
        else:  # an optional key its ConfigMap lacks: Kubernetes leaves the variable out
            known.pop(key, None)
    return known, opaque


def wildcard(opaque: Mapping[str, str], name: str) -> str | None:
    """Why an envFrom source this tool cannot read may set ``name`` (its ``prefix`` starts the name), else None."""
    return next((why for key, why in opaque.items() if key.startswith("*") and name.startswith(key[1:])), None)


def _value_from(ref: Any, maps: ConfigMaps) -> tuple[str | None, str | None]:
    if not isinstance(ref, Mapping):
        return None, "has a valueFrom this tool cannot read"
    cm = ref.get("configMapKeyRef")
    if isinstance(cm, Mapping):
        data = maps.get(str(cm.get("name")))
        if data is None:
            return None, (f"comes from ConfigMap {cm.get('name')} (key {cm.get('key')}), which is not among the "
                          "manifests checked")
        if str(cm.get("key")) in data:
            return data[str(cm.get("key"))], None
        lacks = f"names key {cm.get('key')}, which ConfigMap {cm.get('name')} lacks"
        return None, None if cm.get("optional") else lacks
    kind = next(iter(ref), "valueFrom")
    return None, f"comes from a {kind}, whose value is not in the manifests"


def injected(name: str) -> str | None:
    """Why a variable the manifest does not define may still be set when the container starts, else None."""
    if name in _LWS:
        return "the LeaderWorkerSet controller sets in each pod it creates"
    if _SERVICE_LINK.fullmatch(name):
        return "Kubernetes sets from a Service of that name in the namespace (service links)"
    return None


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """``text`` with each ``$(name)`` replaced by ``mapping(name)`` and each ``$$`` by ``$``, as expand.go's ``Expand``
    scans it (left to right, each ``$`` read once, a reference ending at the first ``)``)."""
    out: list[str] = []
    checkpoint = cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            following = text[cursor + 1]
            close = text.find(")", cursor + 2) if following == "(" else -1
            if following == "$":
                out.append("$")
            elif close >= 0:
                out.append(mapping(text[cursor + 2:close]))
                cursor = close - 1
            else:  # `$(` never closed, or `$` before another character: kept as written
                out.append("$" + following)
            cursor += 1
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def _expand(value: str, known: Mapping[str, str], opaque: Mapping[str, str]) -> tuple[str | None, str | None]:
    """Kubernetes' ``$(X)`` expansion from the variables defined before (``$$`` escapes); an undefined X stays as
    written, unless it may come from a source this tool cannot read."""
    problem: list[str] = []

    def swap(ref: str) -> str:
        if ref in known:
            return known[ref]
        if (why := opaque.get(ref) or wildcard(opaque, ref) or injected(ref)) is not None:
            problem.append(f"expands $({ref}), which {why}")
        return f"$({ref})"  # undefined: the kubelet writes it back, a literal word

    out = expand(value, swap)
    return (None, problem[0]) if problem else (out, None)
