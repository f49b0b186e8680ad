"""A KServe InferenceService as the tools read it: its serving runtime, the pod spec its predictor runs, the
Deployment KServe owns for it, and which predictor revision "the previous ready one" is.

Why the pod spec is rebuilt here rather than read off the owned Deployment: the InferenceService is what we
change, so diagnose, plan and the memory model must judge what *its* spec makes the pods run (the runtime's
container with ``model.args`` appended, :mod:`vllm_remedy.vllm.kserve`) — the same argv the controller gives
the pods, also before the controller has caught up.

Rollback target: in raw deployment mode a predictor revision is the owned Deployment's revision
(``<isvc>-predictor-<00001>``). While a new predictor has not become ready, KServe's
``status.components.predictor.latestReadyRevision`` still names the last one that did — that is "the previous
ready revision". Once the latest became ready (it broke later, e.g. under load), it is
``previousRolledoutRevision``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import NotFoundError
from vllm_remedy.vllm import kserve

_REVISION = re.compile(r"-(\d{5,})$")
REVISION_NOTE = "deployment.kubernetes.io/revision"


def runtimes(client: KubeClient, namespace: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """ServingRuntimes of the namespace and ClusterServingRuntimes ([] for either the cluster does not serve)."""
    found: list[list[dict[str, Any]]] = []
    for path in (client.object_path(namespace, "servingruntimes", group=f"{kserve.GROUP}/v1alpha1"),
                 f"/apis/{kserve.GROUP}/v1alpha1/clusterservingruntimes"):
        try:
            found.append(list(client.request("GET", path).get("items") or []))
        except NotFoundError:
            found.append([])
    return found[0], found[1]


def runtime_for(client: KubeClient, isvc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The serving runtime of the model form (None for the containers form); UserError when none supports it."""
    if not kserve.uses_model(isvc):
        return None
    namespaced, cluster_wide = runtimes(client, str((isvc.get("metadata") or {}).get("namespace") or ""))
    try:
        return kserve.pick_runtime(isvc, namespaced, cluster_wide)
    except kserve.RuntimeMissing as exc:
        raise UserError(f"predictor: {exc}") from None


def template_of(isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> dict[str, Any]:
    """The predictor as a pod template (``{"spec": ...}``): what the deploys' pure template code reads."""
    try:
        return {"spec": kserve.pod_spec(isvc, runtime)}
    except kserve.RuntimeMissing as exc:
        raise UserError(f"predictor: {exc}") from None


def owned_deployment(client: KubeClient, isvc: Mapping[str, Any]) -> dict[str, Any] | None:
    """KServe's raw-mode Deployment for the predictor, when it exists and this InferenceService controls it."""
    meta = isvc.get("metadata") or {}
    try:
        found = client.get_deployment(str(meta.get("namespace")), f"{meta.get('name')}-predictor")
    except NotFoundError:
        return None
    refs = (found.get("metadata") or {}).get("ownerReferences") or []
    return found if any(r.get("controller") and r.get("uid") == meta.get("uid") for r in refs) else None


def revision_number(name: str | None) -> int | None:
    """``llama-predictor-00003`` → 3."""
    match = _REVISION.search(name or "")
    return int(match.group(1)) if match else None


def predictor_status(isvc: Mapping[str, Any]) -> dict[str, Any]:
    """``status.components.predictor``."""
    return dict(((isvc.get("status") or {}).get("components") or {}).get("predictor") or {})


def previous_ready(isvc: Mapping[str, Any]) -> str | None:
    """The revision a rollback returns to (module docstring): latestReady while the latest is not it, else the
    previous rolled-out one; None when KServe records neither."""
    status = predictor_status(isvc)
    latest, ready = status.get("latestCreatedRevision"), status.get("latestReadyRevision")
    if ready and ready != latest:
        return str(ready)
    previous = status.get("previousRolledoutRevision")
    return str(previous) if previous and previous != latest else None


def revision_template(replicasets: list[Mapping[str, Any]], number: int) -> dict[str, Any] | None:
    """The pod template of the owned Deployment's ReplicaSet at ``number`` (None once it is gone or re-numbered)."""
    for rs in replicasets:
        if str(((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION_NOTE)) == str(number):
            return copy.deepcopy((rs.get("spec") or {}).get("template") or {})
    return None


def predictor_for(isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None, template: Mapping[str, Any],
                  container: str) -> dict[str, Any]:
    """``spec.predictor`` that makes the controller build ``template``'s vLLM container again: the model form gets
    the args after the runtime's (and the image/resources, when they differ from what it builds now); the containers
    form gets that container's args, command, image, env and resources. Other predictor fields stay as they are."""
    predictor = kserve.predictor_of(isvc)
    for key in ("nodeSelector", "affinity", "tolerations"):  # pod-level fields a revision may have placed differently
        value = (template.get("spec") or {}).get(key)
        if value != kserve.pod_spec(isvc, runtime).get(key):
            predictor[key] = copy.deepcopy(value)
            if value is None:
                predictor.pop(key)
    name = str((isvc.get("metadata") or {}).get("name") or "")
    old = next((c for c in (template.get("spec") or {}).get("containers") or [] if c.get("name") == container), None)
    if old is None:
        raise UserError(f"the revision's pod template has no container {container}")
    if runtime is not None and isinstance(predictor.get("model"), Mapping):
        args = kserve.model_args_from(old, runtime, name)
        if args is None:
            raise UserError("the revision's args do not start with the serving runtime's: the runtime changed since, "
                            "so its model args cannot be told apart")
        model = copy.deepcopy(dict(predictor["model"]))
        model["args"] = args
        built = kserve.merge_model(runtime, model, name)
        for key in ("image", "resources"):
            if old.get(key) != built.get(key) and old.get(key):
                model[key] = copy.deepcopy(old[key])
        predictor["model"] = model
        return predictor
    containers = copy.deepcopy(list(predictor.get("containers") or []))
    for c in containers:
        if c.get("name") == container:
            for key in ("args", "command", "image", "env", "resources"):
                if old.get(key) is not None:
                    c[key] = copy.deepcopy(old[key])
                else:
                    c.pop(key, None)
    predictor["containers"] = containers
    return predictor


def read_isvc(client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """The InferenceService object itself (404 as NotFoundError)."""
    return client.request("GET", isvc_path(namespace, name))


def isvc_path(namespace: str, name: str) -> str:
    """The InferenceService's API path: what writes target and ``observe`` keys the plan's basis by."""
    return KubeClient.object_path(namespace, "inferenceservices", name, f"{kserve.GROUP}/v1beta1")
