"""Find and load a kubeconfig the way kubectl does, so `--context prod` means the same cluster in both.

kubectl's rules (clientcmd): ``--kubeconfig`` names exactly one file that must exist; otherwise
``KUBECONFIG`` is a path list (``:`` on POSIX) whose missing entries are skipped and whose files are
merged *first one wins* — for named clusters/contexts/users and for ``current-context``; otherwise
``~/.kube/config``; with no file at all inside a pod, the service-account (in-cluster) config. The
Python client's own merger lets the *last* file win ``current-context``, so we merge ourselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.yamlfile import load_text

IN_CLUSTER = "in-cluster"
_PATH_KEYS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


@dataclass(frozen=True)
class KubeconfigSource:
    """Where a configuration came from, for error messages that tell the user which file to look at."""

    paths: tuple[Path, ...]
    origin: str  # "--kubeconfig", "KUBECONFIG", "KUBECONFIG-missing", "default" or "in-cluster"

    def describe(self) -> str:
        """The file(s) or in-cluster account, to open an error line; says when KUBECONFIG or the default was missing."""
        if self.origin == IN_CLUSTER:
            return "in-cluster service account"
        joined = os.pathsep.join(str(p) for p in self.paths) or "~/.kube/config"
        note = {"KUBECONFIG": " (from KUBECONFIG)", "KUBECONFIG-missing": " (from KUBECONFIG; no such file)",
                "default": "" if self.paths else " (no such file)"}.get(self.origin, "")
        return f"kubeconfig {joined}{note}"


def resolve_paths(kubeconfig: str | os.PathLike[str] | None = None,
                  environ: Mapping[str, str] | None = None) -> KubeconfigSource:
    """The files kubectl would read, in precedence order (existing files only, except an explicit one)."""
    env = os.environ if environ is None else environ
    if kubeconfig:
        path = Path(os.path.expanduser(str(kubeconfig)))
        if not path.is_file():
            raise UserError(f"--kubeconfig {path}: no such file")
        return KubeconfigSource((path,), "--kubeconfig")
    listed = env.get("KUBECONFIG", "")
    if listed:
        seen: list[Path] = []
        for part in listed.split(os.pathsep):
            path = Path(os.path.expanduser(part)) if part else None
            if path is not None and path.is_file() and path not in seen:
                seen.append(path)
        return KubeconfigSource(tuple(seen), "KUBECONFIG") if seen else KubeconfigSource(
            tuple(Path(p) for p in listed.split(os.pathsep) if p), "KUBECONFIG-missing")
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    default = home / ".kube" / "config"
    return KubeconfigSource((default,) if default.is_file() else (), "default")


def _absolutize(entry: dict[str, Any], keys: tuple[str, ...], base: Path) -> None:
    """Relative file references resolve against the kubeconfig that holds them (kubectl does this)."""
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            entry[key] = str(base / value)
    exec_spec = entry.get("exec")
    if isinstance(exec_spec, dict):
        command = exec_spec.get("command")
        if isinstance(command, str) and "/" in command and not os.path.isabs(command):
            exec_spec["command"] = str(base / command)


def merge_kubeconfigs(documents: list[tuple[Path, Any]]) -> dict[str, Any]:
    """Merge parsed kubeconfig documents with kubectl's first-wins rule; pure apart from path joining."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [], "users": []}
    for path, doc in documents:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise UserError(f"kubeconfig {path}: expected a mapping at the top level")
        if doc.get("current-context") and "current-context" not in merged:
            merged["current-context"] = doc["current-context"]
        for section in ("clusters", "contexts", "users"):
            items = doc.get(section) or []
            if not isinstance(items, list):
                raise UserError(f"kubeconfig {path}: {section}: expected a list")
            known = {item.get("name") for item in merged[section]}
            for item in items:
                if not isinstance(item, dict) or item.get("name") in known:
                    continue
                item = yaml.safe_load(yaml.safe_dump(item))  # private deep copy
                inner = item.get(section[:-1])
                if isinstance(inner, dict):
                    _absolutize(inner, _PATH_KEYS.get(section, ()), path.parent)
                merged[section].append(item)
                known.add(item.get("name"))
    return merged


def load_merged(source: KubeconfigSource) -> dict[str, Any]:
    """Read and merge the files of ``source``; a YAML error names the file."""
    documents: list[tuple[Path, Any]] = []
    for path in source.paths:
        try:
            documents.append((path, load_text(path.read_text(), f"kubeconfig {path}")))
        except (OSError, yaml.YAMLError) as exc:
            raise UserError(f"kubeconfig {path}: cannot read: {exc}".replace("\n", " ")) from exc
    return merge_kubeconfigs(documents)


def pick_context(merged: Mapping[str, Any], context: str | None, source: KubeconfigSource) -> str:
    """The context kubectl would use: the named one (must exist), else current-context."""
    names = [c.get("name") for c in merged.get("contexts", []) if isinstance(c, dict)]
    available = ", ".join(str(n) for n in names) or "none"
    if context:
        if context not in names:
            raise UserError(f"{source.describe()}: context {context!r} not found (available: {available})")
        return context
    current = merged.get("current-context")
    if not current:
        raise UserError(f"{source.describe()}: no current-context set; name one with --context "
                        f"(available: {available})")
    if current not in names:
        raise UserError(f"{source.describe()}: current-context {current!r} is not defined "
                        f"(available: {available})")
    return str(current)


def in_cluster_available(environ: Mapping[str, str] | None = None) -> bool:
    """True inside a pod with a service account (what kubectl falls back to with no kubeconfig)."""
    env = os.environ if environ is None else environ
    return bool(env.get("KUBERNETES_SERVICE_HOST")) and Path(
        "/var/run/secrets/kubernetes.io/serviceaccount/token").is_file()
