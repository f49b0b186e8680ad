"""The LeaderWorkerSet controller (``leaderworkerset.x-k8s.io/v1``): groups of one leader and ``size - 1`` workers.

Why model it: multi-node vLLM (Ray across ``size`` pods) is deployed as an LWS, and its remediation differs
from a Deployment's where this controller is peculiar. Each replica is a *group* — leader ``<lws>-<i>`` and
workers ``<lws>-<i>-<j>`` labelled with the set's name, group and worker index — created from the
``leaderWorkerTemplate`` (leader template, else the worker template, for the leader). The template's history
lives in ControllerRevisions (there is no ``kubectl rollout undo`` for an LWS: a rollback writes
``spec.leaderWorkerTemplate`` back). A rolling update recreates whole groups, highest index first, keeping at
most ``maxUnavailable`` groups not ready; a group that is already not ready (crash-looping) is replaced at once.

Simplifications, each said here rather than hidden: pods are owned by the LWS directly (upstream puts a
leader StatefulSet and one worker StatefulSet per group between them), ``maxSurge`` is ignored, and a
container restart does not recreate its group (``RecreateGroupOnPodRestart``), so a leader whose memory does
not fit crash-loops in place, as a Deployment's pod does. Behaviour follows kubernetes-sigs/lws; no code is copied.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

from vllm_remedy.sim.controllers.defaults import default_pod, default_pod_template
from vllm_remedy.sim.controllers.hashing import _prune, canonical_template, fnv32a, safe_encode
from vllm_remedy.sim.controllers.replicaset import qos_class
from vllm_remedy.sim.controllers.revisioned import RevisionedController
from vllm_remedy.sim.controllers.termination import delete_pod
from vllm_remedy.sim.controllers.util import controlled_by, owner_ref, pod_ready
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
LWS, CR = "leaderworkersets.leaderworkerset.x-k8s.io", "controllerrevisions.apps"
PREFIX = "leaderworkerset.sigs.k8s.io/"
NAME_LABEL, GROUP_LABEL, WORKER_LABEL = PREFIX + "name", PREFIX + "group-index", PREFIX + "worker-index"
REVISION_LABEL = PREFIX + "template-revision-hash"  # on pods and ControllerRevisions
GROUP_KEY_LABEL, SIZE_ANNOTATION, LEADER_ANNOTATION = PREFIX + "group-key", PREFIX + "size", PREFIX + "leader-name"
#: The first release that writes ``status.observedGeneration`` and each condition's (kubernetes-sigs/lws #807).
OBSERVED_GENERATION_SINCE = (0, 9)


def default_leaderworkerset(obj: Obj) -> Obj:
    """v1 defaults: replicas 1, size 1, RollingUpdate with maxUnavailable 1, group restart, both pod templates."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("startupPolicy", "LeaderCreated")
    rollout = spec.setdefault("rolloutStrategy", {})
    rollout.setdefault("type", "RollingUpdate")
    rollout.setdefault("rollingUpdateConfiguration", {}).setdefault("maxUnavailable", 1)
    rollout["rollingUpdateConfiguration"].setdefault("maxSurge", 0)
    spec.setdefault("networkConfig", {}).setdefault("subdomainPolicy", "Shared")
    lwt = spec.setdefault("leaderWorkerTemplate", {})
    lwt.setdefault("size", 1)
    lwt.setdefault("restartPolicy", "RecreateGroupOnPodRestart")
    default_pod_template(lwt.setdefault("workerTemplate", {}))
    if isinstance(lwt.get("leaderTemplate"), dict):
        default_pod_template(lwt["leaderTemplate"])
    return obj


def canonical_lwt(lwt: Obj | None) -> Obj:
    """The leaderWorkerTemplate's identity: each pod template canonical, empties dropped."""
    out = copy.deepcopy(lwt or {})
    out.pop("$patch", None)
    for key in ("leaderTemplate", "workerTemplate"):
        if isinstance(out.get(key), dict):
            out[key] = canonical_template(out[key])
    return _prune(out)


def revision_hash(lwt: Obj | None) -> str:
    """The template-revision-hash of a leaderWorkerTemplate (FNV-32a of its canonical form, safe alphabet)."""
    return safe_encode(str(fnv32a(json.dumps(canonical_lwt(lwt), sort_keys=True, separators=(",", ":")).encode())))


def revision_lwt(rev: Obj) -> Obj:
    """The leaderWorkerTemplate a ControllerRevision records (``data`` replaces it whole)."""
    lwt = copy.deepcopy(((rev.get("data") or {}).get("spec") or {}).get("leaderWorkerTemplate") or {})
    lwt.pop("$patch", None)
    return lwt


def max_unavailable(lws: Obj, replicas: int) -> int:
    """``rollingUpdateConfiguration.maxUnavailable`` as a group count (an int or a percentage, rounded down), ≥ 1."""
    raw = (((lws.get("spec") or {}).get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}).get(
        "maxUnavailable", 1)
    if isinstance(raw, str) and raw.endswith("%"):
        return max(1, replicas * int(raw[:-1] or 0) // 100)
    return max(1, int(raw))


def _indices(pod: Obj) -> tuple[int, int] | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    try:
        return int(labels[GROUP_LABEL]), int(labels.get(WORKER_LABEL, 0))
    except (KeyError, ValueError):
        return None


class LeaderWorkerSetController(RevisionedController):
    """Reconciles each LeaderWorkerSet's revisions, groups and status."""

    word, kind = "leaderworkerset", "LeaderWorkerSet"
    on_leaderworkerset = RevisionedController.on_object
    #: The upstream release this controller behaves as, (major, minor). Clusters still run releases before v0.9.0,
    #: whose status carries no observedGeneration anywhere; ``(0, 8)`` lets a test meet one.
    release: tuple[int, int] = (0, 10)

    def _update_revision(self, lws: Obj, revisions: list[Obj]) -> Obj:
        """The revision of the current template: the newest if equal, an older equal one re-numbered to the top
        (a rollback), else a new one."""
        lwt = lws["spec"]["leaderWorkerTemplate"]
        digest = revision_hash(lwt)
        top = int(revisions[-1]["revision"]) if revisions else 0
        same = [r for r in revisions if (r["metadata"].get("labels") or {}).get(REVISION_LABEL) == digest]
        if same and int(same[-1]["revision"]) == top:
            return same[-1]
        ns, name = lws["metadata"]["namespace"], lws["metadata"]["name"]
        if same:
            return self.store.mutate(CR, ns, same[-1]["metadata"]["name"],
                                     lambda obj: obj.__setitem__("revision", top + 1))
        rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
               "metadata": {"name": f"{name}-{digest}", "namespace": ns,
                            "labels": {NAME_LABEL: name, REVISION_LABEL: digest}, "ownerReferences": [owner_ref(lws)]},
               "data": {"spec": {"leaderWorkerTemplate": {**copy.deepcopy(lwt), "$patch": "replace"}}},
               "revision": top + 1}
        return self.store.create(CR, rev)

    def _trim_history(self, revisions: list[Obj], live: set[str], limit: int = 10) -> None:
        old = [r for r in revisions if (r["metadata"].get("labels") or {}).get(REVISION_LABEL) not in live]
        for rev in old[: max(0, len(old) - limit)]:
            with contextlib.suppress(ApiError):
                self.store.delete(CR, rev["metadata"]["namespace"], rev["metadata"]["name"])

    # -- pods --------------------------------------------------------------------------------------

    def _create_pod(self, lws: Obj, group: int, worker: int, rev: Obj) -> None:
        lwt = revision_lwt(rev)
        name, ns = lws["metadata"]["name"], lws["metadata"]["namespace"]
        size = int(lwt.get("size", 1) or 1)
        template = (lwt.get("leaderTemplate") if worker == 0 else None) or lwt.get("workerTemplate") or {}
        pod_name = f"{name}-{group}" if worker == 0 else f"{name}-{group}-{worker}"
        meta = template.get("metadata") or {}
        digest = (rev["metadata"].get("labels") or {}).get(REVISION_LABEL, "")
        labels = {**(meta.get("labels") or {}), NAME_LABEL: name, GROUP_LABEL: str(group), WORKER_LABEL: str(worker),
                  REVISION_LABEL: digest, GROUP_KEY_LABEL: safe_encode(str(fnv32a(f"{ns}/{name}-{group}".encode())))}
        notes = {**(meta.get("annotations") or {}), SIZE_ANNOTATION: str(size)}
        if worker:
            notes[LEADER_ANNOTATION] = f"{name}-{group}"
        spec = copy.deepcopy(template.get("spec") or {})
        spec.setdefault("hostname", pod_name)
        spec.setdefault("subdomain", name)
        env = [{"name": "LWS_LEADER_ADDRESS", "value": f"{name}-{group}.{name}.{ns}"},
               {"name": "LWS_GROUP_SIZE", "value": str(size)}, {"name": "LWS_WORKER_INDEX", "value": str(worker)}]
        for container in spec.get("containers") or []:
            container["env"] = env + [e for e in container.get("env") or [] if not e.get("name", "").startswith("LWS_")]
        pod: Obj = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pod_name, "namespace": ns, "labels": labels, "annotations": notes,
                                 "ownerReferences": [owner_ref(lws)]},
                    "spec": spec, "status": {"phase": "Pending"}}
        default_pod(pod)
        pod["status"]["qosClass"] = qos_class(pod)
        try:
            self.store.create("pods", pod)
        except ApiError as err:
            if err.code != 409:  # the old pod of that name is still terminating: the next sync retries
                raise
            return
        self.events.record(lws, "Normal", "CreatedPod", f"Created pod {pod_name}", "lws-controller")

    def _delete_group(self, lws: Obj, pods: dict[int, Obj]) -> None:
        for pod in pods.values():
            if not pod["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(ApiError):
                    delete_pod(self.store, self.clock, pod["metadata"]["namespace"], pod["metadata"]["name"])

    # -- the sync ----------------------------------------------------------------------------------

    def _groups(self, lws: Obj) -> dict[int, dict[int, Obj]]:
        uid = lws["metadata"]["uid"]
        groups: dict[int, dict[int, Obj]] = {}
        for pod in self.store.list("pods", lws["metadata"]["namespace"], lambda o: controlled_by(o, uid))[0]:
            at = _indices(pod)
            if at is not None:
                groups.setdefault(at[0], {})[at[1]] = pod
        return groups

    @staticmethod
    def _revision_of(group: dict[int, Obj]) -> str:
        leader = group.get(0)
        return str(((leader or {}).get("metadata") or {}).get("labels", {}).get(REVISION_LABEL, ""))

    @staticmethod
    def _ready(group: dict[int, Obj], size: int) -> bool:
        return len(group) == size and all(pod_ready(p) and not p["metadata"].get("deletionTimestamp")
                                          for p in group.values())

    def sync(self, namespace: str, name: str) -> None:
        """Revisions, then missing pods, surplus groups and the rolling update, then status."""
        lws = self.store.find(LWS, namespace, name)
        if lws is None or lws["metadata"].get("deletionTimestamp"):
            return
        update = self._update_revision(lws, self._revisions(lws))
        revisions = {(r["metadata"].get("labels") or {}).get(REVISION_LABEL): r for r in self._revisions(lws)}
        update_hash = update["metadata"]["labels"][REVISION_LABEL]
        replicas = int(lws["spec"].get("replicas", 1) or 0)
        size = int(lws["spec"]["leaderWorkerTemplate"].get("size", 1) or 1)
        groups = self._groups(lws)
        for index in range(replicas):
            group = groups.get(index, {})
            if any((p.get("status") or {}).get("phase") == "Failed" for p in group.values()):
                self._delete_group(lws, group)
                continue
            rev = revisions.get(self._revision_of(group)) if 0 in group else update
            for worker in range(size):
                if worker not in group:
                    self._create_pod(lws, index, worker, rev or update)
        for index, group in groups.items():
            if index >= replicas:
                self._delete_group(lws, group)
        self._roll(lws, self._groups(lws), replicas, size, update_hash)
        groups = self._groups(lws)
        live = {update_hash} | {self._revision_of(g) for g in groups.values()}
        self._trim_history(self._revisions(lws), live)
        self._write_status(lws, groups, replicas, size, update_hash)

    def _roll(self, lws: Obj, groups: dict[int, dict[int, Obj]], replicas: int, size: int, update: str) -> None:
        """Recreate outdated groups, highest index first, within maxUnavailable (a not-ready one costs nothing)."""
        unavailable = sum(1 for i in range(replicas) if not self._ready(groups.get(i, {}), size))
        budget = max_unavailable(lws, replicas)
        for index in range(replicas - 1, -1, -1):
            group = groups.get(index, {})
            if not group or self._revision_of(group) == update:
                continue
            if not self._ready(group, size):
                self._delete_group(lws, group)
            elif unavailable < budget:
                self._delete_group(lws, group)
                unavailable += 1

    def _write_status(self, lws: Obj, groups: dict[int, dict[int, Obj]], replicas: int, size: int,
                      update: str) -> None:
        active = {i: g for i, g in groups.items() if i < replicas and 0 in g
                  and not g[0]["metadata"].get("deletionTimestamp")}
        ready = sum(1 for g in active.values() if self._ready(g, size))
        updated = sum(1 for g in active.values()
                      if all((p["metadata"].get("labels") or {}).get(REVISION_LABEL) == update for p in g.values()))
        old = copy.deepcopy(lws.get("status") or {})
        generation = lws["metadata"].get("generation", 1)
        # the generation this sync acted on, on the status and on each condition, as upstream writes both since
        # v0.9.0: a reader trusts the counts only once it is at least metadata.generation (before the first sync
        # after a spec change they still describe the old template and read as settled). Before v0.9.0 neither
        # exists (api/leaderworkerset/v1/leaderworkerset_types.go@v0.8.0 has no such field, and its conditions
        # are made without one), so an older release writes the status without them.
        stamped = self.release >= OBSERVED_GENERATION_SINCE
        status: Obj = {**old, "replicas": len(active), "readyReplicas": ready, "updatedReplicas": updated,
                       "hpaPodSelector": f"{NAME_LABEL}={lws['metadata']['name']},{WORKER_LABEL}=0"}
        status.pop("observedGeneration", None)
        if stamped:
            status["observedGeneration"] = generation
        before = {c.get("type"): c for c in old.get("conditions") or []}
        available = ready >= replicas
        conditions = []
        for type_, on, reason, message in (
                ("Available", available, "AllGroupsReady", "All replicas are ready"),
                ("Progressing", updated < replicas or not available, "GroupsProgressing", "Replicas are progressing"),
                ("UpdateInProgress", updated < replicas, "GroupsUpdating", "Rolling Upgrade is in progress")):
            state = "True" if on else "False"
            prior = before.get(type_) or {}
            since = prior.get("lastTransitionTime") if prior.get("status") == state else None
            condition = {"type": type_, "status": state, "reason": reason, "message": message,
                         "lastTransitionTime": since or self.clock.timestamp()}
            conditions.append({**condition, "observedGeneration": generation} if stamped else condition)
        status["conditions"] = conditions
        if status != old:
            self.store.mutate(LWS, lws["metadata"]["namespace"], lws["metadata"]["name"],
                              lambda obj: obj.__setitem__("status", status), status=True)
