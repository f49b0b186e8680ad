"""JSON patches (RFC 6902) built with ``jsonpatch`` from (old, new), always guarded by resourceVersion.

Why JSON patch and a ``test`` op: the write applies only to the exact object we planned against; if
anyone changed it since, the server rejects the whole patch (422) and nothing is overwritten. The
prior template stays recoverable from the ReplicaSet history.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch

from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import FIELD_MANAGER, JSON_PATCH, KubeClient
from vllm_remedy.kube.errors import ConflictError, KubeError
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


def with_change_id(basis: Mapping[str, Any], ops: Sequence[Mapping[str, Any]], key: str, change_id: str
                   ) -> list[dict[str, Any]]:
    """``ops`` plus one that stamps ``key: change_id`` on the object, still led by the resourceVersion test.

    Why: a PATCH whose answer was lost, or that timed out, may or may not have landed. Re-applying the ops
    to decide is wrong for ops that are not idempotent (``remove``, list ``add``); an id we wrote is proof.
    """
    desired = apply_ops(basis, _without_tests(ops))
    desired.setdefault("metadata", {}).setdefault("annotations", {})
    if desired["metadata"]["annotations"] is None:
        desired["metadata"]["annotations"] = {}
    desired["metadata"]["annotations"][key] = change_id
    return json_patch(basis, desired)


def carries(obj: Mapping[str, Any], key: str, change_id: str) -> bool:
    """Whether ``obj`` carries our change id: the write that stamped it landed."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(key) == change_id


def _spec_and_metadata(obj: Mapping[str, Any]) -> tuple[Any, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return obj.get("spec"), meta


def object_name(path: str) -> str:
    """``deployment llm/llama-8b`` for an API path, as kubectl names objects in its messages."""
    parts = path.strip("/").split("/")
    if len(parts) >= 4 and parts[-4] == "namespaces":
        return f"{parts[-2].removesuffix('s')} {parts[-3]}/{parts[-1]}"
    return path


def send_patch(client: KubeClient, path: str, ops: Sequence[Mapping[str, Any]], *, change: tuple[str, str],
               basis: Mapping[str, Any] | None = None, status_retries: int = 3) -> dict[str, Any]:
    """Send a guarded JSON patch that stamps the change id ``change = (key, id)``; the object as it now is.

    Success is decided by the object's end state, never by re-applying ops: after a conflict, a lost answer
    or a timeout we read the object, and our id on it means our write landed (a retried PATCH whose first
    attempt landed, then failed its ``test``). Without our id: if only ``status`` moved since ``basis`` (the
    controller writes status all through a rollout), the same patch is re-sent on the new resourceVersion;
    anything else is a real concurrent edit — ConflictError, and nothing was written (checked, not assumed).
    """
    key, change_id = change
    ops = [dict(op) for op in ops]
    where = f"{client.context}: {object_name(path)}"
    for attempt in range(status_retries + 1):
        try:
            return client.request("PATCH", path, query=[("fieldManager", FIELD_MANAGER)], body=ops,
                                  content_type=JSON_PATCH)
        except KubeError as exc:
            try:
                current = client.request("GET", path)
            except KubeError as again:
                raise KubeError(f"{where}: {exc}; then no answer to the read that would tell whether change "
                                f"{change_id} landed ({again}) — re-run: a landed change is recognised by its id "
                                f"({key})") from exc
            if carries(current, key, change_id):
                return current
            if not isinstance(exc, ConflictError):
                raise KubeError(f"{where}: {exc}; change {change_id} is not on the object: nothing was written",
                                status=exc.status) from exc
            status_only = basis is not None and _spec_and_metadata(basis) == _spec_and_metadata(current)
            if not status_only or attempt == status_retries:
                raise ConflictError(f"{where} changed since it was read (HTTP {exc.status}); nothing was written "
                                    "— re-run to plan against the new state", status=exc.status) from exc
            fresh = resource_version_test(current)
            ops = [fresh if op.get("op") == "test" and op.get("path") == fresh["path"] else op for op in ops]
    raise AssertionError("unreachable")  # pragma: no cover


def _without_tests(ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(op) for op in ops if op.get("op") != "test"]


def apply_deployment_patch(client: KubeClient, namespace: str, name: str, ops: Sequence[Mapping[str, Any]], *,
                           dry_run: bool = False, basis: Mapping[str, Any] | None = None,
                           status_retries: int = 3, keys: Keys | None = None) -> dict[str, Any]:
    """Send a guarded patch to a Deployment, stamped with a fresh change id (see ``send_patch``); returns the
    Deployment as the server answered, or as it is once our id is seen on it. A dry run stamps nothing."""
    if not ops:
        return client.get_deployment(namespace, name)
    if dry_run:
        return client.patch_deployment(namespace, name, [dict(op) for op in ops], dry_run=True)
    key = (keys or Keys()).change_id
    change_id = new_change_id()
    start = basis if basis is not None else client.get_deployment(namespace, name)
    stamped = with_change_id(start, ops, key, change_id)
    return send_patch(client, client.object_path(namespace, "deployments", name), stamped,
                      change=(key, change_id), basis=basis, status_retries=status_retries)


def new_change_id() -> str:
    """A change id: unique per write, short enough to read in ``kubectl describe``."""
    return uuid.uuid4().hex[:16]
