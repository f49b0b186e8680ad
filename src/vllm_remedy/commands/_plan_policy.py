"""``plan --policy``: a policy file, or a directory from which the workload's covering policy is picked as ``check``
picks it (``policy.policy_for``: the target naming it most narrowly), so plan and check judge one manifest by one
policy."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.policy import Policy, load_policies, load_policy, policy_for


def load(arg: str, namespace: str, name: str, model: str | None, labels: Mapping[str, str],
         manifest: bool) -> Policy:
    """The policy file, or the one of the directory covering the manifest's workload (a directory needs -f: without a
    workload nothing says which of its policies applies)."""
    path = Path(arg)
    if not path.is_dir():
        if not path.exists():
            raise UserError(f"{arg}: no such policy file or directory")
        return load_policy(path)
    if not manifest:
        raise UserError(f"--policy {arg}: a directory picks the policy covering a workload; pass -f MANIFEST, or "
                        "--policy with one policy file")
    return policy_for(load_policies(path), arg, namespace, name, model, labels)


def identity(doc: Any) -> tuple[str, dict[str, str]]:
    """The workload's name and labels (its metadata's, as ``check`` reads them) for ``policy_for``."""
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    return str(meta.get("name") or ""), {str(k): str(v) for k, v in labels.items()}
