"""The verb language the ``@k8s`` connector runs in place of shell commands: reads through the kube layer.

Why verbs: every pyinfra fact goes through ``run_shell_command``, and a cluster has no shell. Facts send
a short command (``k8s-get deployment``); the connector answers with JSON lines, exactly as a shell
would answer with text. Verbs only *read* — writes happen in operations' FunctionCommands, with the
guarded patches of ``kube/``. Each verb returns the raw API objects a fact needs in ONE answer, so the
fact's ``process()`` stays pure and sees one consistent read. What every verb works on and how it answers is
``scope``; the two verbs that read the nodes and their GPUs are ``gpu_verbs``; the rest and the dispatch are here.

Verbs (all scoped to the host's namespace and workload)::

    k8s-get deployment                      the Deployment
    k8s-get replicasets                     ReplicaSets matching its selector
    k8s-get pods                            pods matching its selector
    k8s-get node <name>                     one Node
    k8s-deployment                          {deployment, container, context, annotation_prefix}
    k8s-history                             {deployment, replicasets, container, annotation_prefix}
    k8s-pods [--logs none|crashed|all] [--tail N]
                                            {deployment, replicasets, pods, logs, container}
    k8s-logs <pod> <container> [--previous] [--tail N]
                                            {pod, container, previous, text}
    k8s-nodes                               {nodes, pods (every GPU holder, trimmed), selector, namespace}
    k8s-gpu-metrics                         {nodes: {node: {exporter, text | error, status}}, pods, selector}:
                                            the DCGM exporter's /metrics on each node our pods run on (pods/proxy)
    k8s-events                              {events (Warning Events on the Deployment's pods) | error}
    k8s-statefulset                         {statefulset, revisions (ControllerRevisions), pods, logs, container,
                                            annotation_prefix} (a StatefulSet host; k8s-nodes reads its selector)
    k8s-inferenceservice                    {inferenceservice, runtime, template, deployment (KServe's), replicasets,
                                            pods, logs, container, annotation_prefix}
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from vllm_remedy.connectors.gpu_verbs import verb_gpu_metrics, verb_nodes
from vllm_remedy.connectors.scope import Scope, VerbError, json_line
from vllm_remedy.kube import inferenceservice as kserve_reads
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.health import container_health
from vllm_remedy.kube.lws_wait import read_set as lws_read_set
from vllm_remedy.kube.selectors import selector_string

#: Lines of a container log the Pods fact reads: a vLLM start (weights, profiling, KV cache, error) fits.
DEFAULT_TAIL = 3000
LOG_MODES = ("none", "crashed", "all")


def _tail(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise VerbError(f"--tail {value!r}: expected a positive number of lines") from None
    if number <= 0:
        raise VerbError(f"--tail {value!r}: expected a positive number of lines")
    return number


def _options(args: list[str], flags: dict[str, bool], usage: str) -> tuple[list[str], dict[str, str | bool]]:
    """Split ``args`` into positionals and ``--name [value]`` options; ``flags`` says which take a value."""
    positional: list[str] = []
    found: dict[str, str | bool] = {}
    items = iter(args)
    for arg in items:
        if not arg.startswith("--"):
            positional.append(arg)
            continue
        name, _, inline = arg[2:].partition("=")
        if name not in flags:
            raise VerbError(f"unknown option --{name}; usage: {usage}")
        if flags[name]:
            value = inline or next(items, None)
            if value is None:
                raise VerbError(f"--{name} needs a value; usage: {usage}")
            found[name] = value
        else:
            found[name] = True
    return positional, found


def _deployment_and_selector(scope: Scope) -> tuple[dict[str, Any], str]:
    deployment = scope.client.get_deployment(scope.namespace, scope.deployment)
    return deployment, selector_string((deployment.get("spec") or {}).get("selector"))


def verb_get(scope: Scope, args: list[str]) -> list[str]:
    """Raw objects for ad-hoc facts, scoped to the target Deployment's selector so no other workload leaks in."""
    usage = "k8s-get deployment|replicasets|pods|node <name>"
    if args == ["deployment"]:
        return [json_line(scope.client.get_deployment(scope.namespace, scope.deployment))]
    if args in (["replicasets"], ["pods"]):
        _, selector = _deployment_and_selector(scope)
        lister = scope.client.list_replicasets if args[0] == "replicasets" else scope.client.list_pods
        return [json_line(item) for item in lister(scope.namespace, selector)]
    if len(args) == 2 and args[0] == "node":
        return [json_line(scope.client.get_node(args[1]))]
    raise VerbError(f"usage: {usage}")


def verb_deployment(scope: Scope, args: list[str]) -> list[str]:
    """The Deployment plus the scope the Deployment fact needs to find our container and annotations."""
    if args:
        raise VerbError("usage: k8s-deployment")
    deployment = scope.client.get_deployment(scope.namespace, scope.deployment)
    return [json_line({"deployment": deployment, "container": scope.container, "context": scope.client.context,
                       "annotation_prefix": scope.annotation_prefix})]


def verb_history(scope: Scope, args: list[str]) -> list[str]:
    """Deployment and its ReplicaSets in one call: rollout history lives in the ReplicaSets' templates."""
    if args:
        raise VerbError("usage: k8s-history")
    deployment, selector = _deployment_and_selector(scope)
    replicasets = scope.client.list_replicasets(scope.namespace, selector)
    return [json_line({"deployment": deployment, "replicasets": replicasets, "container": scope.container,
                       "annotation_prefix": scope.annotation_prefix})]


def trim_event(event: dict[str, Any]) -> dict[str, Any]:
    """The parts of a core/v1 Event that say a pod died: which pod, why, how often, when first and last."""
    involved = event.get("involvedObject") or {}
    series = event.get("series") or {}
    source = event.get("source") or {}
    return {"pod": involved.get("name"), "uid": involved.get("uid"), "reason": event.get("reason"),
            "component": event.get("reportingComponent") or source.get("component"), "message": event.get("message"),
            "count": int(series.get("count") or event.get("count") or 1),
            "first": event.get("firstTimestamp") or event.get("eventTime"),
            "last": series.get("lastObservedTime") or event.get("lastTimestamp") or event.get("eventTime")}


def verb_events(scope: Scope, args: list[str]) -> list[str]:
    """Warning Events on pods of the Deployment (named ``<deployment>-…``): the only trace of pods that crash-looped
    and were deleted since (a Recreate rollout, a colleague's edit) — for the hour Events live. Unreadable Events
    (no RBAC ``list events``) are an ``error``, not a failed fact: the rest of the evidence still stands."""
    if args:
        raise VerbError("usage: k8s-events")
    prefix = f"{scope.deployment}-"
    try:
        answer = scope.client.request("GET", f"/api/v1/namespaces/{scope.namespace}/events",
                                      query=[("fieldSelector", "involvedObject.kind=Pod,type=Warning")])
    except KubeError as exc:
        return [json_line({"events": None, "error": str(exc)})]
    events = [trim_event(e) for e in (answer or {}).get("items") or []
              if str((e.get("involvedObject") or {}).get("name") or "").startswith(prefix)]
    return [json_line({"events": events})]


def container_log(scope: Scope, pod: str, container: str, previous: bool, tail: int) -> dict[str, Any]:
    """One container log, or the server's one-line refusal (e.g. no previous container yet)."""
    try:
        text = scope.client.pod_log(scope.namespace, pod, container, previous=previous, tail_lines=tail)
    except KubeError as exc:
        return {"previous": previous, "error": str(exc)}
    return {"previous": previous, "text": text}


def wanted_logs(pod: dict[str, Any], mode: str) -> list[tuple[str, bool]]:
    """(container, previous) pairs worth reading: the last death of failed containers; with ``all``, live ones too.

    A container dead *right now* has its log as the current one; after a restart the death is in ``previous``.
    """
    out: list[tuple[str, bool]] = []
    if mode == "none":
        return out
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        health = container_health(status)
        if health.failed or health.crash_looping or health.host_oom_killed:
            out.append((health.name, not health.terminated_now))
        elif mode == "all" and health.state == "running":
            out.append((health.name, False))
    return out


def verb_pods(scope: Scope, args: list[str]) -> list[str]:
    """Pods with the logs of their crashes in one round trip, so a diagnosis sees the CUDA OOM that killed them."""
    usage = "k8s-pods [--logs none|crashed|all] [--tail N]"
    positional, opts = _options(args, {"logs": True, "tail": True}, usage)
    if positional:
        raise VerbError(f"unexpected {positional[0]!r}; usage: {usage}")
    mode = str(opts.get("logs", "crashed"))
    if mode not in LOG_MODES:
        raise VerbError(f"--logs {mode!r}: expected one of {', '.join(LOG_MODES)}")
    tail = _tail(str(opts["tail"])) if "tail" in opts else DEFAULT_TAIL
    deployment, selector = _deployment_and_selector(scope)
    replicasets = scope.client.list_replicasets(scope.namespace, selector)
    pods = scope.client.list_pods(scope.namespace, selector)
    logs: dict[str, dict[str, Any]] = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        for container, previous in wanted_logs(pod, mode):
            logs[f"{name}/{container}"] = container_log(scope, name, container, previous, tail)
    return [json_line({"deployment": deployment, "replicasets": replicasets, "pods": pods, "logs": logs,
                       "container": scope.container})]


def verb_logs(scope: Scope, args: list[str]) -> list[str]:
    """One container log on demand, for when the pods verb's automatic choice is not the log wanted."""
    usage = "k8s-logs <pod> <container> [--previous] [--tail N]"
    positional, opts = _options(args, {"previous": False, "tail": True}, usage)
    if len(positional) != 2:
        raise VerbError(f"usage: {usage}")
    pod, container = positional
    tail = _tail(str(opts["tail"])) if "tail" in opts else None
    text = scope.client.pod_log(scope.namespace, pod, container, previous=bool(opts.get("previous")),
                                tail_lines=tail)
    return [json_line({"pod": pod, "container": container, "previous": bool(opts.get("previous")), "text": text})]


def verb_statefulset(scope: Scope, args: list[str]) -> list[str]:
    """k8s-statefulset: {statefulset, revisions, pods, container} — a StatefulSet host's object, its
    ControllerRevisions and the pods its selector matches, read together."""
    if args:
        raise VerbError("usage: k8s-statefulset")
    client = scope.client
    sts = client.request("GET", client.object_path(scope.namespace, "statefulsets", scope.deployment))
    selector = selector_string((sts.get("spec") or {}).get("selector"))
    revisions = client.request("GET", client.object_path(scope.namespace, "controllerrevisions"),
                               query=[("labelSelector", selector)] if selector else [])
    pods = client.list_pods(scope.namespace, selector)
    logs = {f"{p['metadata']['name']}/{c}": container_log(scope, p["metadata"]["name"], c, previous, DEFAULT_TAIL)
            for p in pods for c, previous in wanted_logs(p, "crashed")}  # what each crash died of, as k8s-pods
    return [json_line({"statefulset": sts, "revisions": list(revisions.get("items") or []), "pods": pods, "logs": logs,
                       "container": scope.container, "annotation_prefix": scope.annotation_prefix})]


def verb_leaderworkerset(scope: Scope, args: list[str]) -> list[str]:
    """k8s-leaderworkerset: {leaderworkerset, revisions, pods, container} — an LWS host's object, its
    ControllerRevisions and its pods (by the set's name label), read together."""
    if args:
        raise VerbError("usage: k8s-leaderworkerset")
    lws, revisions, pods = lws_read_set(scope.client, scope.namespace, scope.deployment)
    logs = {f"{p['metadata']['name']}/{c}": container_log(scope, p["metadata"]["name"], c, previous, DEFAULT_TAIL)
            for p in pods for c, previous in wanted_logs(p, "crashed")}  # what each crash died of, as k8s-pods
    return [json_line({"leaderworkerset": lws, "revisions": revisions, "pods": pods, "logs": logs,
                       "container": scope.container, "annotation_prefix": scope.annotation_prefix})]


def verb_inferenceservice(scope: Scope, args: list[str]) -> list[str]:
    """k8s-inferenceservice: {inferenceservice, runtime, template, deployment, replicasets, pods, logs, container} —
    the InferenceService, its serving runtime, the pod template its predictor makes (``kube.inferenceservice``), and
    the Deployment KServe owns for it with its ReplicaSets and pods (crashed containers' logs read), together."""
    if args:
        raise VerbError("usage: k8s-inferenceservice")
    client = scope.client
    isvc = kserve_reads.read_isvc(client, scope.namespace, scope.deployment)
    runtime = kserve_reads.runtime_for(client, isvc)
    owned = kserve_reads.owned_deployment(client, isvc)
    selector = selector_string((owned.get("spec") or {}).get("selector")) if owned else ""
    replicasets = client.list_replicasets(scope.namespace, selector) if selector else []
    pods = client.list_pods(scope.namespace, selector) if selector else []
    logs = {f"{p['metadata']['name']}/{c}": container_log(scope, p["metadata"]["name"], c, previous, DEFAULT_TAIL)
            for p in pods for c, previous in wanted_logs(p, "crashed")}
    return [json_line({"inferenceservice": isvc, "runtime": runtime,
                       "template": kserve_reads.template_of(isvc, runtime),
                       "deployment": owned, "replicasets": replicasets, "pods": pods, "logs": logs,
                       "container": scope.container, "annotation_prefix": scope.annotation_prefix})]


VERBS: dict[str, Callable[[Scope, list[str]], list[str]]] = {
    "k8s-get": verb_get,
    "k8s-deployment": verb_deployment,
    "k8s-history": verb_history,
    "k8s-pods": verb_pods,
    "k8s-logs": verb_logs,
    "k8s-nodes": verb_nodes,
    "k8s-gpu-metrics": verb_gpu_metrics,
    "k8s-events": verb_events,
    "k8s-statefulset": verb_statefulset,
    "k8s-leaderworkerset": verb_leaderworkerset,
    "k8s-inferenceservice": verb_inferenceservice,
}


#: Verbs that read one workload kind: on a host of another kind they say so instead of answering 404.
KIND_VERBS = {"k8s-get": "deployment", "k8s-deployment": "deployment", "k8s-history": "deployment",
              "k8s-pods": "deployment", "k8s-events": "deployment", "k8s-statefulset": "statefulset",
              "k8s-leaderworkerset": "leaderworkerset", "k8s-inferenceservice": "inferenceservice"}


def split_command(command: str) -> list[str]:
    """Words of a verb command; a cluster has no shell, so a bad quote or empty command is a VerbError."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise VerbError(f"cannot parse command {command!r}: {exc}") from None
    if not words:
        raise VerbError("empty command; the @k8s connector runs verbs: " + ", ".join(VERBS))
    return words


def run_verb(scope: Scope, command: str) -> list[str]:
    """JSON lines for one verb command; VerbError for a bad command, KubeError when the API refuses."""
    words = split_command(command)
    handler = VERBS.get(words[0])
    if handler is None:
        raise VerbError(f"{words[0]}: not a @k8s verb (a cluster has no shell; known verbs: {', '.join(VERBS)})")
    wants = KIND_VERBS.get(words[0])
    if wants is not None and wants != scope.kind:
        raise VerbError(f"{words[0]}: reads a {wants}, and this host is a {scope.kind} (not supported for it yet)")
    return handler(scope, words[1:])
