"""KServe's InferenceService controller in raw deployment mode: one owned Deployment per predictor, and status.

What is modelled (KServe ``pkg/controller/v1beta1/inferenceservice``, ``RawDeployment`` mode; no code copied):

+ The predictor becomes the Deployment ``<isvc>-predictor`` (controller ownerReference to the InferenceService,
  labels ``serving.kserve.io/inferenceservice`` / ``component: predictor`` / ``app: isvc.<isvc>-predictor``),
  its pod spec built by :mod:`vllm_remedy.vllm.kserve` (``model.args`` appended to the serving runtime's
  container, or ``predictor.containers`` as written); ``minReplicas`` (default 1) is its replica count. The
  controller owns that Deployment: an edit to it is overwritten on the next sync, as KServe does.
+ Revisions: raw mode has no Knative Revisions, so a predictor revision here is the owned Deployment's
  revision (``<isvc>-predictor-<00001>`` from ``deployment.kubernetes.io/revision``). ``latestCreatedRevision``
  follows every new Deployment revision; ``latestReadyRevision`` moves only once that revision has fully rolled
  out, the one it replaces becoming ``previousRolledoutRevision`` — so while a new predictor crash-loops the
  two differ, which is how a rollback target is found.
+ ``canaryTrafficPercent``: raw mode has one Deployment behind one Service, so KServe cannot split traffic; it
  is accepted and not honoured — ``status.components.predictor.traffic`` always gives 100% to the latest created
  revision (the pods the Deployment runs), with ``latestRevision: true``.
+ Conditions ``IngressReady`` (always True: no ingress is modelled), ``PredictorReady`` (the Deployment rolled
  out; else its reason, or ``NoSupportingRuntime``) and ``Ready`` (both).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.controllers.defaults import default_deployment
from vllm_remedy.sim.controllers.hashing import templates_equal
from vllm_remedy.sim.controllers.manager import Manager
from vllm_remedy.sim.controllers.util import REVISION, controlled_by, controller_ref, owner_ref, set_condition
from vllm_remedy.sim.store import ApiError, Store
from vllm_remedy.vllm import kserve

Obj = dict[str, Any]
ISVC = "inferenceservices.serving.kserve.io"
RUNTIMES, CLUSTER_RUNTIMES = "servingruntimes.serving.kserve.io", "clusterservingruntimes.serving.kserve.io"
DEPLOY = "deployments.apps"


def deployment_name(isvc_name: str) -> str:
    """The raw-mode predictor Deployment's name."""
    return f"{isvc_name}-predictor"


def revision_name(isvc_name: str, number: int) -> str:
    """A predictor revision's name, Knative-style (see the module docstring)."""
    return f"{deployment_name(isvc_name)}-{number:05d}"


class InferenceServiceController:
    """Reconciles each InferenceService's predictor Deployment and status; ``rolled_out`` judges a Deployment."""

    def __init__(self, store: Store, clock: Clock, manager: Manager, rolled_out: Callable[[Obj], bool]) -> None:
        self.store, self.clock, self.manager, self.rolled_out = store, clock, manager, rolled_out
        manager.register("inferenceservice", self.sync)
        manager.register("inferenceservice-gc", self._collect)

    def on_inferenceservice(self, namespace: str, name: str, obj: Obj, kind: str) -> None:
        """Informer hook: a change queues a sync; a deletion deletes the owned Deployment (its GC cascades)."""
        if kind == "DELETED":
            self.manager.enqueue("inferenceservice-gc", namespace, obj["metadata"].get("uid", ""))
        else:
            self.manager.enqueue("inferenceservice", namespace, name)

    def on_deployment(self, namespace: str, obj: Obj) -> None:
        """Informer hook: the owned Deployment's status moved (or someone edited it): sync the owner."""
        ref = controller_ref(obj)
        if ref is not None and ref.get("kind") == "InferenceService":
            self.manager.enqueue("inferenceservice", namespace, ref["name"])

    def _collect(self, namespace: str, uid: str) -> None:
        for obj in self.store.list(DEPLOY, namespace, lambda o: controlled_by(o, uid))[0]:
            with contextlib.suppress(ApiError):
                self.store.delete(DEPLOY, namespace, obj["metadata"]["name"])

    def _runtime(self, isvc: Obj) -> Obj:
        ns = isvc["metadata"]["namespace"]
        return kserve.pick_runtime(isvc, self.store.list(RUNTIMES, ns)[0], self.store.list(CLUSTER_RUNTIMES)[0])

    def _desired(self, isvc: Obj, runtime: Obj | None) -> Obj:
        name, ns = isvc["metadata"]["name"], isvc["metadata"]["namespace"]
        predictor = kserve.predictor_of(isvc)
        labels = {**(predictor.get("labels") or {}), kserve.ISVC_LABEL: name, "component": "predictor",
                  "app": f"isvc.{deployment_name(name)}"}
        meta: Obj = {"labels": labels}
        if predictor.get("annotations"):
            meta["annotations"] = dict(predictor["annotations"])
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": deployment_name(name), "namespace": ns, "labels": dict(labels),
                             "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment"},
                             "ownerReferences": [owner_ref(isvc)]},
                "spec": {"replicas": int(predictor.get("minReplicas", 1) or 1),
                         "selector": {"matchLabels": {"app": labels["app"]}},
                         "template": {"metadata": meta, "spec": kserve.pod_spec(isvc, runtime)}}}

    def sync(self, namespace: str, name: str) -> None:
        """Build or correct the predictor Deployment, then write the status it implies."""
        isvc = self.store.find(ISVC, namespace, name)
        if isvc is None or isvc["metadata"].get("deletionTimestamp"):
            return
        runtime = None
        if kserve.uses_model(isvc):
            try:
                runtime = self._runtime(isvc)
            except kserve.RuntimeMissing as exc:
                self._write_status(isvc, None, ("NoSupportingRuntime", str(exc)))
                return
        desired = default_deployment(self._desired(isvc, runtime))
        found = self.store.find(DEPLOY, namespace, desired["metadata"]["name"])
        if found is None:
            found = self.store.create(DEPLOY, desired)
        elif not controlled_by(found, isvc["metadata"]["uid"]):
            self._write_status(isvc, None, ("DeploymentNotOwned", f"deployment {found['metadata']['name']} exists "
                                                                  "and is not owned by this InferenceService"))
            return
        else:
            found = self._correct(found, desired)
        self._write_status(isvc, found, None)

    def _correct(self, found: Obj, desired: Obj) -> Obj:
        """The controller's desired spec wins over edits to the Deployment (only the fields it sets)."""
        spec, want = found.get("spec") or {}, desired["spec"]
        if spec.get("replicas") == want["replicas"] and templates_equal(spec.get("template"), want["template"]):
            return found

        def apply(obj: Obj) -> None:
            obj["spec"]["replicas"] = want["replicas"]
            obj["spec"]["template"] = copy.deepcopy(want["template"])

        return self.store.mutate(DEPLOY, found["metadata"]["namespace"], found["metadata"]["name"], apply)

    def _write_status(self, isvc: Obj, deployment: Obj | None, failure: tuple[str, str] | None) -> None:
        name = isvc["metadata"]["name"]
        old = isvc.get("status") or {}
        status = copy.deepcopy(old)
        now = self.clock.timestamp()
        predictor = dict((status.get("components") or {}).get("predictor") or {})
        ready, reason, message = False, "", ""
        if failure is not None:
            reason, message = failure
        elif deployment is not None:
            number = int((deployment["metadata"].get("annotations") or {}).get(REVISION, "0") or 0)
            if number:
                latest = revision_name(name, number)
                predictor["latestCreatedRevision"] = latest
                predictor["traffic"] = [{"revisionName": latest, "percent": 100, "latestRevision": True}]
                ready = self.rolled_out(deployment)
                if ready and predictor.get("latestReadyRevision") != latest:
                    if predictor.get("latestReadyRevision"):
                        predictor["previousRolledoutRevision"] = predictor["latestReadyRevision"]
                    predictor["latestReadyRevision"] = latest
                    predictor["latestRolledoutRevision"] = latest
            if not ready:
                reason, message = "RolloutInProgress", f"deployment {deployment['metadata']['name']} has not rolled out"
        status.setdefault("components", {})["predictor"] = predictor
        status["observedGeneration"] = isvc["metadata"].get("generation", 1)
        status["url"] = f"http://{name}-{isvc['metadata']['namespace']}.example.com"
        status["address"] = {"url": f"http://{deployment_name(name)}.{isvc['metadata']['namespace']}.svc.cluster.local"}
        status["deploymentMode"] = "RawDeployment"
        for cond_type, ok in (("IngressReady", True), ("PredictorReady", ready), ("Ready", ready)):
            cond = {"type": cond_type, "status": "True" if ok else "False", "lastTransitionTime": now}
            if not ok:
                cond.update(reason=reason, message=message)
            else:
                cond["reason"] = ""
            set_condition(status, cond)
            for c in status["conditions"]:  # KServe's conditions carry no empty reason
                if not c.get("reason"):
                    c.pop("reason", None)
        if status != old:
            with contextlib.suppress(ApiError):
                self.store.mutate(ISVC, isvc["metadata"]["namespace"], name,
                                  lambda obj: obj.__setitem__("status", status), status=True)

