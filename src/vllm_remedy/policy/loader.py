"""Loading policies: one file, a directory of them, and picking the one that covers a Deployment.

The file-level work (YAML, ``extends``, blame) lives in :mod:`.files`, below both this module and
:mod:`.model`, so the loader and ``Policy.from_mapping`` share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import UserError
from .files import SUFFIXES, read_mapping
from .model import Policy

__all__ = ["SUFFIXES", "load_policies", "load_policy", "policy_for", "policy_from_mapping", "read_mapping"]


def policy_from_mapping(data: Mapping[str, Any], source: str, *, name: str | None = None) -> Policy:
    """Validate ``data`` (after resolving ``extends`` next to ``source``) into a Policy, or one-line UserError."""
    return Policy.from_mapping(data, source, name=name)


def load_policy(path: str | Path) -> Policy:
    """Read and validate one policy file; errors are one line naming the file and key path."""
    path = Path(path)
    return policy_from_mapping(read_mapping(path), str(path), name=path.stem)


def load_policies(directory: str | Path) -> dict[str, Policy]:
    """Every ``*.yaml``/``*.yml`` policy in a directory, by file stem (the name host data refers to)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"{directory}: no such policy directory")
    found: dict[str, Path] = {}
    for path in sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES and not p.name.startswith(".")):
        if path.stem in found:
            raise UserError(f"{path}: policy {path.stem!r} is also defined by {found[path.stem]}")
        found[path.stem] = path
    return {name: load_policy(path) for name, path in found.items()}


def policy_for(policies: Mapping[str, Policy], where: str, namespace: str, deployment: str, model: str | None,
               labels: Mapping[str, str] | None = None) -> Policy:
    """The policy of a directory that covers a Deployment: the one whose target names it most narrowly.

    One directory can then serve a whole namespace (an in-cluster CronJob, ``@k8s/<ctx>/<ns>``):
    llama-8b.yaml for llama-8b, default.yaml for a model no other policy names. A tie is an error.
    """
    covering = [(p.target.specificity, name, p) for name, p in policies.items()
                if p.target.matches(namespace, deployment, model, labels)]
    if not covering:
        raise UserError(f"{where}: no policy there covers deployment {namespace}/{deployment} (model {model}); "
                        "add one, or a default.yaml with no target")
    best = max(score for score, _, _ in covering)
    top = sorted(name for score, name, _ in covering if score == best)
    if len(top) > 1:
        raise UserError(f"{where}: policies {', '.join(top)} cover deployment {namespace}/{deployment} equally; "
                        "narrow one's target")
    return next(p for score, name, p in covering if name == top[0])
