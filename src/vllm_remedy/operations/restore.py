"""Runbook step 1 as pyinfra operations: a crash-looping revision rolled back to one nothing speaks against, or
load shed (lower flags, and part of the gateway's traffic moved to the fallback backend) — and, once the primary
is stable again, that traffic shifted back: the fallback is temporary.

``known_good`` and ``shed_load`` (and ``operations.handover``'s budget hand-over) read the same facts — the Node
objects included, for where each candidate's pods would go now — and ask ``remedies.restore.decide_restore``
what step 1 calls for, so each acts only on its own branch and a healthy Deployment yields nothing from any.
Every revision skipped on evidence is printed with why, in ``-y`` runs too. ``shift_back`` is the deploy's
last step and acts only on a route that still sends the fallback traffic.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.events import PodEvents
from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.facts.nodes import NodeObjects
from vllm_remedy.kube.actions import read_rollout
from vllm_remedy.kube.annotations import canonical_json, rfc3339
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.history import HASH_LABEL
from vllm_remedy.kube.rollout import plan_undo, resource_version_test
from vllm_remedy.operations.forced_revision import OVERRIDE, checked_revision
from vllm_remedy.operations.restore_annotations import after_rollback, annotation_lines, wait_line
from vllm_remedy.operations.restore_capacity import CAPACITY, capacity_refusal, recreate_rivals, stuck_rollback
from vllm_remedy.operations.restore_models import model_keys
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    change_lines,
    deployment_object,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    planned,
    pods_fact,
    refuse,
    server_of,
    show,
    template_change,
    wait_rollout,
    with_flags,
    write_command,
)
from vllm_remedy.policy import Fallback, LoadShedding, format_duration, parse_duration
from vllm_remedy.remedies.deployment_fields import field_problems, recorded_fields
from vllm_remedy.remedies.evidence import StartCheck
from vllm_remedy.remedies.fallback import (
    fallback_traffic,
    primary_stable,
    route_name,
    shift_back_after,
    shifted_back_route,
    shifted_route,
)
from vllm_remedy.remedies.load_guard import guard_flags
from vllm_remedy.remedies.predict import pinned_gpu, predict_template
from vllm_remedy.remedies.restore import NONE, REFUSE, ROLLBACK, SHED, RestoreDecision, decide_restore, shed_flags
from vllm_remedy.vllm import resolved
from vllm_remedy.vllm.versions import version_from_image

GATEWAY = "gateway.networking.k8s.io/v1"
#: The last-action of shifting the fallback's traffic back to the primary.
SHIFT_BACK = "shift-back"


def _decision(ctx: K8sHost, forced: int | None = None) -> tuple[RestoreDecision, dict[str, Any]]:
    history = host.get_fact(RolloutHistory)
    pods = pods_fact(host)
    deployment = deployment_object(host)
    nodes = (host.get_fact(NodeObjects) or {}).get("nodes")
    events = (host.get_fact(PodEvents) or {}).get("events")
    return decide_restore(history, pods, ctx.policy, container=ctx.container, now=ctx.client.server_time(),
                          nodes=nodes, forced=forced, events=events,
                          override=host.data.get("override") == OVERRIDE,
                          model_keys=model_keys(ctx, (history or {}).get("revisions"))), deployment


def set_decision(ctx: K8sHost, facts: Mapping[str, Any], forced: int | None = None,
                 cannot_start: StartCheck | None = None) -> RestoreDecision:
    """The Deployment's choice over a set kind's state fact (``rollout``, ``pod_rows``: a StatefulSet's or
    LeaderWorkerSet's ControllerRevisions standing for ReplicaSets); their pods' Events are not read.
    ``cannot_start`` is the kind's own start verdict (an LWS group's world size), weighed like a failed
    prediction."""
    nodes = (host.get_fact(NodeObjects) or {}).get("nodes")
    return decide_restore(facts["rollout"], facts["pod_rows"], ctx.policy, container=ctx.container,
                          now=ctx.client.server_time(), nodes=nodes, forced=forced,
                          override=host.data.get("override") == OVERRIDE, cannot_start=cannot_start,
                          model_keys=model_keys(ctx, (facts["rollout"] or {}).get("revisions")))


def _undo_ops(revision: int, keys: Any, reason: str, fields: dict[str, Any], client: KubeClient,
              basis: dict[str, Any], at: float) -> list[dict[str, Any]]:
    """kubectl's undo patch to ``revision`` planned on ``basis`` (guarded), plus the Deployment-level ``fields``
    to put back; [] when it already has that template and those fields."""
    ctx_ns = basis["metadata"]["namespace"]
    replicasets = read_rollout(client, ctx_ns, basis["metadata"]["name"]).replicasets
    plan = plan_undo(basis, replicasets, revision, keys=keys, action="restore", reason=reason, at=at)
    spec = basis.get("spec") or {}
    extra = [{"op": "replace" if key in spec else "add", "path": f"/spec/{key}", "value": value}
             for key, value in fields.items() if spec.get(key) != value]
    if plan.skipped:
        return [resource_version_test(basis), *extra] if extra else []
    return [*plan.patch, *extra]


def forced_revision(value: Any = None) -> int | None:
    """Host data ``revision`` (``--data revision=N``) checked before any operation is planned: None when unset;
    a value that is not a plain revision number (empty, signed, spaced), or not in this Deployment's rollout history
    (a number a rollback renumbered counts: it stays in ``revision-history``), or one with evidence against it and no
    ``override=evidence``, is refused before any operation is planned — one line naming the host and key, exit 2,
    nothing changed (called from the deploy file, which then stops). So is an ``override`` other than ``evidence``."""
    return checked_revision(host.data.get("revision") if value is None else value,
                            lambda: (host.get_fact(RolloutHistory) or {}).get("revisions") or [],
                            lambda number: _decision(k8s_host(host), number)[0])


@operation()
@keeps_its_plan
def known_good(wait: bool = True, timeout: float | None = None, revision: int | None = None
               ) -> Iterator[FunctionCommand]:
    """
    Roll a crash-looping Deployment back to its last known-good revision and wait until it is Ready.

    + wait: wait for the rollout (failing fast on a crash loop, with the classified startup log)
    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``
    + revision: the operator's target (``--data revision=N``), which overrides the choice; still predicted,
      shown and guarded; evidence against it refuses it unless ``--data override=evidence`` (then a warning)

    Candidates, newest first within each rank: marked known-good by ``confirm``, matching a policy
    ``known_good`` unit, then the rest. Each one seen crash-looping (recorded on its ReplicaSet), with no
    schedulable node for its pods, or predicted to fail on the GPU its pods would get now is skipped, and the
    output says why; the output names the rule that chose. Deployment-level fields ``confirm`` recorded with
    the target's mark (strategy, minReadySeconds, progressDeadlineSeconds) are shown, and put back when the
    policy's ``restore.deployment_fields`` is ``restore``. Nothing happens when no pod of the current revision
    is crash-looping, or when no candidate survives (``budget_handover`` then takes over, or the host fails
    with every reason).

    **Example:**

    .. code:: python

        restore.known_good(name="Roll back to the last known-good revision", wait=True)
    """
    ctx = k8s_host(host)
    decision, deployment = _decision(ctx, revision)
    skipped = [f"skipped {line}" for line in decision.skipped]
    if decision.action == REFUSE:
        show(state, host, skipped, topic="skipped")
        yield from refuse(state, host, decision.reason)
        return
    stuck = stuck_rollback(host.get_fact(RolloutHistory) or {}, pods_fact(host)) if decision.action == NONE else None
    if stuck is not None:  # our own rollback, unfinished: no crash loop, but not a success either
        yield from refuse(state, host, stuck)
        return
    if decision.action != ROLLBACK or decision.revision is None:
        show(state, host, skipped, topic="skipped")
        noop(state, host, f"nothing to restore: {decision.reason}" if decision.action == NONE
             else f"no rollback: {decision.reason}; step 1 sheds load instead" if decision.action == SHED
             else f"no rollback: {decision.reason}")
        return
    target = {**decision.template, "metadata": {**(decision.template.get("metadata") or {})}}
    labels = {k: v for k, v in (target["metadata"].get("labels") or {}).items() if k != HASH_LABEL}
    target["metadata"]["labels"] = labels
    summary = (f"roll back {ctx.where} from revision {decision.current} to revision {decision.revision} "
               f"({decision.replicaset}) — chosen by rule: {decision.rule}")
    observe(state, host, ctx.deployment_path, deployment)
    before = (deployment.get("spec") or {}).get("template") or {}
    fields, field_lines = _deployment_fields(ctx, deployment, decision)
    if before == target and not fields:
        noop(state, host, f"revision {decision.revision}'s template and recorded fields are already in place")
        return
    # why this revision and not a newer one: in every run (-y included), the diff as usual once
    show(state, host, [decision.reason, *skipped, *decision.warnings], topic="skipped")
    short = capacity_refusal(decision.revision, target, deployment, host.get_fact(NodeObjects), ctx.namespace,
                             recreate_rivals(ctx, deployment))
    if short is not None and host.data.get("override") != CAPACITY:  # its wait would fail with pods Pending
        yield from refuse(state, host, f"roll back {ctx.where} to revision {decision.revision}: {short}")
        return
    with resolved.scope(model_keys(ctx, [{"number": decision.revision, "template": target}]).get(decision.revision)):
        prediction = predict_template(target, ctx.container)  # on the target's own model and revision
    consented = [f"warning: restored despite capacity (override={CAPACITY}): {short}"] if short else []
    show(state, host, [*consented, *change_lines(ctx, summary, before, target, prediction), *field_lines,
                       *annotation_lines(ctx, deployment, decision.revision),
                       *wait_line(ctx, decision.revision, wait, timeout)])
    why = (f"revision {decision.current} crash-looped" if revision is None
           else "the operator forced it (host data revision)")
    build = functools.partial(_undo_ops, decision.revision, ctx.keys, f"roll back to revision {decision.revision} "
                              f"({decision.rule}): {why}", fields)
    undo = write_command(ctx.deployment_path, build, summary)
    planned.rolls_back(host, ctx.deployment_path, decision.revision)  # later operations name it
    if wait:
        planned.rolled_out(host, ctx.deployment_path)  # the next operations plan on the restored pods
    yield undo
    if wait:
        seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
        yield FunctionCommand(wait_rollout, (seconds, f"wait for revision {decision.revision}'s template to roll out",
                                             decision.replicaset), {})


def _deployment_fields(ctx: K8sHost, deployment: dict[str, Any], decision: RestoreDecision
                       ) -> tuple[dict[str, Any], list[str]]:
    """(fields to put back, lines for the diff): what confirm recorded with the target's mark and now differs."""
    history = host.get_fact(RolloutHistory)
    row = next((r for r in history.get("revisions") or [] if r.get("number") == decision.revision), None)
    recorded = recorded_fields(ctx.keys, (row or {}).get("annotations") or {})
    problems = field_problems(recorded)
    if problems:  # a garbled or forged record: the template rollback proceeds, the fields stay as they are
        return {}, [f"warning: deployment fields recorded with revision {decision.revision}'s known-good mark are "
                    f"not put back: {'; '.join(problems)}"]
    spec = deployment.get("spec") or {}
    differ = {k: v for k, v in recorded.items() if spec.get(k) != v}
    if not differ:
        return {}, []
    put_back = ctx.policy.restore.deployment_fields == "restore"
    head = ("deployment fields recorded with revision {0}'s known-good mark, put back (policy "
            "restore.deployment_fields: restore):" if put_back else "deployment fields recorded with revision "
            "{0}'s known-good mark differ, shown only (policy restore.deployment_fields: show):")
    lines = [head.format(decision.revision)]
    for key, value in differ.items():
        lines += [f"-  {key}: {canonical_json(spec.get(key))}", f"+  {key}: {canonical_json(value)}"]
    return (differ if put_back else {}), lines


@operation()
@keeps_its_plan
def shed_load(fallback: bool = True, wait: bool = True, revision: int | None = None) -> Iterator[FunctionCommand]:
    """
    Shed load from a Deployment that crash-loops with OOM under load when nothing was deployed recently.

    + fallback: also move the policy's ``fallback.shift_percent`` of traffic to the fallback backend of
      the HTTPRoute the policy names (when it names one); ``shift_back`` returns it once the primary is stable
    + wait: wait for the shed pods to roll out, failing fast (with the log) if they die under load again
    + revision: the operator's rollback target (``--data revision=N``): then step 1 rolls back, nothing is shed

    Lowers ``--max-num-seqs``, ``--max-model-len`` and ``--max-num-batched-tokens`` to the policy's
    ``load_shedding`` values (never raises them). Nothing happens when the Deployment is healthy or
    step 1 calls for a rollback instead. Both diffs - the route's and the pod template's, with the
    prediction - are shown before anything is written, in ``--dry`` as at the prompt and with ``-y``.

    **Example:**

    .. code:: python

        restore.shed_load(name="Shed load while OOM under load", fallback=True)
    """
    ctx = k8s_host(host)
    decision, deployment = _decision(ctx, revision)
    if decision.action != SHED:
        noop(state, host, "no load to shed: the current revision crash-loops, so step 1 rolls back instead"
             if decision.action == ROLLBACK else f"no load to shed: {after_rollback(host, ctx, decision).reason}")
        return
    template = (deployment.get("spec") or {}).get("template") or {}
    server = server_of(template, ctx.container)
    lower = shed_flags(server.flags, ctx.policy)
    # the policy's prefill cap sheds the per-step memory that long prompts need (runbook step 5), with
    # load_guard's rule for when vLLM accepts it (chunked prefill, or not below max-model-len)
    cap = LoadShedding(max_num_batched_tokens=ctx.policy.load_shedding.max_num_batched_tokens)
    lower.update(guard_flags({**server.flags, **lower}, cap, model=str(server.model),
                             version=version_from_image(server.image),
                             gpu=pinned_gpu(template.get("spec") or {})).set)
    route = ctx.policy.fallback if fallback else None
    if not lower and route is None:
        yield from refuse(state, host, f"{decision.reason}, but policy {ctx.policy.source} sets no "
                          "load_shedding.max_num_seqs/max_model_len below what runs and no fallback route")
        return
    # every write is planned and shown before the first is yielded: pyinfra's change detection (--dry, the
    # prompt) stops at the first yield, and what it shows must be all that runs
    commands: list[FunctionCommand] = []
    done: list[str] = []
    if route is not None:  # traffic off the dying backend first: the shed pods start under less load
        try:
            current = read_route(ctx, route)
            shift = route_change(ctx, route, current, shifted_route(current, route),
                                 summary=f"shift {route.shift_percent}% of {route_name(route)}'s traffic from "
                                         f"{route.primary.name} to {route.fallback.name}",
                                 action=SHED,
                                 reason=f"shift {route.shift_percent}% of traffic to {route.fallback.name}",
                                 annotations=_prior_record(ctx, current))
        except UserError as exc:
            yield from refuse(state, host, f"policy fallback.route: {exc}")
            return
        if shift is None:
            done.append(f"{route_name(route)} already sends {route.shift_percent}% to {route.fallback.name}")
        else:
            commands.append(shift)
    if lower:
        planned_template = with_flags(template, lower, container=ctx.container)
        flags = " ".join(f"--{k} {v}" for k, v in lower.items())
        shed = template_change(state, host, deployment, planned_template, action=SHED,
                               reason=f"OOM under load; shed load with {flags}",
                               summary=f"shed load on {ctx.where}: {flags} (the prediction is for startup; "
                                       "the load that killed it is not modelled)",
                               prediction=predict_template(planned_template, ctx.container))
        if shed is not None:
            commands.append(shed)
            if wait:
                planned.rolled_out(host, ctx.deployment_path)  # the next operations plan on the shed pods
                settle = ctx.policy.restore.shed_settle.total_seconds()
                commands.append(FunctionCommand(wait_rollout, (ctx.policy.restore.rollout_timeout.total_seconds(),
                                                               "wait for the shed-load template to roll out and stay "
                                                               f"up for {format_duration(int(settle))}"),
                                                {"settle": settle}))
    else:
        done.append("no load_shedding flag lowers what runs")
    if not commands:
        noop(state, host, f"load already shed: {'; '.join(done)}")
    yield from commands


@operation()
@keeps_its_plan
def shift_back(after: str | int | None = None) -> Iterator[FunctionCommand]:
    """
    Shift the gateway's traffic back from the fallback backend to the primary once the primary is stable.

    + after: how long every pod of the primary must have been Ready, in cluster time (``"30m"``, or
      seconds); default the policy's ``fallback.shift_back_after``, else ``confirm.stable_for``

    The fallback is temporary: ``shed_load`` moved part of the traffic to it while the primary died under
    load. The route gets back exactly the rules it had before that shift (recorded on it as
    ``vllm-remedy.io/fallback-prior-rules``) when nobody edited them since; otherwise the fallback's
    weight becomes 0 and the primary's 100, and the diff says why. Nothing happens while the primary is
    not yet stable (the reason says until when), when the route sends the fallback nothing, when the split
    is not ours (no record of our shift on the route: a canary or a migration), or when the policy names no
    fallback.

    **Example:**

    .. code:: python

        restore.shift_back(name="Shift traffic back from the fallback once the primary is stable")
    """
    ctx = k8s_host(host)
    route = ctx.policy.fallback
    if route is None:
        noop(state, host, f"no traffic to shift back: policy {ctx.policy.source} names no fallback route")
        return
    try:
        current = read_route(ctx, route)
        share, said = fallback_traffic(current, route)
        if share is None:
            raise UserError(f"policy fallback.primary: {said}")
        seconds = parse_duration(str(after)) if isinstance(after, str) else (
            after if after is not None else shift_back_after(ctx.policy))
    except (UserError, ValueError) as exc:
        yield from refuse(state, host, f"shift {route_name(route)} back: {exc}")
        return
    if not share:
        noop(state, host, f"{route_name(route)} sends no traffic to the fallback {route.fallback.name}")
        return
    stable = primary_stable(pods_fact(host), ctx.client.server_time(), float(seconds), ctx.container)
    if not stable.ok:
        until = f"; re-run after {rfc3339(stable.at)} (cluster time) to shift it back" if stable.at else ""
        noop(state, host, f"{route_name(route)} keeps {share}% of its traffic on the fallback {route.fallback.name}: "
             f"{stable.reason}{until}")
        return
    notes = (current.get("metadata") or {}).get("annotations") or {}
    if notes.get(ctx.keys.fallback_prior) is None and notes.get(ctx.keys.last_action) != SHED:
        # a split we did not make (a canary, a migration): drift and confirm report it; shifting it is a person's call
        noop(state, host, f"{route_name(route)} sends {share}% of its traffic to the fallback {route.fallback.name}, "
             "but no shift of ours is recorded on it: left as it is (shift it back by hand if it is not deliberate)")
        return
    desired, how = shifted_back_route(current, route, notes.get(ctx.keys.fallback_prior))
    back = route_change(ctx, route, current, desired,
                        summary=f"shift {route_name(route)}'s traffic back from {route.fallback.name} to "
                                f"{route.primary.name} ({stable.reason}): {how}",
                        action=SHIFT_BACK, reason=f"{stable.reason}: traffic back from {route.fallback.name}",
                        annotations={ctx.keys.fallback_prior: None})
    if back is not None:
        yield back


def route_path(fallback: Fallback) -> str:
    """The fallback HTTPRoute's Gateway API path (names URL-quoted), read and patched with the host's client
    because the verbs cover only the Deployment's own objects."""
    ref = fallback.route
    return f"/apis/{GATEWAY}/namespaces/{quote(ref.namespace, safe='')}/httproutes/{quote(ref.name, safe='')}"


def read_route(ctx: K8sHost, fallback: Fallback) -> dict[str, Any]:
    """The policy's fallback route (while detecting, as this run's earlier operations plan to leave it)."""
    path = route_path(fallback)
    return planned.current(host, path, ctx.client.request("GET", path))


def _prior_record(ctx: K8sHost, route: dict[str, Any]) -> dict[str, str | None]:
    """The rules before the first shift, for ``shift_back``; a route already carrying the record keeps it."""
    notes = (route.get("metadata") or {}).get("annotations") or {}
    if ctx.keys.fallback_prior in notes:
        return {}
    return {ctx.keys.fallback_prior: canonical_json((route.get("spec") or {}).get("rules") or [])}


def route_change(ctx: K8sHost, fallback: Fallback, route: dict[str, Any], desired: dict[str, Any], *, summary: str,
                 action: str, reason: str, annotations: dict[str, str | None]) -> FunctionCommand | None:
    """Show ``diff -u`` of the route's spec and return the guarded write giving it ``desired``'s rules (None when it
    has them): shown here, yielded by the caller, like ``template_change``."""
    if desired == route:
        return None
    path = route_path(fallback)
    observe(state, host, path, route)
    name = f"httproute {fallback.route.namespace}/{fallback.route.name} spec"
    diff = unified_template_diff({"spec": route.get("spec") or {}}, {"spec": desired.get("spec") or {}},
                                 f"{name} (current)", f"{name} (planned)")
    show(state, host, [summary, *diff.rstrip("\n").splitlines()], topic="route")
    change = Change(spec={"rules": (desired.get("spec") or {}).get("rules") or []}, annotations=annotations,
                    audit=(action, reason))
    return change_command(ctx, path, change, summary)
