"""How KServe runs vLLM: an InferenceService predictor and its serving runtime → the pod spec (pure, no I/O).

Why one module both sides read: the rehearsal cluster's KServe controller builds the predictor's Deployment
from it, and the tools read the vLLM command line an InferenceService runs through it — so the memory model
judges exactly the argv the pods get. What KServe does (``pkg/controller/v1beta1/inferenceservice``, raw
deployment mode), modelled and no code copied:

+ ``spec.predictor.model`` names a ``modelFormat`` (and optionally a ``runtime``); the runtime is that
  ServingRuntime in the namespace, else that ClusterServingRuntime; with no name, the first one of either
  (namespace first, by name) listing the format with ``autoSelect``; else, for formats ``vllm`` and
  ``huggingface``, :data:`BUILTIN_RUNTIME` (a fixed vLLM OpenAI server, as clusters commonly install).
+ The model's container fields merge onto the runtime's ``kserve-container``: ``args`` are *appended* to the
  runtime's, ``image``/``command``/``resources`` replace the runtime's when set, ``env`` entries merge by name.
  ``{{.Name}}`` in runtime args becomes the InferenceService's name.
+ ``spec.predictor.containers`` is the custom-container form: the containers are the pod's, as written.
+ The predictor's pod-level fields (nodeSelector, tolerations, volumes, …) are the pod spec's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]

GROUP = "serving.kserve.io"
CONTAINER = "kserve-container"
ISVC_LABEL = "serving.kserve.io/inferenceservice"
#: Fields of a PredictorSpec that are KServe's, not the pod's (ComponentExtensionSpec and the predictors).
COMPONENT_FIELDS = frozenset({
    "model", "containers", "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType",
    "containerConcurrency", "timeout", "canaryTrafficPercent", "logger", "batcher", "labels", "annotations",
    "deploymentStrategy", "autoScaling", "workerSpec", "storageUris",
})
#: The runtime used when none is named or auto-selected for a vLLM/Hugging Face model.
BUILTIN_RUNTIME: Obj = {
    "apiVersion": f"{GROUP}/v1alpha1", "kind": "ClusterServingRuntime", "metadata": {"name": "kserve-vllm"},
    "spec": {"supportedModelFormats": [{"name": "vllm", "autoSelect": True},
                                       {"name": "huggingface", "autoSelect": True}],
             "containers": [{"name": CONTAINER, "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                             "args": [], "ports": [{"name": "http", "containerPort": 8000}],
                             "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5}}]},
}
BUILTIN_FORMATS = ("vllm", "huggingface")


class RuntimeMissing(ValueError):
    """No serving runtime supports the predictor's model (KServe's ``NoSupportingRuntime``)."""


def predictor_of(isvc: Mapping[str, Any]) -> Obj:
    """``spec.predictor`` (an empty mapping when absent)."""
    return dict((isvc.get("spec") or {}).get("predictor") or {})


def uses_model(isvc: Mapping[str, Any]) -> bool:
    """Whether the predictor is the ``model`` form (a runtime's container plus ``model.args``)."""
    return isinstance(predictor_of(isvc).get("model"), Mapping)


def _formats(runtime: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [f for f in (runtime.get("spec") or {}).get("supportedModelFormats") or [] if isinstance(f, Mapping)]


def pick_runtime(isvc: Mapping[str, Any], runtimes: Sequence[Mapping[str, Any]],
                 cluster_runtimes: Sequence[Mapping[str, Any]]) -> Obj:
    """The serving runtime the model form runs with (see the module docstring); RuntimeMissing names why not."""
    model = predictor_of(isvc).get("model") or {}
    fmt = str((model.get("modelFormat") or {}).get("name") or "")
    wanted = model.get("runtime")
    if wanted:
        for found in (*runtimes, *cluster_runtimes):
            if (found.get("metadata") or {}).get("name") == wanted:
                return copy.deepcopy(dict(found))
        if wanted == BUILTIN_RUNTIME["metadata"]["name"]:
            return copy.deepcopy(BUILTIN_RUNTIME)
        raise RuntimeMissing(f"runtime {wanted!r} is neither a ServingRuntime in the namespace nor a "
                             "ClusterServingRuntime")
    for group in (runtimes, cluster_runtimes):
        for found in sorted(group, key=lambda r: str((r.get("metadata") or {}).get("name"))):
            if any(f.get("name") == fmt and f.get("autoSelect") for f in _formats(found)):
                return copy.deepcopy(dict(found))
    if fmt in BUILTIN_FORMATS:
        return copy.deepcopy(BUILTIN_RUNTIME)
    raise RuntimeMissing(f"no runtime found to support predictor with model type {fmt or '(none)'}")


def _render(args: Sequence[Any], name: str) -> list[str]:
    return [str(a).replace("{{.Name}}", name) for a in args]


def runtime_container(runtime: Mapping[str, Any], name: str) -> Obj:
    """The runtime's ``kserve-container`` (its first container when none is so named), placeholders rendered."""
    containers = [c for c in (runtime.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    base = next((c for c in containers if c.get("name") == CONTAINER), containers[0] if containers else {})
    out = copy.deepcopy(dict(base))
    out["name"] = CONTAINER
    out["args"] = _render(out.get("args") or [], name)
    return out


def merge_model(runtime: Mapping[str, Any], model: Mapping[str, Any], name: str) -> Obj:
    """The model's container fields merged onto the runtime's container, as KServe does (args appended)."""
    out = runtime_container(runtime, name)
    out["args"] = [*out["args"], *[str(a) for a in model.get("args") or []]]
    for key in ("image", "command", "resources", "imagePullPolicy", "readinessProbe", "livenessProbe"):
        if model.get(key):
            out[key] = copy.deepcopy(model[key])
    if model.get("env"):
        env = {e.get("name"): e for e in out.get("env") or []}
        env.update({e.get("name"): copy.deepcopy(e) for e in model["env"]})
        out["env"] = list(env.values())
    return out


def pod_spec(isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> Obj:
    """The predictor's pod spec: pod-level fields plus either the merged model container or the containers."""
    predictor = predictor_of(isvc)
    name = str((isvc.get("metadata") or {}).get("name") or "")
    spec: Obj = {k: copy.deepcopy(v) for k, v in predictor.items() if k not in COMPONENT_FIELDS}
    if isinstance(predictor.get("model"), Mapping):
        if runtime is None:
            raise RuntimeMissing("the model form needs a serving runtime")
        spec["containers"] = [merge_model(runtime, predictor["model"], name)]
    else:
        spec["containers"] = copy.deepcopy(list(predictor.get("containers") or []))
    return spec


def model_args_from(container: Mapping[str, Any], runtime: Mapping[str, Any], name: str) -> list[str] | None:
    """Inverse of :func:`merge_model` for ``args``: the model args a pod's container was built with, or None when
    its args do not start with the runtime's (the runtime changed since: not ours to reconstruct)."""
    base = runtime_container(runtime, name)["args"]
    args = [str(a) for a in container.get("args") or []]
    return args[len(base):] if args[: len(base)] == base else None


def manifest_pod_specs(doc: Any, docs: Sequence[Any]) -> list[tuple[str, Obj]]:
    """For manifest files: ``[("spec.predictor", pod spec)]`` of a model-form InferenceService, its runtime taken from
    the ServingRuntime/ClusterServingRuntime documents of the same file, else :data:`BUILTIN_RUNTIME`; [] for any
    other document, and for a predictor no runtime supports (a copy: editing it edits nothing)."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "InferenceService" or not uses_model(doc):
        return []
    runtimes = [d for d in docs if isinstance(d, Mapping) and d.get("kind") == "ServingRuntime"]
    cluster = [d for d in docs if isinstance(d, Mapping) and d.get("kind") == "ClusterServingRuntime"]
    try:
        return [("spec.predictor", pod_spec(doc, pick_runtime(doc, runtimes, cluster)))]
    except RuntimeMissing:
        return []
