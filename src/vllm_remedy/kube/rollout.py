"""``kubectl rollout undo`` in pure Python, plus our guard and the rank order of rollback candidates.

Which revision to restore is never decided by position here: ``choose_rollback`` ranks candidates (marked
known-good, pinned in policy, the rest; newest first in each) and asks the caller's ``reject`` — the
evidence, ``remedies.evidence`` — about each, keeping every skipped one with its reason.

kubectl (``polymorphichelpers/rollback.go``) picks the ReplicaSet, refuses paused Deployments, skips
when the template already matches, and otherwise sends a two-op JSON patch: replace ``/spec/template``
with the ReplicaSet's template minus ``pod-template-hash`` and replace ``/metadata/annotations`` with
the Deployment's own bookkeeping annotations plus the ReplicaSet's others. We build that patch
byte-for-byte in content, then add a ``test`` on resourceVersion (a concurrent edit is never
overwritten), our audit annotations and change-cause — and never copy a known-good mark onto the
Deployment (the controller would stamp it on every future ReplicaSet), nor a toggle record: the
controller copied the Deployment's toggle annotations onto the ReplicaSet while the toggle was on, and
kubectl would bring them back (an expired or garbled toggle resurrected). A toggle belongs to the
template that had it; the rollback replaces that template.

Where we part from kubectl: its ``replace`` of ``/metadata/annotations`` drops every Deployment annotation the
ReplicaSet does not carry — an engineer's note, Argo CD's tracking id, a reloader switch added since that
revision ran — unannounced. We change only the annotations kubectl's undo sets (the ReplicaSet's copies), keep
the Deployment's others, and :func:`annotation_changes` lists every change for the diff the operator approves.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, action_annotations, is_known_good, toggle_flags_on
from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.history import (
    CHANGE_CAUSE,
    DESIRED_REPLICAS,
    HASH_LABEL,
    LAST_APPLIED,
    MAX_REPLICAS,
    REVISION,
    REVISION_HISTORY,
    ROLLBACK_TO,
    Revision,
    all_replicasets,
    revision_of,
    same_pod_spec,
    template_of,
    templates_equal,
)
from vllm_remedy.vllm.cmdline import find_server

#: Annotations the Deployment keeps on undo (kubectl's ``annotationsToSkip``).
KEEP_ON_DEPLOYMENT = (LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO)

RULE_MARK = "known-good mark"
RULE_POLICY = "pinned in policy"
RULE_NEWEST = "newest earlier revision with no evidence against it"
RULE_DIFFERENT = RULE_NEWEST  # the old name: the rule never was "merely different"
RULE_FORCED = "operator override (host data revision)"
#: A revision the policy disagrees with (its GPU, its predicted concurrency), taken because no other survives.
RULE_CONFLICT = "no earlier revision the policy allows survives; the newest with no evidence against it"


def undo_target(deployment: Mapping[str, Any], replicasets: Iterable[Mapping[str, Any]],
                to_revision: int = 0) -> dict[str, Any]:
    """The ReplicaSet ``kubectl rollout undo [--to-revision=N]`` restores (``deploymentRevision``)."""
    name = deployment["metadata"]["name"]
    if to_revision < 0:
        raise RolloutError(f"unable to find specified revision {to_revision} in history")
    old, new = all_replicasets(deployment, replicasets)
    latest: tuple[int, dict[str, Any] | None] = (-1, None)
    previous: tuple[int, dict[str, Any] | None] = (-1, None)
    for rs in [*old, *([new] if new else [])]:
        number = revision_of(rs)
        if number is None:
            continue
        if to_revision == 0:
            if latest[0] < number:
                previous, latest = latest, (number, rs)
            elif previous[0] < number:
                previous = (number, rs)
        elif number == to_revision:
            return rs
    if to_revision > 0:
        raise RolloutError(f"unable to find specified revision {to_revision} in history")
    if previous[1] is None:
        raise RolloutError(f'no rollout history found for deployment "{name}"')
    return previous[1]


def kubectl_undo_patch(deployment: Mapping[str, Any], replicaset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Exactly the JSON patch kubectl sends (content, not key order)."""
    template = copy.deepcopy(template_of(replicaset))
    labels = (template.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    notes = kubectl_annotations(deployment, (replicaset.get("metadata") or {}).get("annotations") or {})
    return [{"op": "replace", "path": "/spec/template", "value": template},
            {"op": "replace", "path": "/metadata/annotations", "value": dict(sorted(notes.items()))}]


def kubectl_annotations(deployment: Mapping[str, Any], replicaset_notes: Mapping[str, str]) -> dict[str, str]:
    """The annotations kubectl's undo gives the Deployment: its bookkeeping (``annotationsToSkip``) kept, every other
    annotation of the ReplicaSet copied, and nothing else."""
    own = (deployment.get("metadata") or {}).get("annotations") or {}
    notes = {k: own[k] for k in KEEP_ON_DEPLOYMENT if k in own}
    notes.update({k: v for k, v in replicaset_notes.items() if k not in KEEP_ON_DEPLOYMENT})
    return notes


def resource_version_test(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The guard op: the write applies only to the exact object version that was read."""
    version = (obj.get("metadata") or {}).get("resourceVersion")
    if not version:
        raise UserError(f"{obj.get('kind', 'object')} {obj.get('metadata', {}).get('name')}: no "
                        "metadata.resourceVersion to guard the write with (was it read from the API?)")
    return {"op": "test", "path": "/metadata/resourceVersion", "value": version}


def rollback_annotations(own: Mapping[str, str], kubectl_notes: Mapping[str, str], keys: Keys) -> dict[str, str]:
    """The Deployment's annotations after our undo: its own, with the ones kubectl's undo sets (``kubectl_notes``:
    the kept bookkeeping plus the ReplicaSet's copies) over them — kubectl's value wherever it sets one, the
    Deployment's others kept rather than dropped — and no known-good mark, crash record or toggle record at all
    (ReplicaSet-only keys; a toggle belongs to the template the rollback replaces)."""
    merged = {**own, **kubectl_notes}
    return {k: v for k, v in merged.items() if k not in keys.mark_keys() and not keys.is_toggle_key(k)}


def audit_keys(keys: Keys) -> tuple[str, ...]:
    """Keys whose change every write makes (change-cause, last action, the change id), left out of diffs."""
    return (CHANGE_CAUSE, keys.last_action, keys.last_reason, keys.last_action_at, keys.last_action_template,
            keys.change_id)


def annotation_changes(deployment: Mapping[str, Any], replicaset_notes: Mapping[str, str], keys: Keys | None = None
                       ) -> list[tuple[str, str | None, str | None]]:
    """(key, value now, value after) for every Deployment annotation our undo to the ReplicaSet carrying
    ``replicaset_notes`` changes, sorted by key; None: absent. Our audit annotations are left out (every write sets
    them); the kept bookkeeping never changes."""
    keys = keys or Keys()
    own = dict((deployment.get("metadata") or {}).get("annotations") or {})
    after = rollback_annotations(own, kubectl_annotations(deployment, replicaset_notes), keys)
    skip = set(audit_keys(keys))
    return [(k, own.get(k), after.get(k)) for k in sorted(set(own) | set(after))
            if k not in skip and own.get(k) != after.get(k)]


@dataclass(frozen=True)
class UndoPlan:
    """What undo will do; ``patch`` is empty when kubectl would skip (``message`` says why)."""

    namespace: str
    name: str
    revision: int
    replicaset: str
    skipped: bool
    message: str
    kubectl_patch: list[dict[str, Any]]
    patch: list[dict[str, Any]]
    template: dict[str, Any]


def plan_undo(deployment: Mapping[str, Any], replicasets: Sequence[Mapping[str, Any]], to_revision: int = 0, *,
              keys: Keys | None = None, action: str = "restore", reason: str = "", at: float | None = None
              ) -> UndoPlan:
    """kubectl's undo decision and patch, plus the guarded patch we send (test + audit annotations)."""
    keys = keys or Keys()
    meta = deployment["metadata"]
    target = undo_target(deployment, replicasets, to_revision)
    number = revision_of(target) or 0
    if (deployment.get("spec") or {}).get("paused"):
        raise RolloutError("you cannot rollback a paused deployment; resume it first with "
                           "'kubectl rollout resume' and try again")  # kubectl 1.32's words
    common = {"namespace": meta.get("namespace", ""), "name": meta["name"], "revision": number,
              "replicaset": target["metadata"]["name"]}
    if templates_equal(template_of(target), template_of(deployment)):
        return UndoPlan(**common, skipped=True,
                        message=f"skipped rollback (current template already matches revision {to_revision})",
                        kubectl_patch=[], patch=[], template=copy.deepcopy(template_of(deployment)))
    ops = kubectl_undo_patch(deployment, target)
    notes = rollback_annotations(meta.get("annotations") or {}, ops[1]["value"], keys)
    if at is not None:
        why = reason or f"roll back to revision {number}"
        notes.update(action_annotations(keys, action, why, at, template=ops[0]["value"]))
    has_notes = bool(meta.get("annotations"))
    guarded = [resource_version_test(deployment), ops[0],
               {"op": "replace" if has_notes else "add", "path": "/metadata/annotations",
                "value": dict(sorted(notes.items()))}]
    return UndoPlan(**common, skipped=False, message="rolled back", kubectl_patch=ops, patch=guarded,
                    template=ops[0]["value"])


# ---- which revision to restore -------------------------------------------------------------

class KnownGoodUnit(Protocol):
    """What a policy's known-good unit offers (``vllm_remedy.policy.KnownGoodUnit`` fits)."""

    @property
    def flags(self) -> Mapping[str, str]: ...

    def matches(self, image: str, flags: Mapping[str, str], model_revision: str | None = None) -> bool: ...

    def serves(self, model: str | None) -> bool: ...


def policy_pin(units: Sequence[KnownGoodUnit], container: str | None = None) -> Callable[[Revision], bool]:
    """A predicate: does a revision's vLLM server match one of the policy's known-good units (model, image, model
    revision when the unit pins one, and the unit's flags)?

    A revision running a timed toggle's flag (``--enforce-eager``) matches only a unit that names that flag: the
    toggle's expiry lives on the Deployment and a rollback never copies it back, so restoring that revision would
    make a temporary measure permanent and invisible to expiry. Refused rather than stripped: the revision the
    toggle was set on - the unit itself, exactly as it ran - is in the history too, and the pin finds it next.
    """
    def pinned(rev: Revision) -> bool:
        try:
            server = find_server((rev.template.get("spec") or {}), container)
        except UserError:
            return False
        temporary = toggle_flags_on(server.flags)
        # the unit's model too: the same image and flags serving another model are not that unit (hostile16 G10)
        return any(u.matches(server.image, server.flags, server.flags.get("revision")) and u.serves(server.model)
                   and all(f in u.flags for f in temporary) for u in units)

    return pinned


@dataclass(frozen=True)
class RollbackChoice:
    """The revision to restore, the rule that chose it, and every newer candidate skipped (with why)."""

    revision: Revision
    rule: str
    detail: str
    skipped: tuple[str, ...] = ()


class NoRollbackTarget(RolloutError):
    """No earlier revision survives the evidence; ``skipped`` says why each one was passed over."""

    def __init__(self, message: str, skipped: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.skipped = tuple(skipped)


#: A revision → why it must not be restored (None: nothing known against it).
Reject = Callable[[Revision], "str | None"]


def earlier_revisions(history: Sequence[Revision], current: int) -> list[Revision]:
    """Revisions below ``current`` whose pods differ from the current ones, newest first (restoring the same
    template, or one that differs only by ``kubectl rollout restart``'s stamp, would only restart the pods)."""
    now = next((r for r in history if r.number == current), None)
    return [r for r in sorted(history, key=lambda r: r.number, reverse=True) if r.number < current
            and (now is None or not same_pod_spec(r.template, now.template))]


def choose_rollback(history: Sequence[Revision], current: int, *, keys: Keys | None = None,
                    pinned: Callable[[Revision], bool] | None = None, reject: Reject | None = None,
                    conflicts: Reject | None = None) -> RollbackChoice:
    """The first earlier revision nothing speaks against, in rank order: marked known-good by ``confirm``, then
    pinned in policy, then the rest — each group newest first.

    ``reject`` is the evidence (a crash seen on its ReplicaSet, a predicted failure on the GPU its pods would
    get): a rejected revision is skipped whatever its rank, and the reason kept for the output. Position alone
    never chooses: with every candidate rejected this raises :class:`NoRollbackTarget` carrying all reasons.

    ``conflicts`` is what the policy says against a revision once restored (a GPU product it does not allow, a
    predicted concurrency below its peak: ``remedies.restore_policy``): such a revision ranks below every one
    without, its conflict named among the skipped; taken only when no other survives, under :data:`RULE_CONFLICT`
    (never "pinned in policy": the policy disagrees).
    """
    keys = keys or Keys()
    earlier = earlier_revisions(history, current)
    marked = [r for r in earlier if is_known_good(keys, {"metadata": {"annotations": r.annotations}})]
    pins = [r for r in earlier if pinned is not None and pinned(r) and r not in marked]
    rest = [r for r in earlier if r not in marked and r not in pins]
    skipped: list[tuple[int, str]] = []  # (the order it was weighed in, the line)
    demoted: list[tuple[int, Revision, str, str]] = []
    ranked = [(rev, rule) for group, rule in ((marked, RULE_MARK), (pins, RULE_POLICY), (rest, RULE_NEWEST))
              for rev in group]
    for order, (rev, rule) in enumerate(ranked):
        why = reject(rev) if reject is not None else None
        if why:
            skipped.append((order, f"revision {rev.number} ({rev.replicaset}): {why}"))
            continue
        conflict = conflicts(rev) if conflicts is not None else None
        if conflict:
            demoted.append((order, rev, rule, conflict))
            continue
        return RollbackChoice(rev, rule, f"revision {rev.number} ({rev.replicaset}) {_detail(rule, rev, keys)}",
                              _in_rank_order(skipped, demoted))
    if demoted:
        _, rev, rule, conflict = demoted[0]
        detail = (f"revision {rev.number} ({rev.replicaset}) {_detail(rule, rev, keys)}; against the policy: "
                  f"{conflict}")
        return RollbackChoice(rev, RULE_CONFLICT, detail, _in_rank_order(skipped, demoted[1:]))
    if not earlier:
        raise NoRollbackTarget(f"no earlier revision to roll back to (current revision {current})")
    raise NoRollbackTarget(f"no earlier revision is predicted to serve ({len(skipped)} skipped)",
                           [line for _, line in skipped])


def _detail(rule: str, rev: Revision, keys: Keys) -> str:
    if rule == RULE_MARK:
        return f"marked known-good at {rev.annotations.get(keys.known_good, '')}"
    if rule == RULE_POLICY:
        return "matches a known-good unit in the policy"
    return "no known-good mark or policy pin to prefer; nothing recorded or predicted against it"


def _in_rank_order(skipped: list[tuple[int, str]], demoted: Sequence[tuple[int, Revision, str, str]]
                   ) -> tuple[str, ...]:
    """The skipped lines and one for each revision passed over for its conflict with the policy, in the order each
    was weighed in (rank order)."""
    passed = [(i, f"revision {r.number} ({r.replicaset}): ranked below the revisions the policy allows ({rule}): "
                  f"{conflict}") for i, r, rule, conflict in demoted]
    return tuple(line for _, line in sorted([*skipped, *passed]))
