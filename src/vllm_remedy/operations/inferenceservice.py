"""Runbook steps 1–3 for a KServe InferenceService, through its own spec — never the Deployment KServe owns.

Why the InferenceService and not the Deployment: KServe regenerates ``<isvc>-predictor`` from the predictor on
every sync, so a change to the child is reverted at once (``gitops`` refuses it and says to patch the owner).
What the runbook calls "roll back" is KServe's own notion: the predictor revision that last became ready
(:func:`vllm_remedy.kube.inferenceservice.previous_ready`). Raw deployment mode keeps no Revision objects, so
that revision's pod template is read from the owned Deployment's ReplicaSet of the same number and turned back
into a predictor spec (the args after the serving runtime's, for the model form); we write that predictor back,
guarded by the InferenceService's resourceVersion, and wait until KServe reports it Ready. We do not use
``canaryTrafficPercent``: raw mode cannot split traffic, so a canary would still send every request to the
crashing pods.

    from vllm_remedy.operations import inferenceservice

    inferenceservice.report(name="Read the startup log and what changed")
    inferenceservice.rollback(name="Roll back to the last ready predictor revision", wait=True)
    inferenceservice.smallest_fix(name="Smallest flag change that restores headroom")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyinfra import host, logger, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.inferenceservice import InferenceServiceState
from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.facts.pods import pods_data
from vllm_remedy.kube import inferenceservice as isvcs
from vllm_remedy.kube.clock import ClusterClock
from vllm_remedy.kube.diff import describe, revision_diff, unified_template_diff
from vllm_remedy.kube.wait import RESTART_LIMIT
from vllm_remedy.operations import budget
from vllm_remedy.operations.util import (
    Change,
    change_command,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    refuse,
    server_of,
    show,
)
from vllm_remedy.operations.util.show import note
from vllm_remedy.remedies.diagnose import pod_unjudged, release_rules
from vllm_remedy.remedies.predict import Prediction, caveats, failed_prediction, predict_template
from vllm_remedy.remedies.restore import crash_failures
from vllm_remedy.vllm.failures import failure_class


def _where(namespace: str, name: str) -> str:
    return f"inferenceservice {namespace}/{name}"


def _crashing(pods: Mapping[str, Any] | None) -> list[str]:
    """Crash-looping pods of the owned Deployment's newest revision (the latest predictor's)."""
    return [p["name"] for p in (pods or {}).get("pods") or []
            if p.get("new") and p.get("crash_looping") and not p.get("deleting")]


def _failure_line(pods: Mapping[str, Any], container: str | None, template: Mapping[str, Any] | None) -> str:
    """The most frequent crash of the latest revision's pods, with the runbook's headline and hint, and what check
    says of an option of their ``template`` it did not judge (``diagnose.pod_unjudged``)."""
    seen = crash_failures(pods, container)
    if not seen:
        return "no startup log says why"
    kind = max(seen, key=lambda k: (seen[k], k))
    try:
        found = failure_class(kind)
    except (KeyError, ValueError):
        return kind
    report = next(((c.get("startup") or {}).get("report") or {}
                   for p in pods.get("pods") or [] if p.get("new") for c in p.get("containers") or []
                   if (c.get("startup") or {}).get("failure") == kind), {}) if pods else {}
    detail = report.get("failure_detail") or {}
    said = release_rules(report, pod_unjudged(template, container))
    return f"{kind}: {found.headline} ({found.hint_for(detail)}){said}"


def _target(facts: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(revision name, predictor spec) to roll back to; UserError saying why there is none."""
    isvc = facts["inferenceservice"]
    target = isvcs.previous_ready(isvc)
    if target is None:
        raise UserError("KServe records no earlier ready predictor revision (status.components.predictor)")
    number = isvcs.revision_number(target)
    template = isvcs.revision_template(facts["replicasets"], number) if number is not None else None
    if template is None:
        raise UserError(f"the pod template of predictor revision {target} is gone from KServe's Deployment (its "
                        "ReplicaSet was pruned or re-numbered)")
    return target, isvcs.predictor_for(isvc, facts["runtime"], template, str(facts["container"]))


def no_forced_revision() -> None:
    """Host data ``revision`` (or ``override``) refused for an InferenceService before anything is planned: one line
    naming the host, exit 2. KServe names its predictor revisions (``<isvc>-predictor-00002``) and keeps no history
    of their specs beyond its Deployment's ReplicaSets; restore goes back only to KServe's last ready revision, so a
    number would be silently ignored, or mean something restore cannot guarantee."""
    for key in ("revision", "override"):
        if host.data.get(key) is not None:
            ctx = k8s_host(host)
            logger.error(f"{host.print_prefix}host data {key}: not supported for an InferenceService ({ctx.where}): "
                         "restore rolls back to KServe's last ready predictor revision only; run without --data "
                         f"{key}, or edit spec.predictor by hand")
            raise SystemExit(2)


@operation()
@keeps_its_plan
def rollback(wait: bool = True, timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    Roll a crash-looping InferenceService back to its last ready predictor revision, through its own spec.

    + wait: wait until KServe reports the InferenceService Ready on the new revision, failing fast on a crash loop
    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``

    Nothing happens when no pod of the latest predictor revision is crash-looping.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(InferenceServiceState)
    isvc, pods = facts["inferenceservice"], facts["pods"]
    where = _where(ctx.namespace, ctx.deployment)
    latest = isvcs.predictor_status(isvc).get("latestCreatedRevision") or "(none yet)"
    crashing = _crashing(pods)
    if not crashing or pods is None:
        noop(state, host, f"nothing to restore: no pod of {where}'s latest predictor revision {latest} is "
                          "crash-looping")
        return
    why = f"pods {', '.join(crashing)} crash-loop — {_failure_line(pods, ctx.container, facts.get('template'))}"
    try:
        target, predictor = _target(facts)
        planned = isvcs.template_of({**isvc, "spec": {**(isvc.get("spec") or {}), "predictor": predictor}},
                                    facts["runtime"])  # what KServe builds from it: the template to predict
    except UserError as exc:
        yield from refuse(state, host, f"{where}: {why}; cannot roll back: {exc}")
        return
    before = (isvc.get("spec") or {}).get("predictor") or {}
    if predictor == before:
        noop(state, host, f"{where} already has predictor revision {target}'s spec")
        return
    summary = f"roll back {where} from predictor revision {latest} to {target} (KServe's last ready revision)"
    path = isvcs.isvc_path(ctx.namespace, ctx.deployment)
    observe(state, host, path, isvc)
    diff = unified_template_diff(before, predictor, f"{where} spec.predictor (current)",
                                 f"{where} spec.predictor (planned)")
    prediction = predict_template(planned, ctx.container)
    show(state, host, [summary, why, *diff.rstrip("\n").splitlines(), prediction.line()])
    yield change_command(ctx, path, Change(spec={"predictor": predictor},
                                           audit=("restore", f"roll back to predictor revision {target}")), summary)
    if wait:
        seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_ready, (seconds, f"wait for {where} to be Ready"), {})


@operation(is_idempotent=True)
def report() -> Iterator[FunctionCommand]:
    """
    Runbook steps 2–3 on an InferenceService: why the latest predictor's pods die, and what changed since the last
    ready revision (flags, image, resources) — read from its own spec, never changed.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(InferenceServiceState)
    isvc, pods = facts["inferenceservice"], facts["pods"]
    where = _where(ctx.namespace, ctx.deployment)
    status = isvcs.predictor_status(isvc)
    lines = [f"{where}: latest predictor revision {status.get('latestCreatedRevision') or '(none yet)'}, last ready "
             f"{status.get('latestReadyRevision') or '(none)'}"]
    crashing = _crashing(pods)
    failed = _failure_line(pods or {}, ctx.container, facts.get("template")) if crashing else ""
    lines.append(f"pods {', '.join(crashing)} crash-loop — {failed}" if crashing
                 else "no pod of the latest predictor revision is crash-looping")
    try:
        target, predictor = _target(facts)
    except UserError as exc:
        lines.append(f"no comparison with an earlier ready revision: {exc}")
    else:
        old = isvcs.template_of({**isvc, "spec": {**(isvc.get("spec") or {}), "predictor": predictor}},
                                facts["runtime"])
        changes = revision_diff(old, facts["template"], facts["container"])
        lines += [f"changed since {target}: {line}" for line in describe(changes)] or [
            f"the predictor's vLLM container is unchanged since {target}"]
    show(state, host, lines)
    yield from ()


@operation()
@keeps_its_plan
def smallest_fix(gpu: str | None = None, target_concurrency: float | None = None,
                 wait: bool = True) -> Iterator[FunctionCommand]:
    """
    Runbook step 4 on an InferenceService: the budget planner's smallest predicted-safe flag change, written into
    the predictor's own spec (``model.args`` after the runtime's, or its container's args), then wait for Ready.

    + gpu / target_concurrency: as ``budget.smallest_fix``
    + wait: wait until KServe reports the new predictor revision Ready, failing fast on a crash loop

    A rung that moves the pods to another GPU or is a temporary toggle is refused here (pin the predictor's
    nodeSelector in its spec); so is any plan the memory model predicts to fail.
    """
    ctx = k8s_host(host)
    facts = host.get_fact(InferenceServiceState)
    isvc, template = facts["inferenceservice"], facts["template"]
    where = _where(ctx.namespace, ctx.deployment)
    picture = host.get_fact(NodeObjects)
    empty = {"pods": []}
    why = budget.unpredictable(server_of(template, ctx.container))
    if why is not None:  # the model resolved nowhere: every rung is chosen by a prediction, none is made
        yield from refuse(state, host, f"{where}: {why}", head="no prediction")
        return
    try:
        plan, product = budget.plan_for(ctx, template, gpu, target_concurrency, picture, facts["pods"] or empty)
        said = caveats(server_of(template, ctx.container))  # the rules, any option not judged
        if plan.verdict == "no_change_needed":
            noop(state, host, f"{where} fits on {product} with headroom and an explicit --max-model-len "
                              f"({Prediction(product, plan.current, **said).line()})")
            return
        step = plan.steps[0] if plan.verdict == "change" and plan.steps else None
        if step is None or step.template.node_selector or step.temporary:
            current = Prediction(product, plan.current, **said)
            what = "is predicted to fit" if step is None else f"but {step.describe()} ({step.lever}) fits"
            yield from refuse(state, host, f"{where}: {plan.problem}; no flag change within policy {ctx.policy.source} "
                                           f"{what} ({current.line()})")
            return
        planned, _ = budget.planned_template(ctx, template, step, ctx.client.server_time())
        predictor = isvcs.predictor_for(isvc, facts["runtime"], planned, str(facts["container"]))
    except UserError as exc:
        yield from refuse(state, host, f"{where}: {exc}")
        return
    prediction = Prediction(step.gpu or product, step.prediction, **said)
    why = failed_prediction(prediction)
    if why is not None:
        yield from refuse(state, host, f"{step.describe()} on {where}: {why}")
        return
    before = (isvc.get("spec") or {}).get("predictor") or {}
    summary = f"budget {where}: {step.describe()} ({step.lever}, rung {step.rank} of {len(plan.steps)})"
    path = isvcs.isvc_path(ctx.namespace, ctx.deployment)
    observe(state, host, path, isvc)
    diff = unified_template_diff(before, predictor, f"{where} spec.predictor (current)",
                                 f"{where} spec.predictor (planned)")
    show(state, host, [f"problem: {plan.problem}", summary, *diff.rstrip("\n").splitlines(), prediction.line()])
    yield change_command(ctx, path, Change(spec={"predictor": predictor},
                                           audit=(budget.BUDGET, f"{step.lever}: {step.reason}")), summary)
    if wait:
        seconds = ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_ready, (seconds, f"wait for {where} to be Ready"), {})


def wait_ready(state: Any, host: Any, timeout: float, label: str) -> bool:
    """FunctionCommand body: poll (cluster time) until KServe reports Ready on a new latest ready revision; fail
    fast when the new predictor's pods crash-loop."""
    try:
        ctx = k8s_host(host)
        clock = ClusterClock(ctx.client)
        start = clock.now()
        while True:
            isvc = isvcs.read_isvc(ctx.client, ctx.namespace, ctx.deployment)
            status, meta = isvcs.predictor_status(isvc), isvc.get("metadata") or {}
            observed = int((isvc.get("status") or {}).get("observedGeneration") or 0) >= int(meta.get("generation")
                                                                                               or 1)
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (isvc.get("status") or {}).get("conditions") or [])
            if observed and ready and status.get("latestReadyRevision") == status.get("latestCreatedRevision"):
                note(host, f"{label}: Ready on predictor revision {status.get('latestReadyRevision')} after "
                           f"{clock.now() - start:.0f}s (cluster time)")
                return True
            owned = isvcs.owned_deployment(ctx.client, isvc)
            if observed and owned is not None:
                selector = ",".join(f"{k}={v}" for k, v in (owned["spec"]["selector"].get("matchLabels") or {}).items())
                picture = pods_data(owned, ctx.client.list_replicasets(ctx.namespace, selector),
                                    ctx.client.list_pods(ctx.namespace, selector))
                looping = [p["name"] for p in picture["pods"] if p["new"] and p["restarts"] >= RESTART_LIMIT
                           and not p["ready"]]
                if looping:
                    note(host, f"{label}: crash-loop after {clock.now() - start:.0f}s: pods {', '.join(looping)}",
                         error=True)
                    return False
            if clock.now() - start >= timeout:
                note(host, f"{label}: timed out after {timeout:.0f}s (cluster time)", error=True)
                return False
            clock.sleep(5)
    except UserError as exc:
        note(host, f"{label}: {exc}", error=True)
        return False
