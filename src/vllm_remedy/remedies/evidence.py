"""What is known against a revision, so restore never picks a rollback target by position alone (pure).

Three kinds of evidence, each with a reason the operator reads:

* **seen dying** — its pods were seen crash-looping or OOMKilled. Events expire after an hour, so whoever sees
  it (restore, diagnose, confirm, budget) records it on the revision's ReplicaSet: ``<prefix>crashed`` =
  ``{"failure": <class>, "at": <cluster time>}``. A known-good mark on that ReplicaSet is withdrawn at the
  same time (removed, with ``<prefix>known-good-withdrawn`` saying why and when). A mark written *after*
  the crash (confirm proved it again) outranks the older record.
* **in its pods' Events** — pods that crash-looped and were deleted since (a Recreate rollout, a colleague's
  edit) leave "Back-off restarting failed container" Events for the hour the API server keeps them
  (:func:`crashes_in_events`); whoever reads them records them like a crash seen live.
* **predicted to fail** — the memory model (``remedies.predict``) on the GPU its pods would get *now*: the
  product the template pins, else the smallest card among the schedulable GPU nodes its nodeSelector and
  tolerations allow; and no schedulable GPU node at all for it is a failure too (its pods would stay Pending).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import (
    TOGGLE_FLAGS,
    Keys,
    canonical_json,
    parse_rfc3339,
    rfc3339,
    stamp_seconds,
    toggle_flags_on,
)
from vllm_remedy.kube.gpus import gpu_product
from vllm_remedy.kube.health import FLAP_RESTARTS, node_health
from vllm_remedy.kube.history import Revision
from vllm_remedy.remedies.pin_gpu import tolerates
from vllm_remedy.remedies.predict import failed_prediction, pinned_gpu, predict_template
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.failures import failure_class
from vllm_remedy.vllm.outcomes import Failure


@dataclass(frozen=True)
class Crash:
    """A crash record read back from a ReplicaSet: the failure class and when it was seen (cluster time)."""

    failure: str
    at: float
    #: Where it was seen: "" for live pods (or a wait), ``events`` for gone pods' Events.
    seen: str = ""

    def text(self) -> str:
        """How the skip reason names it, e.g. ``seen crash-looping (max_len_exceeds_kv) at 2026-...Z``."""
        how = "died under load" if _under_load(self.failure) else "seen crash-looping"
        if self.at == math.inf:
            return f"{how} ({self.failure}): its crash record is unreadable, so no mark can outrank it"
        if self.seen == EVENTS:
            return f"seen crash-looping in its pods' Events (recorded at {rfc3339(self.at)}; the pods are gone)"
        return f"{how} ({self.failure}) at {rfc3339(self.at)}"


#: A kind's own verdict on whether a revision can start (why not, or None), asked next to the memory model's.
StartCheck = Callable[[Revision], str | None]
#: A crash record's ``seen`` when it was read from gone pods' Events, not from live pods.
EVENTS = "events"


def _under_load(kind: str) -> bool:
    return failure_class(kind).phase == "load"


def read_crash(keys: Keys, notes: Mapping[str, str]) -> Crash | None:
    """The crash record in ``notes``; a garbled one still counts (unknown failure, at an unknown time - read as
    "never superseded", so no known-good mark outranks it): whoever wrote it saw a crash or tampered with the
    evidence, and doubting it would send a rollback back onto a dying revision."""
    raw = notes.get(keys.crashed)
    if not raw:
        return None
    try:
        data = json.loads(raw)
        return Crash(str(data["failure"]), parse_rfc3339(str(data["at"]), keys.crashed), str(data.get("seen") or ""))
    except (ValueError, KeyError, TypeError, UserError):
        return Crash("unknown", math.inf)


def standing_crash(keys: Keys, notes: Mapping[str, str]) -> Crash | None:
    """The crash record unless a known-good mark written after it supersedes it (confirm proved it again)."""
    crash = read_crash(keys, notes)
    marked = stamp_seconds(notes.get(keys.known_good))
    if crash is None or (marked is not None and marked > crash.at):
        return None
    return crash


#: How far ahead of the cluster's clock a mark may be dated and still be believed (clock skew between writers).
MARK_SKEW = 300.0


def credible_marks(history: Mapping[str, Any], keys: Keys, now: float | None) -> tuple[dict[str, Any], list[str]]:
    """The RolloutHistory fact with every known-good mark dated after the cluster's now (beyond ``MARK_SKEW``) or
    not a time at all taken off, and a warning line for each (pure). A mark is data anyone with patch rights can
    write: one dated 2099 would outrank every crash record and rank first forever."""
    if now is None:
        return dict(history), []
    rows, warnings = [], []
    for row in history.get("revisions") or []:
        notes = row.get("annotations") or {}
        stamp = notes.get(keys.known_good)
        at = stamp_seconds(notes.get(keys.known_good)) if stamp else None
        if stamp and (at is None or at > now + MARK_SKEW):
            why = "is not a time" if at is None else "is later than the cluster's clock"
            warnings.append(f"warning: ignored the known-good mark on revision {row.get('number')} "
                            f"({row.get('replicaset')}): {stamp!r} {why}")
            row = {**row, "known_good": False,
                   "annotations": {k: v for k, v in notes.items() if k != keys.known_good}}
        rows.append(row)
    return {**history, "revisions": rows}, warnings


def main_failure(failures: Mapping[str, int]) -> str:
    """The most frequent failure class (ties: the name), what a record keeps."""
    return max(failures, key=lambda k: (failures[k], k)) if failures else "unknown"


def record_changes(keys: Keys, notes: Mapping[str, str], failures: Mapping[str, int], now: float,
                   seen: str = "") -> dict[str, str | None]:
    """Annotations to write on a ReplicaSet whose pods were just seen dying ({} when already recorded).

    Idempotent: a standing record is kept as first seen. A known-good mark is withdrawn (removed, the
    withdrawal recorded) — a revision that crash-loops or dies under load is no longer a rollback target.
    """
    if not failures:
        return {}
    kind = main_failure(failures)
    out: dict[str, str | None] = {}
    if standing_crash(keys, notes) is None:
        record = {"failure": kind, "at": rfc3339(now), **({"seen": seen} if seen else {})}
        out[keys.crashed] = canonical_json(record)
    if notes.get(keys.known_good):
        how = "died under load" if _under_load(kind) else "crash-looped"
        out[keys.known_good] = None
        out[keys.known_good_reason] = None
        out[keys.known_good_withdrawn] = canonical_json({
            "at": rfc3339(now), "marked_at": notes.get(keys.known_good),
            "reason": f"{how} ({kind}) after it was marked known-good"})
    return out


def serving_revisions(pods: Mapping[str, Any]) -> list[int]:
    """Revisions with live pods that are all Ready and never restarted: what the cluster shows of them right now
    outweighs Events saying they crash-loop."""
    by_revision: dict[int, list[Mapping[str, Any]]] = {}
    for pod in pods.get("pods") or []:
        if pod.get("revision") is not None and not pod.get("deleting"):
            by_revision.setdefault(int(pod["revision"]), []).append(pod)
    return sorted(n for n, live in by_revision.items()
                  if all(p.get("ready") and not int(p.get("restarts") or 0) for p in live))


def crashes_by_revision(pods: Mapping[str, Any], container: str | None = None) -> dict[int, dict[str, int]]:
    """Revision → failure class → pods, over every live pod crash-looping or OOMKilled (any revision)."""
    out: dict[int, dict[str, int]] = {}
    for pod in pods.get("pods") or []:
        if pod.get("deleting") or pod.get("revision") is None:
            continue
        for c in pod.get("containers") or []:
            if container is not None and c.get("name") != container:
                continue
            if not (c.get("crash_looping") or c.get("host_oom_killed")):
                continue
            kind = (c.get("startup") or {}).get("failure") or ("host_oom_killed" if c.get("host_oom_killed")
                                                                else "unknown")
            seen = out.setdefault(int(pod["revision"]), {})
            seen[kind] = seen.get(kind, 0) + 1
            break
    return out


#: kubelet's Event while a failed container waits out its back-off (a failed image pull is "Back-off pulling").
BACKOFF_RESTART = "Back-off restarting failed container"
#: Back-offs across one revision's pods that mean its restarts did not help (``kube.health``'s flapping count):
#: a single crash long recovered from is not evidence against a revision.
EVENT_BACKOFFS = FLAP_RESTARTS


@dataclass(frozen=True)
class EventCrash:
    """A revision's pods seen crash-looping in Events: back-offs counted, one pod named, the last one's time."""

    backoffs: int
    pod: str
    at: float

    def text(self) -> str:
        return (f"seen crash-looping in its pods' Events ({self.backoffs} back-offs restarting a failed container, "
                f"pod {self.pod}, last at {rfc3339(self.at)})")


def kubelets(event: Mapping[str, Any]) -> bool:
    """An Event as the kubelet writes a back-off: its component, and a message naming the very pod it is about
    (``… in pod <name>_<namespace>(<uid>)``). Events are objects many service accounts may create; this does not
    make a forgery impossible, but a stray or careless one does not condemn a revision."""
    pod, uid = str(event.get("pod") or ""), str(event.get("uid") or "")
    message = str(event.get("message") or "")
    return (event.get("component") == "kubelet" and event.get("reason") == "BackOff"
            and message.startswith(BACKOFF_RESTART) and bool(pod) and bool(uid)
            and f" in pod {pod}_" in message and message.endswith(f"({uid})"))


def crashes_in_events(rows: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]] | None,
                      now: float | None = None, serving: Sequence[int] = ()) -> dict[int, EventCrash]:
    """Revision → its crash loop as the Events tell it (the PodEvents fact's rows; a pod belongs to the ReplicaSet
    whose name is the pod's without its last ``-xxxxx``).

    Events are objects many service accounts may create, so they are weighed, not believed: only the kubelet's
    back-offs count (:func:`kubelets`); an Event dated after the cluster's clock (beyond ``MARK_SKEW``) or without
    a readable time does not; and a revision in ``serving`` — pods live, Ready and never restarted right now —
    is contradicted by what the cluster shows. Evidence only ever removes rollback targets: a forgery can make
    restore choose an older revision or hand over to the budget, never return to one seen dying.
    """
    by_rs = {str(r.get("replicaset")): r for r in rows if r.get("replicaset")}
    seen: dict[int, tuple[int, str, float]] = {}
    for event in events or []:
        if not kubelets(event):
            continue
        pod = str(event.get("pod") or "")
        row = by_rs.get(pod.rsplit("-", 1)[0])
        at = stamp_seconds(event.get("last")) or stamp_seconds(event.get("first"))
        if row is None or at is None or (now is not None and at > now + MARK_SKEW):
            continue
        number = int(row["number"])
        if number in serving:
            continue
        count, first_pod, last = seen.get(number, (0, pod, at))
        seen[number] = (count + max(int(event.get("count") or 1), 1), first_pod, max(last, at))
    return {n: EventCrash(c, pod, at) for n, (c, pod, at) in sorted(seen.items()) if c >= EVENT_BACKOFFS}


def standing_event_crash(keys: Keys, notes: Mapping[str, str], crash: EventCrash | None) -> EventCrash | None:
    """The Events' crash unless a known-good mark written after it supersedes it (confirm proved it since)."""
    marked = stamp_seconds(notes.get(keys.known_good))
    return None if crash is None or (marked is not None and marked > crash.at) else crash


# ---- where its pods would go now ----------------------------------------------------------------

def _selects(spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(k) != str(v) for k, v in selector.items()):
        return False
    taints = (node.get("spec") or {}).get("taints") or []
    return all(tolerates(t, spec.get("tolerations") or []) for t in taints)


@dataclass(frozen=True)
class Placement:
    """The GPU a template's pods would get now (``gpu`` None: unknown), or ``problem`` when they get none."""

    gpu: str | None
    problem: str = ""


def placement(spec: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]] | None) -> Placement:
    """Pinned product if any; else the smallest catalogued card among the schedulable GPU nodes the pod spec
    selects and tolerates. Without a node list (not readable), only the pin is known."""
    pinned = pinned_gpu(spec)
    if nodes is None:
        return Placement(pinned)
    gpu_nodes = [n for n in nodes if gpu_product((n.get("metadata") or {}).get("labels")).value]
    fitting = [n for n in gpu_nodes if _selects(spec, n)]
    usable = [n for n in fitting if (h := node_health(n)).ready and not h.cordoned]
    if not usable:
        what = ", ".join(f"{k}={v}" for k, v in sorted((spec.get("nodeSelector") or {}).items())) or "any GPU"
        why = (f"{len(fitting)} matching node(s), none schedulable (cordoned or not Ready)" if fitting
               else "no GPU node matches its nodeSelector and tolerations")
        return Placement(pinned, f"its pods would not schedule now ({what}: {why})")
    if pinned is not None:
        return Placement(pinned)
    cards = [(spec_.total_gib, value) for n in usable
             if (value := gpu_product((n.get("metadata") or {}).get("labels")).value)
             and (spec_ := catalog.find_gpu(value)) is not None]
    return Placement(min(cards)[1] if cards else None)


def against(rev: Revision, keys: Keys, container: str | None, nodes: Sequence[Mapping[str, Any]] | None,
            dying: Mapping[int, Mapping[str, int]] | None = None,
            in_events: Mapping[int, EventCrash] | None = None, *, toggles: bool = True,
            cannot_start: StartCheck | None = None) -> str | None:
    """Why ``rev`` must not be restored (dying now, seen dying, in its pods' Events, no node for it, predicted to
    fail), None when nothing is. ``dying`` and ``in_events`` are what this run sees (``crashes_by_revision``,
    ``crashes_in_events``): their record is written later in the run, but the choice is made now. ``toggles``
    False: the revision is the workload's own current template, whose timed toggle is recorded on the workload
    and expires there, so having run one speaks against it only as a restore target. ``cannot_start`` is the
    kind's own start verdict on what the pod template alone does not say (an LWS group's world size)."""
    now = (dying or {}).get(rev.number)
    if now:
        kind = main_failure(now)
        return f"{'dying under load' if _under_load(kind) else 'crash-looping'} now ({kind}), pods still running"
    crash = standing_crash(keys, rev.annotations)
    if crash is not None:
        return crash.text()
    evented = standing_event_crash(keys, rev.annotations, (in_events or {}).get(rev.number))
    if evented is not None:
        return evented.text()
    toggled = temporary_toggle(rev, keys, container) if toggles else None
    if toggled:
        return toggled
    spec = rev.template.get("spec") or {}
    where = placement(spec, nodes)
    if where.problem:
        return where.problem
    kind_says = cannot_start(rev) if cannot_start is not None else None
    return kind_says or failed_prediction(predict_template(rev.template, container, gpu=where.gpu))


#: Starts vLLM refuses before it loads anything, whatever the load, the card's free memory or the evidence says: its
#: parser (``argument_refused``), its config classes (``config_refused``, ``max_len_exceeds_model``), the worker's
#: dtype check on the card its pods would get (``dtype_unsupported``) and the pod's GPUs against the world size.
#: ``override=evidence`` weighs evidence; it never covers these (``certain_refusal``).
CERTAIN_REFUSALS = frozenset(f.value for f in (Failure.WORLD_SIZE_EXCEEDS_GPUS, Failure.CONFIG_REFUSED,
                                               Failure.ARGUMENT_REFUSED, Failure.MAX_LEN_EXCEEDS_MODEL,
                                               Failure.DTYPE_UNSUPPORTED))


def certain_refusal(rev: Revision, container: str | None, nodes: Sequence[Mapping[str, Any]] | None) -> str | None:
    """Why vLLM is certain to refuse ``rev``'s start (``CERTAIN_REFUSALS``) on the card its pods would get now, None
    when the prediction is anything else (a memory verdict, "cannot predict"): a memory failure is evidence an
    operator may overrule, a refusal is not."""
    spec = rev.template.get("spec") or {}
    prediction = predict_template(rev.template, container, gpu=placement(spec, nodes).gpu)
    if prediction.outcome not in CERTAIN_REFUSALS:
        return None
    return failed_prediction(prediction) or f"predicted {prediction.outcome}: {prediction.note}"


def temporary_toggle(rev: Revision, keys: Keys, container: str | None) -> str | None:
    """Why a revision that ran a *timed* toggle is no target: the controller copied the toggle's record onto its
    revision object (a Deployment's ReplicaSet; a StatefulSet's ControllerRevision, whose controller copies the
    set's annotations), and restoring that template would keep the flag on with no expiry and no record on the
    workload. A template that runs the flag without a record (eager on purpose) is not affected."""
    try:
        server = find_server(rev.template.get("spec") or {}, container)
    except UserError:
        return None
    running = toggle_flags_on(server.flags)
    for toggle, flag in TOGGLE_FLAGS.items():
        if flag in running and rev.annotations.get(keys.toggle_expires(toggle)):
            return (f"ran --{flag} as a temporary toggle (its record is on that revision): restoring it would "
                    f"keep --{flag} on with no expiry")
    return None


def rejector(keys: Keys, container: str | None, nodes: Sequence[Mapping[str, Any]] | None,
             dying: Mapping[int, Mapping[str, int]] | None = None,
             in_events: Mapping[int, EventCrash] | None = None, cannot_start: StartCheck | None = None
             ) -> StartCheck:
    """``against`` bound to this host: the ``reject`` that ``kube.rollout.choose_rollback`` asks."""
    return lambda rev: against(rev, keys, container, nodes, dying, in_events, cannot_start=cannot_start)
