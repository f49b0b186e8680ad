"""The StatefulSet controller: ordinal pods, ControllerRevision history, RollingUpdate/partition and OnDelete.

Why model it closely: a vLLM StatefulSet's remediation differs from a Deployment's exactly where this
controller is peculiar. History lives in ControllerRevisions (``kubectl rollout history/undo sts/…`` read
and apply their ``data``); a RollingUpdate replaces pods highest ordinal first, one at a time, and never
below ``partition`` (counted from ``spec.ordinals.start``: a pod deleted below it comes back at the set's
current revision); OnDelete replaces nothing until a pod is deleted; and under the default
``OrderedReady`` policy a pod that is not Running and Ready blocks all progress — so a rollback of a
crash-looping StatefulSet takes effect only once the broken pods are deleted (the "forced rollback" of
the Kubernetes docs). Behaviour follows the upstream controller (pkg/controller/statefulset); no code
is copied.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from vllm_remedy.sim.controllers.defaults import default_pod, default_pod_template
from vllm_remedy.sim.controllers.hashing import canonical_template, pod_template_hash
from vllm_remedy.sim.controllers.replicaset import qos_class
from vllm_remedy.sim.controllers.revisioned import RevisionedController
from vllm_remedy.sim.controllers.termination import delete_pod
from vllm_remedy.sim.controllers.util import controlled_by, owner_ref, pod_ready
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
STS, CR = "statefulsets.apps", "controllerrevisions.apps"
REVISION_LABEL = "controller-revision-hash"  # on pods: the ControllerRevision name they were made from
HASH_LABEL = "controller.kubernetes.io/hash"  # on ControllerRevisions
POD_NAME_LABEL, POD_INDEX_LABEL = "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index"


def default_statefulset(obj: Obj) -> Obj:
    """apps/v1 StatefulSet defaults: replicas, OrderedReady, RollingUpdate partition 0, history limit, template."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    default_pod_template(spec.setdefault("template", {}))
    return obj


def revision_data(template: Obj) -> Obj:
    """A ControllerRevision's ``data``: the template as a strategic-merge patch that replaces it whole."""
    return {"spec": {"template": {**copy.deepcopy(template), "$patch": "replace"}}}


def revision_template(rev: Obj) -> Obj:
    """The pod template a ControllerRevision records."""
    template = copy.deepcopy(((rev.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def ordinal(pod: Obj, set_name: str) -> int | None:
    """The ordinal of ``<set>-<n>``, or None for a pod that is not one of the set's."""
    head, _, tail = pod["metadata"]["name"].rpartition("-")
    return int(tail) if head == set_name and tail.isdigit() else None


def first_ordinal(sts: Obj) -> int:
    """``spec.ordinals.start``: the set's pods are ``<set>-<start>`` … ``<set>-<start + replicas - 1>``."""
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


def running_and_ready(pod: Obj) -> bool:
    """What OrderedReady waits for before touching the next ordinal."""
    return (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod)


class StatefulSetController(RevisionedController):
    """Reconciles each StatefulSet's revisions, pods and status (one sync per change, like the upstream loop)."""

    word, kind = "statefulset", "StatefulSet"
    on_statefulset = RevisionedController.on_object

    def _update_revision(self, sts: Obj, revisions: list[Obj]) -> Obj:
        """The revision for the current template: the newest if equal, an older equal one re-numbered to the
        top (as after ``rollout undo``), else a new one."""
        template = sts["spec"]["template"]
        top = int(revisions[-1]["revision"]) if revisions else 0
        same = [r for r in revisions if canonical_template(revision_template(r)) == canonical_template(template)]
        if same and int(same[-1]["revision"]) == top:
            return same[-1]
        ns = sts["metadata"]["namespace"]
        if same:
            return self.store.mutate(CR, ns, same[-1]["metadata"]["name"],
                                     lambda obj: obj.__setitem__("revision", top + 1))
        digest = pod_template_hash(template, int((sts.get("status") or {}).get("collisionCount") or 0))
        labels = {**(template.get("metadata") or {}).get("labels", {}), HASH_LABEL: digest}
        # the upstream controller's newRevision copies the set's annotations (kubernetes.io/change-cause among them)
        # onto the revision it creates, which is where `kubectl rollout history sts/…` reads CHANGE-CAUSE
        notes = dict(sts["metadata"].get("annotations") or {})
        rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
               "metadata": {"name": f"{sts['metadata']['name']}-{digest}", "namespace": ns, "labels": labels,
                            "ownerReferences": [owner_ref(sts)], **({"annotations": notes} if notes else {})},
               "data": revision_data(template), "revision": top + 1}
        return self.store.create(CR, rev)

    def _trim_history(self, sts: Obj, revisions: list[Obj], live: set[str]) -> None:
        limit = int(sts["spec"].get("revisionHistoryLimit", 10))
        old = [r for r in revisions if r["metadata"]["name"] not in live]
        for rev in old[: max(0, len(old) - limit)]:
            with contextlib.suppress(ApiError):
                self.store.delete(CR, rev["metadata"]["namespace"], rev["metadata"]["name"])

    # -- pods --------------------------------------------------------------------------------------

    def _create_pod(self, sts: Obj, index: int, rev: Obj) -> None:
        template = revision_template(rev)
        name = f"{sts['metadata']['name']}-{index}"
        meta = template.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), REVISION_LABEL: rev["metadata"]["name"], POD_NAME_LABEL: name,
                  POD_INDEX_LABEL: str(index)}
        spec = copy.deepcopy(template.get("spec") or {})
        spec.setdefault("hostname", name)
        if sts["spec"].get("serviceName"):
            spec.setdefault("subdomain", sts["spec"]["serviceName"])
        pod: Obj = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": sts["metadata"]["namespace"], "labels": labels,
                                 "ownerReferences": [owner_ref(sts)]},
                    "spec": spec, "status": {"phase": "Pending"}}
        if meta.get("annotations"):
            pod["metadata"]["annotations"] = dict(meta["annotations"])
        default_pod(pod)
        pod["status"]["qosClass"] = qos_class(pod)
        try:
            self.store.create("pods", pod)
        except ApiError as err:
            if err.code != 409:  # the old pod of that name is still terminating: the next sync retries
                raise
            return
        self.events.record(sts, "Normal", "SuccessfulCreate", f"create Pod {name} in StatefulSet "
                           f"{sts['metadata']['name']} successful", "statefulset-controller")

    def _delete(self, sts: Obj, pod: Obj) -> None:
        with contextlib.suppress(ApiError):
            delete_pod(self.store, self.clock, pod["metadata"]["namespace"], pod["metadata"]["name"])
            self.events.record(sts, "Normal", "SuccessfulDelete", f"delete Pod {pod['metadata']['name']} in "
                               f"StatefulSet {sts['metadata']['name']} successful", "statefulset-controller")

    # -- the sync ----------------------------------------------------------------------------------

    def sync(self, namespace: str, name: str) -> None:
        """One pass of the upstream loop: revisions, then create/replace/scale pods in ordinal order, then status."""
        sts = self.store.find(STS, namespace, name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        revisions = self._revisions(sts)
        update = self._update_revision(sts, revisions)
        revisions = self._revisions(sts)
        names = {r["metadata"]["name"]: r for r in revisions}
        current = names.get(str((sts.get("status") or {}).get("currentRevision")), update)
        uid = sts["metadata"]["uid"]
        pods = {}
        for pod in self.store.list("pods", namespace, lambda o: controlled_by(o, uid))[0]:
            index = ordinal(pod, name)
            if index is not None:
                pods[index] = pod
        self._step(sts, pods, current, update)
        pods = {i: p for i, p in ((ordinal(p, name), p) for p in self.store.list(
            "pods", namespace, lambda o: controlled_by(o, uid))[0]) if i is not None}
        live = {current["metadata"]["name"], update["metadata"]["name"]}
        live |= {str(p["metadata"].get("labels", {}).get(REVISION_LABEL)) for p in pods.values()}
        self._trim_history(sts, revisions, live)
        self._write_status(sts, pods, current, update)

    def _step(self, sts: Obj, pods: dict[int, Obj], current: Obj, update: Obj) -> None:
        spec = sts["spec"]
        replicas = int(spec.get("replicas", 1) or 0)
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        strategy = spec.get("updateStrategy") or {}
        rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
        start = first_ordinal(sts)
        # upstream newVersionedStatefulSetPod: an ordinal below start + partition is made from the current revision
        below = start + (int((strategy.get("rollingUpdate") or {}).get("partition", 0) or 0) if rolling else 0)
        for index in range(start, start + replicas):
            pod = pods.get(index)
            if pod is not None and (pod.get("status") or {}).get("phase") == "Failed":
                self._delete(sts, pod)  # a failed pod is replaced, with the revision its ordinal should run
                if ordered:
                    return
                continue
            if pod is None:
                self._create_pod(sts, index, current if rolling and index < below else update)
                if ordered:
                    return
                continue
            if pod["metadata"].get("deletionTimestamp") and ordered:
                return
            if ordered and not running_and_ready(pod):
                return  # OrderedReady: nothing moves past a pod that is not Running and Ready
        for index in sorted((i for i in pods if not start <= i < start + replicas), reverse=True):
            pod = pods[index]
            if not pod["metadata"].get("deletionTimestamp"):
                self._delete(sts, pod)
            if ordered:
                return
        if not rolling:
            return  # OnDelete: pods change revision only when someone deletes them
        for index in range(start + replicas - 1, below - 1, -1):
            pod = pods.get(index)
            if pod is None:
                return
            if pod["metadata"].get("labels", {}).get(REVISION_LABEL) != update["metadata"]["name"]:
                if not pod["metadata"].get("deletionTimestamp"):
                    self._delete(sts, pod)
                return
            if not running_and_ready(pod):
                return

    def _write_status(self, sts: Obj, pods: dict[int, Obj], current: Obj, update: Obj) -> None:
        active = [p for p in pods.values() if not p["metadata"].get("deletionTimestamp")]
        rev_of = [str(p["metadata"].get("labels", {}).get(REVISION_LABEL)) for p in active]
        ready = sum(1 for p in active if pod_ready(p))
        replicas = int(sts["spec"].get("replicas", 1) or 0)
        current_name, update_name = current["metadata"]["name"], update["metadata"]["name"]
        updated = rev_of.count(update_name)
        rolling = (sts["spec"].get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        if rolling and updated == replicas and ready == replicas and len(active) == replicas:
            current_name = update_name  # the rolling update is complete
        status: Obj = {"observedGeneration": sts["metadata"].get("generation", 1), "replicas": len(active),
                       "readyReplicas": ready, "currentReplicas": rev_of.count(current_name),
                       "updatedReplicas": updated, "currentRevision": current_name, "updateRevision": update_name,
                       "collisionCount": 0, "availableReplicas": ready}
        status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration", "collisionCount")}
        if status != sts.get("status"):
            self.store.mutate(STS, sts["metadata"]["namespace"], sts["metadata"]["name"],
                              lambda obj: obj.__setitem__("status", status), status=True)
