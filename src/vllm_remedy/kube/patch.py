"""JSON patches (RFC 6902) built with ``jsonpatch`` from (old, new), always guarded by resourceVersion.

Why JSON patch and a ``test`` op: the write applies only to the exact object we planned against; if
anyone changed it since, the server rejects the whole patch (422) and nothing is overwritten. The
prior template stays recoverable from the ReplicaSet history.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
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
               basis: Mapping[str, Any] | None = None, status_retries: int = 3, grace: float = 30.0,
               sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Send a guarded JSON patch that stamps the change id ``change = (key, id)``; the object as it now is.

    Success is decided by the object's end state, never by re-applying ops. After a conflict we read the
    object: our id on it means our write landed (a retried PATCH whose first attempt landed, then failed its
    ``test``); without it, if only ``status`` moved since ``basis`` the same patch is re-sent on the new
    resourceVersion, anything else is a real concurrent edit — ConflictError, nothing was written. After a lost
    answer, a timeout or a 5xx the API server may still commit the PATCH later, so see :func:`settle`.
    """
    key, change_id = change
    ops = [dict(op) for op in ops]
    where = f"{client.context}: {object_name(path)}"
    for attempt in range(status_retries + 1):
        try:
            return client.request("PATCH", path, query=[("fieldManager", FIELD_MANAGER)], body=ops,
                                  content_type=JSON_PATCH)
        except ConflictError as exc:
            current = _read_after(client, path, where, exc, change)
            if carries(current, key, change_id):
                return current
            status_only = basis is not None and _spec_and_metadata(basis) == _spec_and_metadata(current)
            if not status_only or attempt == status_retries:
                raise ConflictError(f"{where} changed since it was read (HTTP {exc.status}); nothing was written "
                                    "— re-run to plan against the new state", status=exc.status) from exc
            fresh = resource_version_test(current)
            ops = [fresh if op.get("op") == "test" and op.get("path") == fresh["path"] else op for op in ops]
        except KubeError as exc:
            if 400 <= exc.status < 500 and exc.status != 429:  # an answer (forbidden, invalid): not applied
                if carries(current := _read_after(client, path, where, exc, change), key, change_id):
                    return current  # an earlier attempt, whose answer was lost, landed
                raise KubeError(f"{where}: {exc}; change {change_id} is not on the object: nothing was written",
                                status=exc.status) from exc
            return settle(client, path, exc, change, _tested_version(ops), grace=grace, sleep=sleep)
    raise AssertionError("unreachable")  # pragma: no cover


def _read_after(client: KubeClient, path: str, where: str, exc: KubeError, change: tuple[str, str]
                ) -> dict[str, Any]:
    try:
        return client.request("GET", path)
    except KubeError as again:
        raise KubeError(f"{where}: {exc}; then no answer to the read that would tell whether change "
                        f"{change[1]} landed ({again}) — re-run: a landed change is recognised by its id "
                        f"({change[0]})") from exc


def settle(client: KubeClient, path: str, exc: KubeError, change: tuple[str, str], tested: str | None, *,
           grace: float, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The outcome of a PATCH the API did not answer: poll the object for ``grace`` seconds (with back-off).

    Why poll: a kube-apiserver may answer 504 and commit the request afterwards. Our id on the object →
    written (the object as it now is). A resourceVersion other than the one our patch ``test``s, without our
    id → someone else wrote, and ours can never land (the ``test`` now fails): KubeError, nothing was written.
    Neither within ``grace`` → KubeError "outcome unknown", never "nothing was written".
    """
    key, change_id = change
    where = f"{client.context}: {object_name(path)}"
    deadline, pause = time.monotonic() + max(0.0, grace), 0.25
    while True:
        try:
            current: dict[str, Any] | None = client.request("GET", path)
        except KubeError:
            current = None  # the read met the outage too: keep watching until the grace period is over
        if current is not None and carries(current, key, change_id):
            return current
        moved = (current or {}).get("metadata", {}).get("resourceVersion")
        if current is not None and tested is not None and moved != tested:
            raise KubeError(f"{where}: {exc}; change {change_id} is not on the object, which moved on (resourceVersion "
                            f"{tested} → {moved}) so it can no longer land: nothing was written",
                            status=exc.status) from exc
        left = deadline - time.monotonic()
        if left <= 0:
            raise KubeError(f"{where}: {exc}; outcome unknown: the API did not answer; change {change_id} may still "
                            f"land — rerun to see (a landed change is recognised by its id, {key})",
                            status=exc.status) from exc
        sleep(min(pause, left))
        pause = min(pause * 2, 4.0)


def _tested_version(ops: Sequence[Mapping[str, Any]]) -> str | None:
    """The resourceVersion the patch's ``test`` op requires: the only version it can still be applied to."""
    for op in ops:
        if op.get("op") == "test" and op.get("path") == "/metadata/resourceVersion":
            return str(op.get("value"))
    return None


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
