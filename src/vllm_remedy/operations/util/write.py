"""Guarded writes from FunctionCommands: what the operator saw is what the write is tested against.

pyinfra detects changes (prepare) and executes them later, re-running each operation body from
scratch. A write must not silently apply to an object someone changed in between, nor may our own
earlier write in the same run look like "someone else". So per (run, host, object) we remember:

* the object as first read during change detection (what the diff the operator approved was built on) or,
  with ``-y`` (no detection), as the operation body read it at execute;
* the answer of our own last write to it in this run.

At execute the callback re-reads the object. If its spec/metadata still match the remembered one
(status, managedFields and the controller's revision bookkeeping may move), the write is planned on the
fresh object; otherwise the JSON patch carries a ``test`` on the *remembered* resourceVersion, the API
server rejects it (422/409) and nothing is overwritten: the host fails with one line.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
from pyinfra import logger
from pyinfra.api import FunctionCommand
from pyinfra.context import ctx_host, ctx_state

from vllm_remedy import gitops
from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, action_annotations, template_digest
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.history import REVISION
from vllm_remedy.kube.patch import apply_ops, json_patch, new_change_id, object_name, send_patch, with_change_id
from vllm_remedy.operations.util import planned, refusal
from vllm_remedy.operations.util.context import K8sHost, k8s_host
from vllm_remedy.operations.util.show import note, show
from vllm_remedy.remedies.predict import Prediction

#: (client, basis object, cluster time) → guarded JSON patch ops ([] = nothing to do).
BuildOps = Callable[[KubeClient, dict[str, Any], float], list[dict[str, Any]]]

_SEEN: dict[tuple[int, str, str], dict[str, Any]] = {}
_OWN: dict[tuple[int, str, str], dict[str, Any]] = {}
#: Keys observed while detecting changes: their first read stays the basis through execute.
_DETECTED: set[tuple[int, str, str]] = set()
#: Metadata the API server or a controller changes without anyone editing the object.
_VOLATILE_META = ("resourceVersion", "managedFields", "generation")
_CONTROLLER_NOTES = "deployment.kubernetes.io/"


def run_id(state: Any, host: Any) -> int:
    """One id per pyinfra run: the real State (inside an operation body ``state`` is a context proxy)."""
    return id(getattr(host, "state", None) or state)


def _key(state: Any, host: Any, path: str) -> tuple[int, str, str]:
    return (run_id(state, host), str(host.name), path)


def observe(state: Any, host: Any, path: str, obj: Mapping[str, Any]) -> None:
    """Remember ``obj`` as the object a plan was built on: what the write is tested against.

    While detecting changes the first read per run, host and object wins (the diff the operator approved).
    With ``-y`` pyinfra detects nothing: the body runs once, at execute, so the object it just planned on is
    the basis — a colleague's edit landing between that read and the write is refused, not overwritten.
    """
    key = _key(state, host, path)
    if not state.is_executing:
        if key not in _SEEN:
            _SEEN[key] = copy.deepcopy(dict(obj))
            _DETECTED.add(key)
    elif key not in _DETECTED:
        _SEEN[key] = copy.deepcopy(dict(obj))
        _OWN.pop(key, None)  # planned after our last write: this read is the newer knowledge


def material(obj: Mapping[str, Any]) -> tuple[Any, Any]:
    """The parts of an object only an edit changes: spec (or the whole body) and metadata minus bookkeeping.

    A ReplicaSet's replica count and ``deployment.kubernetes.io/*`` annotations are its Deployment controller's
    (a scale, a rollout), not an edit of the revision our marks and records are about."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_META}
    notes = dict(meta.get("annotations") or {})
    notes.pop(REVISION, None)
    body = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    if obj.get("kind") == "ReplicaSet":
        notes = {k: v for k, v in notes.items() if not k.startswith(_CONTROLLER_NOTES)}
        body["spec"] = {k: v for k, v in (body.get("spec") or {}).items() if k != "replicas"}
    meta["annotations"] = notes
    return body, meta


def changed_since(state: Any, host: Any, path: str, fresh: Mapping[str, Any]) -> dict[str, Any] | None:
    """The object as this run last knew it (our last write, else our first read) when ``fresh`` differs from
    it materially - someone else edited it - else None."""
    key = _key(state, host, path)
    prior = _OWN.get(key) or _SEEN.get(key)
    return None if prior is None or material(prior) == material(fresh) else prior


def wrote_in_this_run(state: Any, host: Any, path: str) -> bool:
    """Whether this run has already written the object at ``path`` (a wait after it is not a resumed one)."""
    return _key(state, host, path) in _OWN


def written_in_this_run(state: Any, host: Any) -> list[str]:
    """The objects this run has written for ``host`` (``replicaset llm/x``), in write order: so a refusal that says
    "nothing was written" says it only when true."""
    run, name = run_id(state, host), str(host.name)
    return [object_name(path) for (r, h, path) in _OWN if (r, h) == (run, name)]


def basis_for(state: Any, host: Any, path: str, fresh: dict[str, Any]) -> dict[str, Any]:
    """The object a write must be tested against: ``fresh`` unless it changed (materially) since we saw it."""
    return changed_since(state, host, path, fresh) or fresh


def forget(state: Any) -> None:
    """Drop what one run remembered (the Python API reuses the process; the CLI exits)."""
    for store in (_SEEN, _OWN):
        for key in [k for k in store if k[0] == id(state)]:
            del store[key]
    _DETECTED.difference_update([k for k in _DETECTED if k[0] == id(state)])
    planned.forget(id(state))
    refusal.forget(id(state))


def run_write(state: Any, host: Any, path: str, build: BuildOps, label: str, required: bool = True) -> bool:
    """FunctionCommand body: read, pick the basis, build the guarded patch, send it; False + one line on failure
    (``required=False``: a warning line and True — a write that must never block the run, such as a record)."""
    try:
        ctx = k8s_host(host)
        client = ctx.client.live()  # the plan read the run's snapshot; the write tests the object as it is now
        fresh = client.request("GET", path)
        basis = basis_for(state, host, path, fresh)
        ops = build(client, basis, client.server_time())
        if not ops:
            note(host, f"{label}: already in place, nothing written")
            return True
        said = gitops_gate(state, host, ctx, basis, ops)
        if not said.write:
            return _failed(host, label, f"refused: {said.refusal}", required, labelled=False)
        change = (ctx.keys.change_id, new_change_id())
        try:
            answer = send_patch(client, path, with_change_id(basis, ops, *change), change=change, basis=basis,
                                grace=ctx.policy.writes.unanswered_grace.total_seconds())
        finally:  # even a write whose answer was lost may have landed: later plans read afresh
            ctx.client.renew(path)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        return _failed(host, label, f"the planned patch does not apply to the object it was planned on: {exc}",
                       required)
    except UserError as exc:  # KubeError and ConflictError included: one line, nothing half-done
        return _failed(host, label, str(exc), required)
    _OWN[_key(state, host, path)] = copy.deepcopy(answer)
    version = (answer.get("metadata") or {}).get("resourceVersion")
    note(host, f"{label}: written (resourceVersion {version})")
    return True


def _failed(host: Any, label: str, why: str, required: bool, *, labelled: bool = True) -> bool:
    """One error line and False, or - for a write that must not block the run - one warning line and True."""
    if required:
        note(host, f"{label}: {why}" if labelled else why, error=True)
        return False
    logger.warning(f"{host.print_prefix}warning: {label}: not recorded ({' '.join(why.split())})")
    return True


def write_command(path: str, build: BuildOps, label: str, *, required: bool = True) -> FunctionCommand:
    """A FunctionCommand applying ``build``'s guarded JSON patch to the object at API ``path``.

    Called inside an operation body for an object ``observe``d while detecting changes, it also applies
    the policy's GitOps stance there (so ``--dry`` shows it): ``refuse`` yields a failing command instead;
    and it leaves the planned result for the next operations of the run to plan on (:mod:`.planned`).
    """
    if ctx_state.isset() and ctx_host.isset():
        state, host = ctx_state.get(), ctx_host.get()
        seen = _SEEN.get(_key(state, host, path))
        if seen is not None:
            basis = planned.current(host, path, seen)
            try:
                ctx = k8s_host(host)
                ops = build(ctx.client, copy.deepcopy(basis), time.time())
                said = gitops_gate(state, host, ctx, basis, ops)
                if said.write:
                    planned.record(host, path, basis, apply_ops(basis, [op for op in ops if op.get("op") != "test"]))
            except (UserError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
                said = gitops.Verdict(True, ())  # the write itself reports a broken plan, at execute
            if not said.write and required:
                refusal.record(state, host, said.refusal or "refused")  # the host's later operations are not planned
                return FunctionCommand(refused, (f"refused: {said.refusal}", said.shown), {})
    return FunctionCommand(run_write, (path, build, label, required), {})


def gitops_gate(state: Any, host: Any, ctx: K8sHost, basis: Mapping[str, Any], ops: list[dict[str, Any]]
                ) -> gitops.Verdict:
    """The policy's stance on writing ``ops`` to ``basis`` when Argo CD / Flux / Helm / an owner controls it; printed
    once per op."""
    owner = gitops.detect(basis)
    if owner is None or not ops:
        return gitops.Verdict(True, ())
    desired = apply_ops(basis, [op for op in ops if op.get("op") != "test"])
    # every kind: a Deployment's or StatefulSet's pod template gives the flag edit, any other spec its changed paths
    hint = gitops.hint_for(owner, basis, desired, ctx.container, f"{ctx.deployment}.yaml")
    said = gitops.verdict(ctx.policy.gitops, owner, f"{(basis.get('kind') or 'object').lower()} "
                          f"{ctx.namespace}/{(basis.get('metadata') or {}).get('name')}", hint)
    head = [f"refused: {said.refusal}"] if said.refusal else []
    shown = show(state, host, [*head, *said.lines], topic="gitops")
    return dataclasses.replace(said, shown=shown)


def fail(state: Any, host: Any, message: str) -> bool:
    """FunctionCommand body that fails the host with ``message`` (a refusal found while planning)."""
    note(host, message, error=True)
    return False


def refused(state: Any, host: Any, message: str, shown: bool = False) -> bool:
    """FunctionCommand body failing the host on a write the GitOps stance refuses; ``shown``: the plan has just
    printed the refusal with its hint (a ``-y`` run), so it is not printed twice. ``keeps_its_plan`` counts no
    change for it while detecting changes."""
    if not shown:
        note(host, message, error=True)
    return False


def refuse(state: Any, host: Any, message: str, head: str = "refused") -> Iterator[FunctionCommand]:
    """Show ``message`` while detecting changes and fail the host at execute (bodies must not raise); a ``-y`` run,
    which detects nothing, prints it once, as the failure — the same ``refused:`` line, so a CronJob's log and a
    grep for refusals read a ``-y`` run as they read ``--dry``.

    While detecting nothing is yielded: a refusal is no change (``-y`` fails there, changing nothing), so pyinfra
    counts none for it, and :mod:`.refusal` keeps the host's later operations from being planned. ``head``: the
    line's first word when the run stops for another reason than a refusal (``no prediction``)."""
    line = f"{head}: {' '.join(message.split())}"
    if not state.is_executing:
        show(state, host, [line], topic="refuse")
        refusal.record(state, host, message)
        return
    yield FunctionCommand(fail, (line,), {})


@dataclass(frozen=True)
class Change:
    """What one write makes true of an object: the single description every operation's patch is built from.

    + spec: top-level ``spec`` fields replaced whole (``template``, ``strategy``, an HTTPRoute's ``rules``)
    + annotations: metadata annotations to set, or to remove where the value is None
    + audit: ``(action, reason)`` → our last-action annotations and ``kubernetes.io/change-cause``
    + stamp: annotations that depend on the write's own cluster time (a toggle's expiry counts from the
      write, not from the prompt); the object already carries the change when each of their keys is present
    """

    spec: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, str | None] = field(default_factory=dict)
    audit: tuple[str, str] | None = None
    stamp: Callable[[float], Mapping[str, str]] | None = None


def change_ops(change: Change, keys: Keys, client: KubeClient, basis: dict[str, Any], at: float
               ) -> list[dict[str, Any]]:
    """The one patch builder: guarded JSON patch ops turning ``basis`` into one that carries ``change``;
    [] when it already does (the audit annotations alone never make a write)."""
    spec = basis.get("spec") or {}
    notes = dict((basis.get("metadata") or {}).get("annotations") or {})
    stamped = dict(change.stamp(at)) if change.stamp else {}
    if (all(spec.get(k) == v for k, v in change.spec.items())
            and all(notes.get(k) == v for k, v in change.annotations.items())
            and all(k in notes for k in stamped)):
        return []
    desired = copy.deepcopy(basis)
    desired.setdefault("spec", {}).update(copy.deepcopy(dict(change.spec)))
    if change.audit is not None:
        notes.update(action_annotations(keys, *change.audit, at))
    notes.update(stamped)
    for key, value in change.annotations.items():
        if value is None:
            notes.pop(key, None)
        else:
            notes[key] = value
    template = desired["spec"].get("template")
    ours = change.audit is not None or keys.last_action_at in stamped  # audited, or stamped at the write
    if template is not None and (ours or notes.get(keys.last_action_at) != (
            (basis.get("metadata") or {}).get("annotations") or {}).get(keys.last_action_at)):
        # this write is our last action — even in the same second as the one before it (a pin, then the budget's
        # change): the time alone would leave the earlier write's digest, and its template would read as not ours
        notes[keys.last_action_template] = template_digest(template)
    desired.setdefault("metadata", {})["annotations"] = notes
    return json_patch(basis, desired)


def change_command(ctx: K8sHost, path: str, change: Change, label: str) -> FunctionCommand:
    """``write_command`` for a :class:`Change` of the object at ``path`` (the usual way to yield a write)."""
    return write_command(path, functools.partial(change_ops, change, ctx.keys), label)


def change_lines(ctx: K8sHost, summary: str, before: Mapping[str, Any], after: Mapping[str, Any],
                 prediction: Prediction | None) -> list[str]:
    """What the operator reads: the summary, ``diff -u`` of the pod template, the prediction."""
    diff = unified_template_diff(before, after, f"{ctx.where} template (current)", f"{ctx.where} template (planned)")
    lines = [summary, *(diff.rstrip("\n").splitlines() if diff else ["(pod template unchanged)"])]
    if prediction is not None:
        lines.append(prediction.line())
    return lines


def template_change(state: Any, host: Any, deployment: Mapping[str, Any], template: Mapping[str, Any], *,
                    action: str, reason: str, summary: str, prediction: Prediction | None = None,
                    annotations: Mapping[str, str | None] | None = None) -> FunctionCommand | None:
    """Show the diff and prediction of giving the Deployment ``template`` (+ ``annotations``) and return the guarded
    write doing it; None when it already has them. Shown here, yielded by the caller: an operation making
    several writes shows them all before its first yield (``show``'s rule).

    ``deployment`` is the object the operation planned on (``context.deployment_object``). Every write
    also sets ``kubernetes.io/change-cause`` and the ``last-action`` annotations (``action``, ``reason``).
    """
    ctx = k8s_host(host)
    observe(state, host, ctx.deployment_path, deployment)
    extra = dict(annotations or {})
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    before = (deployment.get("spec") or {}).get("template") or {}
    if before == template and all(notes.get(k) == v for k, v in extra.items()):
        return None
    show(state, host, change_lines(ctx, summary, before, template, prediction))
    change = Change(spec={"template": copy.deepcopy(dict(template))}, annotations=extra, audit=(action, reason))
    return change_command(ctx, ctx.deployment_path, change, summary)


def set_template(state: Any, host: Any, deployment: Mapping[str, Any], template: Mapping[str, Any], *,
                 action: str, reason: str, summary: str, prediction: Prediction | None = None,
                 annotations: Mapping[str, str | None] | None = None) -> Iterator[FunctionCommand]:
    """Yield :func:`template_change`'s write, or nothing when the Deployment already has ``template``."""
    command = template_change(state, host, deployment, template, action=action, reason=reason, summary=summary,
                              prediction=prediction, annotations=annotations)
    if command is not None:
        yield command
