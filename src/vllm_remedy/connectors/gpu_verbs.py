"""The ``@k8s`` verbs that read the nodes and what their GPUs hold: ``k8s-nodes`` (every node and every GPU-holding
pod cluster-wide) and ``k8s-gpu-metrics`` (the DCGM exporter's metrics on the nodes the host's pods run on).

Apart from ``verbs`` because these read beyond the host's workload - cluster-wide pods, other namespaces' exporters -
and work for every workload kind alike (``workload_selector``), where the others read one kind's objects.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.connectors.scope import Scope, VerbError, json_line
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.dcgm import EXPORTER_NAMESPACE, EXPORTER_PORT, EXPORTER_SELECTOR
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.gpus import holds_resources, pod_gpu_request
from vllm_remedy.kube.kinds import KINDS
from vllm_remedy.kube.lws_history import NAME_LABEL as LWS_NAME_LABEL
from vllm_remedy.kube.selectors import selector_string
from vllm_remedy.kube.stopped import stopped_throughout


def trim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The parts of a pod the GPU picture needs: who it is, where it runs, what it requests."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}

    def slim(containers: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        return [{"name": c.get("name"), "resources": c.get("resources") or {}} for c in containers or []]

    return {
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "labels": meta.get("labels") or {}},
        "spec": {
            "nodeName": spec.get("nodeName"),
            "containers": slim(spec.get("containers")),
            "initContainers": slim(spec.get("initContainers")),
        },
        "status": {"phase": (pod.get("status") or {}).get("phase")},
    }


def workload_selector(scope: Scope) -> dict[str, Any]:
    """The label selector of the host's pods, whatever its kind: an LWS's name label (it has none of its own),
    KServe's Deployment's for an InferenceService, the object's own ``spec.selector`` otherwise."""
    if scope.kind == "leaderworkerset":
        return {"matchLabels": {LWS_NAME_LABEL: scope.deployment}}
    kind = KINDS[scope.kind]
    if kind.word == "inferenceservice":  # the pods are KServe's Deployment's
        workload = scope.client.get_deployment(scope.namespace, f"{scope.deployment}-predictor")
    elif kind.word == "deployment":
        workload = scope.client.get_deployment(scope.namespace, scope.deployment)
    else:
        workload = scope.client.request(
            "GET", scope.client.object_path(scope.namespace, kind.resource, scope.deployment, kind.group)
        )
    return dict((workload.get("spec") or {}).get("selector") or {})


def verb_nodes(scope: Scope, args: list[str]) -> list[str]:
    """Nodes and every GPU-holding pod cluster-wide: free GPUs can only be counted against all holders."""
    if args:
        raise VerbError("usage: k8s-nodes")
    selector = workload_selector(scope)
    picture = scope.client.derived("k8s-nodes", lambda: _gpu_picture(scope.client))
    # _line's sorted keys, with the cluster-wide part serialised once per run (a cluster of N pods and N hosts
    # would otherwise cost N² pod serialisations)
    return [f'{{"namespace":{json_line(scope.namespace)},{picture},"selector":{json_line(selector)}}}']


def _gpu_picture(client: KubeClient) -> str:
    """``"nodes":[...],"pods":[...]`` - every node and every GPU-holding pod (trimmed) - as one JSON fragment."""
    holders = [
        trim_pod(p)
        for p in client.list_pods(None)
        if (p.get("spec") or {}).get("nodeName") and holds_resources(p) and pod_gpu_request(p)
    ]
    return f'"nodes":{json_line(client.list_nodes())},"pods":{json_line(holders)}'


def _exporters(scope: Scope) -> tuple[list[dict[str, Any]], str | None]:
    """DCGM exporter pods by label: cluster-wide, else in the GPU operator's namespace when RBAC allows no more."""
    try:
        return scope.client.list_pods(None, EXPORTER_SELECTOR), None
    except KubeError as exc:
        if exc.status != 403:
            return [], str(exc)
    try:
        return scope.client.list_pods(EXPORTER_NAMESPACE, EXPORTER_SELECTOR), None
    except KubeError as exc:
        return [], str(exc)


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def verb_gpu_metrics(scope: Scope, args: list[str]) -> list[str]:
    """The DCGM exporter's metrics from every node the workload's pods run on, read through pods/proxy: what the
    GPUs hold, including memory no pod of ours accounts for (runbook step 3). Errors are data, per node."""
    if args:
        raise VerbError("usage: k8s-gpu-metrics")
    selector = selector_string(workload_selector(scope))
    before = scope.client.list_pods(scope.namespace, selector)
    nodes = sorted({str(p["spec"]["nodeName"]) for p in before if (p.get("spec") or {}).get("nodeName")})
    exporters, list_error = _exporters(scope) if nodes else ([], None)
    out: dict[str, dict[str, Any]] = {}
    for node in nodes:
        here = sorted(
            (p for p in exporters if (p.get("spec") or {}).get("nodeName") == node),
            key=lambda p: (not _ready(p), p["metadata"]["name"]),
        )
        if not here:
            out[node] = {
                "missing": list_error is None,
                "error": list_error or f"no pod labelled {EXPORTER_SELECTOR} runs on this node",
            }
            continue
        meta = here[0]["metadata"]
        row: dict[str, Any] = {"exporter": f"{meta['namespace']}/{meta['name']}", "ready": _ready(here[0])}
        try:
            row["text"] = scope.client.pod_proxy(meta["namespace"], meta["name"], EXPORTER_PORT, "metrics")
        except KubeError as exc:
            row.update(error=str(exc), status=exc.status)
        out[node] = row
    after = scope.client.list_pods(scope.namespace, selector) if nodes else []
    return [
        json_line(
            {
                "nodes": out,
                "selector": EXPORTER_SELECTOR,
                "port": EXPORTER_PORT,
                "pods": stopped_throughout(
                    before, after, scope.container, scope.client.server_time() if after else 0.0
                ),
            }
        )
    ]
