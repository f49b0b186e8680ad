"""The Deployment controller: ReplicaSet revisions, RollingUpdate / Recreate, status and conditions.

Follows pkg/controller/deployment closely enough that ``kubectl rollout history/undo/status`` read
our objects as they read a real cluster's: the new ReplicaSet is the one whose template equals the
Deployment's; reusing one (a rollback) bumps its revision and records the old number in
``revision-history``; progress is judged by the Progressing condition against progressDeadlineSeconds.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from vllm_remedy.sim.clock import Clock, parse_timestamp
from vllm_remedy.sim.controllers import rollout as ro
from vllm_remedy.sim.controllers.events import EventRecorder
from vllm_remedy.sim.controllers.hashing import templates_equal
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.controllers.newrs import replicaset_for, set_new_rs_annotations
from vllm_remedy.sim.controllers.scaling import is_scaling_event, scale_targets
from vllm_remedy.sim.controllers.util import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    REVISION,
    condition,
    controlled_by,
    controller_ref,
    creation_key,
    revision,
    set_condition,
)
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]

RS = "replicasets.apps"
DEPLOY = "deployments.apps"


class DeploymentController:
    """Reconciles Deployments into ReplicaSets on the manager's thread, as kube-controller-manager does;
    the informer hooks only enqueue because they run under the store lock."""

    def __init__(self, store: Store, clock: Clock, manager: Manager, events: EventRecorder) -> None:
        self.store, self.clock, self.manager, self.events = store, clock, manager, events
        manager.register("deployment", self.sync)
        manager.register("deployment-gc", self._collect)

    # -- informer hooks (under the store lock: only enqueue) ------------------------------------

    def on_deployment(self, namespace: str, name: str, obj: Obj, kind: str) -> None:
        """Informer hook: a change queues a sync; a deletion queues cascading GC keyed by uid, since the
        object itself is already gone."""
        if kind == "DELETED":
            self.manager.enqueue("deployment-gc", namespace, obj["metadata"].get("uid", ""))
        else:
            self.manager.enqueue("deployment", namespace, name)

    def on_owned(self, namespace: str, rs: Obj) -> None:
        """Informer hook for ReplicaSet changes: wake the owning Deployment, whose status sums its ReplicaSets."""
        ref = controller_ref(rs)
        if ref is not None and ref.get("kind") == "Deployment":
            self.manager.enqueue("deployment", namespace, ref["name"])

    def on_pod_gone(self, namespace: str, pod: Obj) -> None:
        """Informer hook for a pod's final removal: Recreate waits for old pods to be gone, not just Terminating,
        and that moment may change no ReplicaSet status, so it wakes the owning Deployment itself."""
        ref = controller_ref(pod)
        rs = self.store.find(RS, namespace, ref["name"]) if ref and ref.get("kind") == "ReplicaSet" else None
        if rs is not None:
            self.on_owned(namespace, rs)

    def _collect(self, namespace: str, uid: str) -> None:
        """Background cascading deletion: a deleted Deployment's ReplicaSets go too."""
        for rs in self.store.list(RS, namespace, lambda o: controlled_by(o, uid))[0]:
            with contextlib.suppress(ApiError):
                self.store.delete(RS, namespace, rs["metadata"]["name"])

    # -- sync ------------------------------------------------------------------------------------

    def sync(self, namespace: str, name: str) -> None:
        """syncDeployment: when paused or only scaled, resize ReplicaSets proportionally; otherwise let the
        strategy (RollingUpdate or Recreate) move pods towards the current template."""
        d = self.store.find(DEPLOY, namespace, name)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return
        before = copy.deepcopy(d)
        uid = d["metadata"]["uid"]
        rses = self.store.list(RS, namespace, lambda o: controlled_by(o, uid))[0]
        self._check_paused(d)
        paused = bool(d.get("spec", {}).get("paused"))
        if paused or is_scaling_event(d, rses):
            new_rs, old = self._sync_revision(d, rses, create=False)
            by_name = {rs["metadata"]["name"]: rs for rs in [*old, *([new_rs] if new_rs else [])]}
            for rs_name, size in scale_targets(d, new_rs, old).items():
                self._scale(d, by_name[rs_name], size)
            if paused:
                self._cleanup(d, old)
            d["status"] = ro.calculate_status(d, list(by_name.values()), new_rs, self.clock.timestamp())
        elif ro.is_rolling(d):
            self._rolling(d, rses)
        else:
            self._recreate(d, rses)
        self._save(before, d)

    def _check_paused(self, d: Obj) -> None:
        if ro.progress_deadline(d) is None:
            return
        cond = condition(d.get("status") or {}, ro.PROGRESSING)
        if cond is not None and cond.get("reason") == ro.TIMED_OUT_REASON:
            return  # a reported lack of progress is not overwritten by pausing (checkPausedConditions)
        now = self.clock.timestamp()
        status = d.setdefault("status", {})
        if d.get("spec", {}).get("paused") and (cond is None or cond.get("reason") != ro.PAUSED_REASON):
            set_condition(status, ro.new_condition(ro.PROGRESSING, "Unknown", ro.PAUSED_REASON,
                                                   "Deployment is paused", now))
        elif not d.get("spec", {}).get("paused") and cond is not None and cond.get("reason") == ro.PAUSED_REASON:
            set_condition(status, ro.new_condition(ro.PROGRESSING, "Unknown", ro.RESUMED_REASON,
                                                   "Deployment is resumed", now))

    def _rolling(self, d: Obj, rses: list[Obj]) -> None:
        new_rs, old = self._sync_revision(d, rses, create=True)
        all_rses = [*old, *([new_rs] if new_rs else [])]
        if new_rs is not None:
            target = ro.new_rs_new_replicas(d, all_rses, new_rs)
            if ro.replicas_of(new_rs, 0) > ro.replicas_of(d):
                target = ro.replicas_of(d)
            if target != ro.replicas_of(new_rs, 0):
                self._scale(d, new_rs, target)
                return self._rollout_status(d, all_rses, new_rs)
        if self._scale_down_old(d, old, new_rs):
            return self._rollout_status(d, all_rses, new_rs)
        status = ro.calculate_status(d, all_rses, new_rs, self.clock.timestamp())
        if ro.deployment_complete(d, status):
            self._cleanup(d, old)
        return self._rollout_status(d, all_rses, new_rs)

    def _recreate(self, d: Obj, rses: list[Obj]) -> None:
        new_rs, old = self._sync_revision(d, rses, create=False)
        scaled = False
        for rs in old:
            if ro.replicas_of(rs, 0) > 0:
                self._scale(d, rs, 0)
                scaled = True
        all_rses = [*old, *([new_rs] if new_rs else [])]
        if scaled or self._old_pods_running(d, new_rs, old):
            return self._rollout_status(d, all_rses, new_rs)
        if new_rs is None:
            new_rs, old = self._sync_revision(d, rses, create=True)
            all_rses = [*old, *([new_rs] if new_rs else [])]
        if new_rs is not None and ro.replicas_of(new_rs, 0) != ro.replicas_of(d):
            self._scale(d, new_rs, ro.replicas_of(d))
        status = ro.calculate_status(d, all_rses, new_rs, self.clock.timestamp())
        if ro.deployment_complete(d, status):
            self._cleanup(d, old)
        return self._rollout_status(d, all_rses, new_rs)

    def _old_pods_running(self, d: Obj, new_rs: Obj | None, old: list[Obj]) -> bool:
        if ro.status_count(old, "replicas") > 0:
            return True
        old_uids = {rs["metadata"]["uid"] for rs in old}
        for pod in self.store.list("pods", d["metadata"]["namespace"])[0]:
            ref = controller_ref(pod)
            phase = (pod.get("status") or {}).get("phase")
            if ref is not None and ref.get("uid") in old_uids and phase not in ("Succeeded", "Failed"):
                return True  # a Terminating pod is still running: Recreate waits for it to go
        return False

    # -- revisions -------------------------------------------------------------------------------

    def _sync_revision(self, d: Obj, rses: list[Obj], *, create: bool) -> tuple[Obj | None, list[Obj]]:
        """Find (or create) the ReplicaSet for the current template and give it the next revision."""
        template = d.get("spec", {}).get("template")
        matching = sorted((rs for rs in rses if templates_equal(rs["spec"].get("template"), template)),
                          key=creation_key)
        existing = matching[0] if matching else None
        old = [rs for rs in rses if rs is not existing]
        new_revision = str(max((revision(rs) for rs in old), default=0) + 1)
        now = self.clock.timestamp()
        status = d.setdefault("status", {})
        if existing is not None:
            rs_copy = copy.deepcopy(existing)
            changed = set_new_rs_annotations(d, rs_copy, new_revision, exists=True)
            min_ready = d["spec"].get("minReadySeconds", 0)
            if rs_copy["spec"].get("minReadySeconds", 0) != min_ready:
                rs_copy["spec"]["minReadySeconds"] = min_ready
                changed = True
            if changed:
                existing = self._write_rs(rs_copy)
            self._set_deployment_revision(d, str(revision(existing)))
            if ro.progress_deadline(d) is not None and condition(status, ro.PROGRESSING) is None:
                set_condition(status, ro.new_condition(ro.PROGRESSING, "True", ro.FOUND_NEW_RS_REASON,
                                                       f'Found new replica set "{existing["metadata"]["name"]}"', now))
            return existing, old
        if not create:
            return None, old
        created = self._create_rs(d, old, new_revision)
        if created is None:
            return None, old
        self._set_deployment_revision(d, new_revision)
        if ro.progress_deadline(d) is not None:
            set_condition(status, ro.new_condition(ro.PROGRESSING, "True", ro.NEW_RS_REASON,
                                                   f'Created new replica set "{created["metadata"]["name"]}"', now))
        return created, old

    def _create_rs(self, d: Obj, old: list[Obj], new_revision: str) -> Obj | None:
        meta = d["metadata"]
        collisions = int((d.get("status") or {}).get("collisionCount", 0))
        rs = replicaset_for(d, new_revision, 0, collisions)
        rs["spec"]["replicas"] = ro.new_rs_new_replicas(d, old, None)
        try:
            made = self.store.create(RS, rs)
        except ApiError as err:
            if err.code != 409:
                raise
            clash = self.store.find(RS, meta["namespace"], rs["metadata"]["name"])
            if clash is not None and controlled_by(clash, meta["uid"]) and templates_equal(
                    clash["spec"].get("template"), d["spec"].get("template")):
                return clash
            d.setdefault("status", {})["collisionCount"] = collisions + 1  # hash collision: retry next sync
            self.manager.enqueue("deployment", meta["namespace"], meta["name"])
            return None
        if ro.replicas_of(made, 0) > 0:
            self._scaled_event(d, made, 0, ro.replicas_of(made, 0))
        return made

    def _set_deployment_revision(self, d: Obj, value: str) -> None:
        d["metadata"].setdefault("annotations", {})[REVISION] = value

    # -- scaling ---------------------------------------------------------------------------------

    def _scale(self, d: Obj, rs: Obj, replicas: int) -> None:
        before = ro.replicas_of(rs, 0)
        desired, most = str(ro.replicas_of(d)), str(ro.replicas_of(d) + ro.max_surge(d))

        def apply(obj: Obj) -> None:
            obj["spec"]["replicas"] = replicas
            notes = obj["metadata"].setdefault("annotations", {})
            notes[DESIRED_REPLICAS], notes[MAX_REPLICAS] = desired, most

        updated = self.store.mutate(RS, rs["metadata"]["namespace"], rs["metadata"]["name"], apply)
        rs.clear()
        rs.update(updated)
        if before != replicas:
            self._scaled_event(d, rs, before, replicas)

    def _scaled_event(self, d: Obj, rs: Obj, before: int, after: int) -> None:
        verb = "up" if after > before else "down"
        self.events.record(d, "Normal", "ScalingReplicaSet",
                           f"Scaled {verb} replica set {rs['metadata']['name']} from {before} to {after}",
                           "deployment-controller")

    def _scale_down_old(self, d: Obj, old: list[Obj], new_rs: Obj | None) -> bool:
        """reconcileOldReplicaSets: drop unhealthy old pods first, then keep minAvailable."""
        if ro.spec_replicas(old) == 0:
            return False
        all_rses = [*old, *([new_rs] if new_rs else [])]
        min_available = ro.replicas_of(d) - ro.max_unavailable(d)
        new_unavailable = (ro.replicas_of(new_rs, 0) - ro.status_count([new_rs], "availableReplicas")) if new_rs else 0
        max_scaled_down = ro.spec_replicas(all_rses) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        ordered = sorted(old, key=creation_key)
        cleaned = 0
        for rs in ordered:
            if cleaned >= max_scaled_down:
                break
            have, available = ro.replicas_of(rs, 0), ro.status_count([rs], "availableReplicas")
            if have == 0 or have == available:
                continue
            down = min(max_scaled_down - cleaned, have - available)
            self._scale(d, rs, have - down)
            cleaned += down
        available_all = ro.status_count(all_rses, "availableReplicas")
        scaled = 0
        if available_all > min_available:
            budget = available_all - min_available
            for rs in ordered:
                if scaled >= budget:
                    break
                have = ro.replicas_of(rs, 0)
                if have == 0:
                    continue
                down = min(have, budget - scaled)
                self._scale(d, rs, have - down)
                scaled += down
        return cleaned + scaled > 0

    def _cleanup(self, d: Obj, old: list[Obj]) -> None:
        """revisionHistoryLimit: delete the oldest-revision ReplicaSets that are fully scaled down."""
        limit = d["spec"].get("revisionHistoryLimit", 10)
        if limit is None:
            return
        alive = sorted((rs for rs in old if not rs["metadata"].get("deletionTimestamp")), key=revision)
        for rs in alive[: max(len(alive) - int(limit), 0)]:
            status = rs.get("status") or {}
            if status.get("replicas", 0) or ro.replicas_of(rs, 0):
                continue
            if rs["metadata"].get("generation", 1) > status.get("observedGeneration", 0):
                continue
            with contextlib.suppress(ApiError):
                self.store.delete(RS, rs["metadata"]["namespace"], rs["metadata"]["name"])

    # -- status ----------------------------------------------------------------------------------

    def _rollout_status(self, d: Obj, all_rses: list[Obj], new_rs: Obj | None) -> None:
        """syncRolloutStatus: counts, Available, and Progressing (progress / complete / timed out)."""
        now_ts, now = self.clock.timestamp(), self.clock.now()
        status = ro.calculate_status(d, all_rses, new_rs, now_ts)
        deadline = ro.progress_deadline(d)
        if deadline is None:
            status["conditions"] = [c for c in status["conditions"] if c["type"] != ro.PROGRESSING]
        current = condition(status, ro.PROGRESSING)
        complete_already = (status.get("replicas", 0) == status.get("updatedReplicas", 0) and current is not None
                            and current.get("reason") == ro.NEW_RS_AVAILABLE_REASON)
        rs_name = new_rs["metadata"]["name"] if new_rs else None
        if deadline is not None and not complete_already:
            if ro.deployment_complete(d, status):
                msg = f'ReplicaSet "{rs_name}" has successfully progressed.' if rs_name else \
                    f'Deployment "{d["metadata"]["name"]}" has successfully progressed.'
                set_condition(status, ro.new_condition(ro.PROGRESSING, "True", ro.NEW_RS_AVAILABLE_REASON, msg, now_ts))
            elif ro.deployment_progressing(d, status):
                msg = f'ReplicaSet "{rs_name}" is progressing.' if rs_name else \
                    f'Deployment "{d["metadata"]["name"]}" is progressing.'
                cond = ro.new_condition(ro.PROGRESSING, "True", ro.RS_UPDATED_REASON, msg, now_ts)
                if current is not None and current.get("status") == "True":
                    cond["lastTransitionTime"] = current["lastTransitionTime"]
                status["conditions"] = [c for c in status["conditions"] if c["type"] != ro.PROGRESSING] + [cond]
            elif ro.deployment_timed_out(d, status, now):
                msg = f'ReplicaSet "{rs_name}" has timed out progressing.' if rs_name else \
                    f'Deployment "{d["metadata"]["name"]}" has timed out progressing.'
                set_condition(status, ro.new_condition(ro.PROGRESSING, "False", ro.TIMED_OUT_REASON, msg, now_ts))
        d["status"] = status
        self._requeue_stuck(d, status, now)

    def _requeue_stuck(self, d: Obj, status: Obj, now: float) -> None:
        deadline = ro.progress_deadline(d)
        cond = condition(status, ro.PROGRESSING)
        if deadline is None or cond is None or ro.deployment_complete(d, status):
            return
        if cond.get("reason") in (ro.TIMED_OUT_REASON, ro.NEW_RS_AVAILABLE_REASON):
            return
        due = parse_timestamp(cond["lastUpdateTime"]) + deadline + 1
        self.manager.requeue_after(max(due - now, 0.5), "deployment", d["metadata"]["namespace"],
                                   d["metadata"]["name"])

    def _save(self, before: Obj, d: Obj) -> None:
        ns, name = d["metadata"]["namespace"], d["metadata"]["name"]
        rev = (d["metadata"].get("annotations") or {}).get(REVISION)
        if rev is not None and rev != (before["metadata"].get("annotations") or {}).get(REVISION):
            def annotate(obj: Obj) -> None:
                obj["metadata"].setdefault("annotations", {})[REVISION] = rev

            self.store.mutate(DEPLOY, ns, name, annotate)
        if d.get("status") != before.get("status"):
            status = d.get("status")
            self.store.mutate(DEPLOY, ns, name, lambda obj: obj.__setitem__("status", status), status=True)

    def rolled_out(self, d: Obj) -> bool:
        """Whether ``kubectl rollout status`` would report success, by the same message logic it uses."""
        return ro.rollout_status_message(d)[0]

    def _write_rs(self, rs: Obj) -> Obj:
        notes, min_ready = rs["metadata"].get("annotations") or {}, rs["spec"].get("minReadySeconds", 0)

        def apply(obj: Obj) -> None:
            obj["metadata"]["annotations"] = dict(notes)
            if min_ready:
                obj["spec"]["minReadySeconds"] = min_ready
            else:
                obj["spec"].pop("minReadySeconds", None)

        return self.store.mutate(RS, rs["metadata"]["namespace"], rs["metadata"]["name"], apply)
