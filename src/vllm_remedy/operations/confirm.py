"""Runbook step 6 as a pyinfra operation: confirm the running revision and mark its ReplicaSet known-good.

:func:`judge` and :func:`mark` are every kind's step 6; ``operations.set_confirm`` feeds them a StatefulSet's or
LeaderWorkerSet's history and pods and marks its ControllerRevision, where its restore reads the mark.

The mark is what ``restore`` rolls back to first, so it is only written after every check passed in
cluster time; a revision that is already marked and still passes yields nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.kube.annotations import Keys, canonical_json, known_good_annotations
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.history import template_of
from vllm_remedy.operations.restore import read_route
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    deployment_object,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    pods_fact,
    refuse,
    show,
)
from vllm_remedy.prometheus import PrometheusError, instant_query
from vllm_remedy.remedies.confirm import ConfirmResult, confirm_revision, error_rate_check, fallback_check
from vllm_remedy.remedies.deployment_fields import deployment_fields
from vllm_remedy.remedies.enforce_eager import in_force
from vllm_remedy.remedies.fallback import shift_back_after
from vllm_remedy.vllm.cmdline import find_server


def _metrics_port(ctx: K8sHost, pod: dict[str, Any]) -> int:
    """The vLLM container's first declared port (vLLM serves /metrics next to the API), else vLLM's 8000."""
    spec = (pod.get("spec") or {})
    try:
        name = find_server(spec, ctx.container).container_name
    except UserError:  # a pod we cannot parse still gets the default port
        name = ctx.container
    for c in spec.get("containers") or []:
        if c.get("name") == name:
            for port in c.get("ports") or []:
                if port.get("containerPort"):
                    return int(port["containerPort"])
    return 8000


def read_metrics(ctx: K8sHost, names: list[str]) -> dict[str, str | None]:
    """Each pod's ``/metrics`` through the API server's pods/proxy (None when it does not answer)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            path = KubeClient.object_path(ctx.namespace, "pods", name, group="v1")
            pod = ctx.client.request("GET", path)
            out[name] = ctx.client.request("GET", f"{path}:{_metrics_port(ctx, pod)}/proxy/metrics",  # ":" unescaped
                                           expect_json=False)
        except KubeError:
            out[name] = None
    return out


def _mark(keys: Keys, reason: str, fields: dict[str, Any] | None, at: float) -> dict[str, str]:
    """The known-good mark, stamped when it is written, and the Deployment-level fields it was confirmed with
    (strategy, minReadySeconds, progressDeadlineSeconds: ``restore`` puts them back with the template; None for a
    kind whose restore writes only the template back).

    Not ``change-cause``: on a ReplicaSet it is the revision's CHANGE-CAUSE in ``rollout history``. Not our
    last-action keys: the deployment controller copies the Deployment's annotations (ours included) onto
    its new ReplicaSet, so they belong to the Deployment's last write, not to this mark.
    """
    marks = known_good_annotations(keys, at, reason)
    return marks if fields is None else {**marks, keys.deployment_fields: canonical_json(fields)}


def evaluate(ctx: K8sHost, deployment: dict[str, Any] | None = None) -> ConfirmResult | None:
    """Read the facts and metrics and judge step 6 (None when a fact failed and pyinfra failed the host);
    ``deployment`` is the Deployment already read, if the caller has it."""
    history = host.get_fact(RolloutHistory)
    pods = pods_fact(host, logs="all")
    if history is None or pods is None:
        return None
    deployment = deployment if deployment is not None else deployment_object(host)
    return judge(ctx, history, pods, deployment, template_of(deployment))


def judge(ctx: K8sHost, history: Mapping[str, Any], pods: Mapping[str, Any], workload: Mapping[str, Any],
          template: Mapping[str, Any], checks: Sequence[tuple[bool, str]] = ()) -> ConfirmResult:
    """Step 6 for any kind, over its history and pods in the RolloutHistory and Pods facts' shapes (``logs=all``):
    the ``/metrics`` of the current revision's pods, the toggles in force on ``workload`` running ``template``, the
    gateway, and a kind's own ``checks`` as (ok, text)."""
    names = [p["name"] for p in pods.get("pods") or [] if p.get("new") and not p.get("deleting")]
    try:
        toggles = in_force(ctx.keys, (workload.get("metadata") or {}).get("annotations") or {}, dict(template),
                           ctx.container)
    except UserError as exc:  # no vLLM server to read flags from: the other checks say what is wrong
        toggles = [f"toggles unknown ({exc})"]
    return confirm_revision(history, pods, read_metrics(ctx, names), ctx.policy, ctx.client.server_time(),
                            ctx.container, toggles, [*checks, *gateway_checks(ctx)])


def gateway_checks(ctx: K8sHost) -> list[tuple[bool, str]]:
    """Step 6 at the gateway: the policy's fallback route sends the fallback nothing, and - when the policy names a
    Prometheus - the gateway error rate its query measures is normal. Each as (ok, text)."""
    out = []
    fallback = ctx.policy.fallback
    if fallback is not None:
        try:
            out.append(fallback_check(read_route(ctx, fallback), fallback, shift_back_after(ctx.policy)))
        except UserError as exc:
            out.append(fallback_check(None, fallback, shift_back_after(ctx.policy), str(exc)))
    rule = ctx.policy.confirm.gateway_error_rate
    if rule is not None:
        try:
            samples = instant_query(rule.prometheus, rule.query, rule.timeout.total_seconds())
        except PrometheusError as exc:
            out.append(error_rate_check(rule, None, str(exc)))
        else:
            out.append(error_rate_check(rule, [(sample.name(), sample.value) for sample in samples]))
    return out


@operation()
@keeps_its_plan
def marked_known_good() -> Iterator[FunctionCommand]:
    """
    Confirm the running revision (runbook step 6) and mark its ReplicaSet known-good.

    Checks, with the host's policy: every pod of the current revision Ready and stable for
    ``confirm.stable_for`` (cluster time), startup "maximum concurrency" ≥ ``peak_concurrency`` ×
    ``confirm.min_concurrency_ratio``, KV cache usage and preemption rate within ``alerts``, no
    temporary toggle (``--enforce-eager``) in force on it, the ``fallback`` route sending the fallback
    no traffic, and - when the policy names a Prometheus - the gateway error rate of
    ``confirm.gateway_error_rate.query`` at or below its ``max`` (no data fails). The host fails with the
    reasons when a check fails; nothing is written then.

    **Example:**

    .. code:: python

        confirm.marked_known_good(name="Confirm and mark the running revision known-good")
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    yield from mark(ctx, evaluate(ctx, deployment), "replicasets", deployment_fields(deployment.get("spec") or {}))


def mark(ctx: K8sHost, result: ConfirmResult | None, resource: str, fields: dict[str, Any] | None
         ) -> Iterator[FunctionCommand]:
    """Show step 6's checks, then refuse, say it is already marked, or yield the guarded mark on the revision's
    object (a ``resource``: ``replicasets``, or ``controllerrevisions`` for the set kinds, where their restore
    reads it). ``fields``: the Deployment fields confirmed with it, None for the kinds that keep none."""
    if result is None:
        return  # pyinfra already failed the host with the fact's error
    singular = resource.removesuffix("s")
    whose = "" if resource == "replicasets" else f"{ctx.where}: "  # a namespace host names the set it refuses
    show(state, host, [f"step 6 — confirm {whose}revision {result.revision} ({result.replicaset}):",
                       *(f"  {line}" for line in result.checks)], topic="confirm")
    if not result.ok:
        yield from refuse(state, host, f"{whose}revision {result.revision} not confirmed: {result.reason}")
        return
    if result.marked or not result.replicaset:
        noop(state, host, f"{whose}revision {result.revision} is already marked known-good" if result.marked
             else f"{whose}revision {result.revision} has no {singular} to mark")
        return
    reason = f"confirmed: {'; '.join(result.checks)}"
    path = KubeClient.object_path(ctx.namespace, resource, result.replicaset)
    label = f"mark revision {result.revision} ({result.replicaset}) known-good"
    try:  # the object the mark is planned on: an edit after this read (at the prompt) refuses the write
        observe(state, host, path, ctx.client.request("GET", path))
    except UserError as exc:
        yield from refuse(state, host, f"{label}: {exc}")
        return
    yield change_command(ctx, path, Change(stamp=functools.partial(_mark, ctx.keys, reason[:1000], fields)), label)
