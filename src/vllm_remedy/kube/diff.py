"""What changed between two pod templates, in the runbook's terms, plus a unified YAML diff for dry runs.

Step 3 of the runbook diffs ``rollout history --revision`` dumps by eye; the usual culprits are vLLM
flags, the image tag, the model revision, the GPU placement (nodeSelector/affinity), resources and env.
Flags are compared through the command-line parser, so ``--max-model-len=16384`` vs a separate token
is no change while a dropped flag is.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.kube.printable import HEADER, HEADER_ESCAPED
from vllm_remedy.vllm.cmdline import find_server


@dataclass(frozen=True)
class Change:
    """One difference; ``None`` on a side means absent there."""

    field: str
    old: Any
    new: Any


def _image_tag(image: str | None) -> str | None:
    if not image:
        return None
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def _server(spec: Mapping[str, Any], container: str | None) -> Any:
    try:
        return find_server(spec, container)
    except UserError:
        return None


def _container(spec: Mapping[str, Any], name: str | None) -> Mapping[str, Any]:
    containers = spec.get("containers") or []
    for c in containers:
        if c.get("name") == name:
            return c
    return containers[0] if containers and name is None else {}


def _env(container: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in container.get("env") or []:
        out[str(item.get("name"))] = item.get("value") if "valueFrom" not in item else {"valueFrom": item["valueFrom"]}
    return out


def _compare(prefix: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    return [Change(f"{prefix}{k}", old.get(k), new.get(k)) for k in sorted(set(old) | set(new))
            if old.get(k) != new.get(k)]


def revision_diff(old: Mapping[str, Any], new: Mapping[str, Any], container: str | None = None) -> list[Change]:
    """Changes from template ``old`` to ``new``: image, tag, model, model revision, flags, placement, resources, env."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    a, b = _server(old_spec, container), _server(new_spec, container)
    name = container or (b.container_name if b else a.container_name if a else None)
    ca, cb = _container(old_spec, name), _container(new_spec, name)
    changes: list[Change] = []
    img_a, img_b = ca.get("image"), cb.get("image")
    if img_a != img_b:
        changes.append(Change("image", img_a, img_b))
        if _image_tag(img_a) != _image_tag(img_b):
            changes.append(Change("image tag", _image_tag(img_a), _image_tag(img_b)))
    fa = dict(a.flags) if a else {}
    fb = dict(b.flags) if b else {}
    if (a.model if a else None) != (b.model if b else None):
        changes.append(Change("model", a.model if a else None, b.model if b else None))
    if fa.get("revision") != fb.get("revision"):
        changes.append(Change("model revision", fa.get("revision"), fb.get("revision")))
    for key in ("revision",):
        fa.pop(key, None)
        fb.pop(key, None)
    changes += _compare("--", fa, fb)
    changes += _compare("nodeSelector ", old_spec.get("nodeSelector") or {}, new_spec.get("nodeSelector") or {})
    if (old_spec.get("affinity") or None) != (new_spec.get("affinity") or None):
        changes.append(Change("affinity", old_spec.get("affinity"), new_spec.get("affinity")))
    if (old_spec.get("tolerations") or None) != (new_spec.get("tolerations") or None):
        changes.append(Change("tolerations", old_spec.get("tolerations"), new_spec.get("tolerations")))
    ra, rb = ca.get("resources") or {}, cb.get("resources") or {}
    for part in ("limits", "requests"):
        changes += _compare(f"resources.{part} ", ra.get(part) or {}, rb.get(part) or {})
    changes += _compare("env ", _env(ca), _env(cb))
    return changes


def describe(changes: list[Change]) -> list[str]:
    """One line per change, e.g. ``--max-model-len: 16384 → (absent)``."""
    def show(v: Any) -> str:
        return "(absent)" if v is None else v if isinstance(v, str) else yaml.safe_dump(v, default_flow_style=True,
                                                                                         width=10**6).strip()
    return [f"{c.field}: {show(c.old)} → {show(c.new)}" for c in changes]


class _Dumper(yaml.SafeDumper):
    """Block-style YAML whose strings holding a control character (a newline, ESC, U+2028 ...) are written
    double-quoted with escapes (``"llama\\nSuccess"``): PyYAML's default folds such a value over several lines,
    and each became a diff line of its own that could pass for the tool's output (hostile review 16, G9). A value
    holding ``-->`` too, written ``--\\x3e`` (a YAML escape) as every printed line writes it (``kube.printable``).
    The value reads back the same; every line of the diff is one line of the YAML's own structure."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    plain = value.isprintable() and HEADER not in value
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=None if plain else '"')


_Dumper.add_representer(str, _str)


def template_yaml(template: Mapping[str, Any]) -> str:
    """A stable YAML rendering (sorted keys, block style) for diffs; a value's control characters escaped."""
    text = yaml.dump(dict(template), Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=10**6)
    return text.replace(HEADER, HEADER_ESCAPED)  # only inside the double-quoted values above: valid YAML escapes


def unified_template_diff(old: Mapping[str, Any], new: Mapping[str, Any], old_label: str = "current",
                          new_label: str = "planned", context: int = 3) -> str:
    """``diff -u`` of the two templates as YAML; empty string when they are identical."""
    lines = difflib.unified_diff(template_yaml(old).splitlines(keepends=True),
                                 template_yaml(new).splitlines(keepends=True),
                                 fromfile=old_label, tofile=new_label, n=context)
    return "".join(lines)
