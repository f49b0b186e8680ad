"""The end of a StatefulSet deploy that changed the pod template (budget, pin, eager mode, load caps): the change is
waited for as a rollback's is (``operations.sts_unblock.wait_and_unblock``: fail fast on a crash loop, recorded on
its ControllerRevision; pods the controller will not replace by itself deleted only under the policy's
``restore.delete_pods: blocking``, in the order it says: not-Ready pods first, then Ready ones one at a time), and
what the update strategy means for the change is said first, naming pods.

Why say it: a Deployment replaces every pod of a new template by itself; a StatefulSet does not always. Under
``OnDelete`` a template change reaches no pod until it is deleted; a RollingUpdate ``partition`` keeps the pods
below it on the revision they run; under ``OrderedReady`` a crash-looping pod of any revision stops the rollout
until it is deleted. The operator must know before approving whether pods will be deleted or stay.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand

from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube.annotations import template_digest
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.serving import ServingGate
from vllm_remedy.kube.sts_history import REVISION_LABEL
from vllm_remedy.kube.sts_wait import (
    deletion_order,
    foreign_update,
    ordinal,
    partition_floor,
    partition_of,
    pod_names,
    read_set,
    rows_rolled_out,
    stuck_after,
)
from vllm_remedy.operations.sts_unblock import (
    blocked_in_plan,
    foreign_line,
    plan_rolled_out,
    planned_rolled_out,
    wait_and_unblock,
)
from vllm_remedy.operations.util import K8sHost, crash_loop_ahead, noop, pods_fact, show
from vllm_remedy.operations.util.wait import still_loading


def update_lines(sts: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], delete_pods: str) -> list[str]:
    """What the set's update strategy means for a template change written now, naming the pods (pure)."""
    spec = sts.get("spec") or {}
    strategy = spec.get("updateStrategy") or {}
    live = sorted((str(p["metadata"]["name"]) for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")),
                  key=ordinal)
    act = ("deleted (policy restore.delete_pods: blocking)" if delete_pods == "blocking" else
           "named, not deleted (policy restore.delete_pods: never): delete them for the change to take effect")
    if strategy.get("type") == "OnDelete":
        return [f"then: updateStrategy OnDelete: the change reaches a pod only when it is deleted; pods "
                f"{', '.join(live) or 'none'} stay on their revision until then: {act}",
                *([deletion_order(pods, live)] if delete_pods == "blocking" and live else [])]
    lines = []
    partition, floor = partition_of(sts), partition_floor(sts)  # the partition counts from ordinals.start
    if partition:
        names = pod_names(sts, pods)  # as read before the write (-y reads them after it, mid-replacement)
        held = [n for n in names if ordinal(n) < floor]
        reached = [n for n in names if ordinal(n) >= floor]
        lines.append(f"then: updateStrategy RollingUpdate partition {partition}: the change replaces only pods with "
                     f"ordinal >= {floor} ({', '.join(reached) or 'none'}); pods below it "
                     f"({', '.join(held) or 'none'}) keep the revision they run until the partition is lowered")
    if spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady":
        crashing = [str(p["metadata"]["name"]) for p in pods if pod_health(p).crash_looping
                    and not p["metadata"].get("deletionTimestamp")]
        if crashing:
            lines.append(f"then: podManagementPolicy OrderedReady: pods {', '.join(crashing)} crash-loop and block "
                         f"the rollout until deleted; such pods are {act}")
    return lines or ["then: updateStrategy RollingUpdate: the controller replaces the pods one at a time, highest "
                     "ordinal first, each deleted before its replacement starts"]


def wait(ctx: K8sHost, sts: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
         seconds: float, label: str) -> Iterator[FunctionCommand]:
    """``workload.rolled_out``'s body for a StatefulSet host: nothing when rolled out, else the update strategy's
    lines and the wait (``raw`` pods for their names and health, ``rows`` for which revision they run)."""
    template = (sts.get("spec") or {}).get("template")
    if rows_rolled_out(sts, rows):
        if still_loading(state, host, ctx.where, label, unserved(ctx)):
            yield FunctionCommand(wait_and_unblock, (seconds, label, template_digest(template)), {})
        return
    if planned_rolled_out(host, ctx.deployment_path, template):  # --dry: an earlier wait of the run rolls it out
        noop(state, host, f"{ctx.where}: its rollout is waited for above")
        return
    off = sorted((str(r.get("name")) for r in rows if not r.get("new") and not r.get("deleting")), key=ordinal)
    stuck = stuck_after(sts, pods, off)
    if stuck and foreign_update(sts, ctx.keys.last_action_template):
        # a template nobody wrote here (a colleague's patch): moving the pods the controller will not is theirs to do
        noop(state, host, foreign_line(ctx.where, stuck))
        return
    show(state, host, update_lines(sts, pods, ctx.policy.restore.delete_pods), topic="strategy")
    plan_rolled_out(host, ctx.deployment_path, template)
    blocked_in_plan(ctx, sts, stuck, label)
    if not (stuck and ctx.policy.restore.delete_pods == "never"):  # else blocked_in_plan said why it fails
        crash_loop_ahead(state, host, ctx, host.get_fact(StatefulSetState)["statefulset"], sts, pods_fact(host), label)
    # pods are deleted only onto the template this run wrote, or (none written) the one read here
    yield FunctionCommand(wait_and_unblock, (seconds, label, template_digest(template)), {})


def unserved(ctx: K8sHost) -> list[str]:
    """The set's pods on its update revision whose vLLM container has no readiness or startup probe and whose log
    does not show it serving yet (``kube.serving``), read now; [] when none, or when they cannot be read."""
    client = ctx.client.live()
    try:
        sts, pods = read_set(client, ctx.namespace, ctx.deployment)
    except KubeError:
        return []
    update = str((sts.get("status") or {}).get("updateRevision") or "")
    fresh = [p for p in pods if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == update]
    return ServingGate(client, ctx.namespace, ctx.container, look=0.0).waiting(fresh)
