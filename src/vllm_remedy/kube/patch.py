"""JSON patches (RFC 6902) built with ``jsonpatch`` from (old, new), always guarded by resourceVersion.

Why JSON patch and a ``test`` op: the write applies only to the exact object we planned against; if
anyone changed it since, the server rejects the whole patch (422) and nothing is overwritten. The
prior template stays recoverable from the ReplicaSet history.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import ConflictError
from vllm_remedy.kube.rollout import resource_version_test


def json_patch(old: Mapping[str, Any], new: Mapping[str, Any], *, guard: bool = True) -> list[dict[str, Any]]:
    """Ops turning ``old`` into ``new``, led by a resourceVersion test; [] when nothing differs."""
    ops = list(jsonpatch.make_patch(dict(old), dict(new)).patch)
    ops = [op for op in ops if not op["path"].startswith("/metadata/resourceVersion")]
    if not ops:
        return []
    return [resource_version_test(old), *ops] if guard else ops


def apply_ops(obj: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the server would store (without the resourceVersion/generation bumps)."""
    return jsonpatch.apply_patch(copy.deepcopy(dict(obj)), [dict(op) for op in ops])


def _without_tests(ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(op) for op in ops if op.get("op") != "test"]


def _spec_and_metadata(obj: Mapping[str, Any]) -> tuple[Any, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return obj.get("spec"), meta


def apply_deployment_patch(client: KubeClient, namespace: str, name: str, ops: Sequence[Mapping[str, Any]], *,
                           dry_run: bool = False, basis: Mapping[str, Any] | None = None,
                           status_retries: int = 3) -> dict[str, Any]:
    """Send a guarded patch; returns the Deployment as the server answered (or as it already is).

    On a conflict we re-read. If the object already carries every change the patch makes (a retried
    PATCH whose first attempt landed but whose answer was lost), that is success, not a false "concurrent
    edit". If only ``status`` moved since ``basis`` (the object the patch was planned against — the
    controller writes status all through a rollout), the same patch is re-sent with the new
    resourceVersion. Anything else is a real concurrent edit: ConflictError, nothing written.
    """
    if not ops:
        return client.get_deployment(namespace, name)
    ops = [dict(op) for op in ops]
    for attempt in range(status_retries + 1):
        try:
            return client.patch_deployment(namespace, name, ops, dry_run=dry_run)
        except ConflictError:
            current = client.get_deployment(namespace, name)
            try:
                converged = apply_ops(current, _without_tests(ops)) == current
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
                converged = False
            if converged and not dry_run:
                return current
            status_only = basis is not None and _spec_and_metadata(basis) == _spec_and_metadata(current)
            if not status_only or attempt == status_retries:
                raise
            fresh = resource_version_test(current)
            ops = [fresh if op.get("op") == "test" and op.get("path") == fresh["path"] else op for op in ops]
    raise AssertionError("unreachable")  # pragma: no cover
