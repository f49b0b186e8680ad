"""Flag writes on a LeaderWorkerSet (multi-node vLLM), the plumbing runbook steps 4 and 5 share for that kind, and
step 5 itself: the policy's load caps.

Every write here is the one ``operations.lws_pin`` and ``operations.leaderworkerset`` make:
``spec.leaderWorkerTemplate`` replaced whole, guarded by resourceVersion (``util.change_command``: a colleague's
edit after the plan is refused, never overwritten; the GitOps stance applies), with the audit annotations on the
LWS. Plans are made on the leader's pod template as a Deployment's are on its template;
``remedies.lws_flags.with_leader`` makes the workers follow, and the result must still have leader and workers agree
(``kube.lws_history.check_consistent``). The prediction splits the model TP × PP ways over the group
(``remedies.predict`` reads the leader's flags so).

    from vllm_remedy.operations import lws_flags

    lws_flags.caps(name="Cap load per policy on leader and workers")
    lws_flags.rolled_out(name="Wait until every group is Ready")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.facts.leaderworkerset import LeaderWorkerSetState
from vllm_remedy.kube import lws_history
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.lws_wait import lws_path
from vllm_remedy.operations.leaderworkerset import crashing_pods, groups_ready, unserved_leaders, wait_rolled_out
from vllm_remedy.operations.util import (
    Change,
    K8sHost,
    change_command,
    describe,
    k8s_host,
    keeps_its_plan,
    noop,
    observe,
    refuse,
    same_value,
    server_of,
    show,
    wait_fails,
    with_flags,
    wrote_in_this_run,
)
from vllm_remedy.operations.util import planned as planned_objects
from vllm_remedy.operations.util.wait import still_loading
from vllm_remedy.remedies.load_guard import caps_of, guard_flags
from vllm_remedy.remedies.lws_flags import with_leader
from vllm_remedy.remedies.predict import Prediction, failed_prediction, predict_template
from vllm_remedy.vllm.parallel import world_size
from vllm_remedy.vllm.versions import version_from_image

CAPS = "load-guard"


@dataclass(frozen=True)
class LwsView:
    """One LWS host as an operation plans on it: the set (as this run's earlier operations leave it), its template,
    the leader's pod template and its API path."""

    ctx: K8sHost
    path: str
    lws: dict[str, Any]
    lwt: dict[str, Any]

    @property
    def leader(self) -> dict[str, Any]:
        """The leader's pod template: what runs ``vllm serve``, what every remedy plans on."""
        return lws_history.leader_template(self.lwt)

    @property
    def notes(self) -> dict[str, str]:
        """The set's annotations (where a toggle's record lives)."""
        return dict((self.lws.get("metadata") or {}).get("annotations") or {})

    def pods(self) -> Any:
        """The set's pods as the Pods fact's rows, none of the current template once an earlier operation of the
        run plans a new one (``util.planned.pods``)."""
        return planned_objects.pods(host, self.path, host.get_fact(LeaderWorkerSetState)["pod_rows"])


def view() -> LwsView:
    """The current host's LWS as read now or, while changes are detected, as planned by the run's earlier operations.
    A UserError when its leader and worker templates already disagree on the engine."""
    ctx = k8s_host(host)
    path = lws_path(ctx.namespace, ctx.deployment)
    lws = planned_objects.current(host, path, host.get_fact(LeaderWorkerSetState)["leaderworkerset"])
    got = LwsView(ctx, path, lws, lws_history.lwt_of(lws))
    lws_history.check_consistent(got.lwt, got.ctx.where, ctx.container)
    return got


def group_prediction(lwt: Mapping[str, Any], container: str | None, resource: str = "nvidia.com/gpu"
                     ) -> tuple[Prediction, str]:
    """The memory model's verdict on the group's leader, and its line naming the TP × PP split over the pods (or,
    first, the world size the group's GPUs cannot hold: vLLM refuses that before sizing any memory)."""
    leader, _ = lws_history.servers(lwt, container)
    prediction = predict_template(lws_history.leader_template(lwt), container)
    short = lws_history.world_size_shortfall(lwt, container, resource)
    if short is not None:
        return prediction, f"predicted to fail: {short}"
    split = f"TP × PP = {world_size(leader.flags)} GPUs over {int(lwt.get('size', 1) or 1)} pods"
    return prediction, f"{prediction.line()} ({split})"


def planned_lwt(got: LwsView, leader: Mapping[str, Any]) -> dict[str, Any]:
    """The set's template with ``leader`` as the leader's and the workers following; a UserError when they would
    then disagree."""
    new = with_leader(got.lwt, leader, got.ctx.container, got.ctx.policy.gpu.resource)
    lws_history.check_consistent(new, got.ctx.where, got.ctx.container)
    return new


def write_lwt(got: LwsView, new: Mapping[str, Any], *, action: str, reason: str, summary: str,
              annotations: Mapping[str, str | None] | None = None,
              stamp: Callable[[float], Mapping[str, str]] | None = None, lines: tuple[str, ...] = ()
              ) -> Iterator[FunctionCommand]:
    """Show the leaderWorkerTemplate diff and the group's prediction, then yield the guarded write of ``new``
    (with ``annotations``, the audit ``action``/``reason`` and a write-time ``stamp``)."""
    ctx = got.ctx
    observe(state, host, got.path, got.lws)
    _, line = group_prediction(new, ctx.container, ctx.policy.gpu.resource)
    outage = lws_history.rollout_outage(got.lws)
    diff = unified_template_diff(got.lwt, new, f"{ctx.where} leaderWorkerTemplate (current)",
                                 f"{ctx.where} leaderWorkerTemplate (planned)")
    show(state, host, [summary, *(diff.rstrip("\n").splitlines() or ["(leaderWorkerTemplate unchanged)"]), *lines,
                       line, *([f"warning: {outage}"] if outage else [])])
    change = Change(spec={"leaderWorkerTemplate": dict(new)}, annotations=dict(annotations or {}),
                    audit=(action, reason), stamp=stamp)
    yield change_command(ctx, got.path, change, summary)


def failing(got: LwsView, new: Mapping[str, Any]) -> str | None:
    """Why writing ``new`` must not happen (a flag it changes outside the policy's bounds, or a start predicted to
    fail), or None when it may."""
    ctx = got.ctx
    before = server_of(got.leader, ctx.container).flags
    after = server_of(lws_history.leader_template(new), ctx.container).flags
    changed = {k for k, v in after.items() if before.get(k) != v}
    broken = [v for v in ctx.policy.check_flags(after) if v.flag in changed]
    if broken:
        return f"policy {ctx.policy.source}: {broken[0]}"
    return lws_history.world_size_shortfall(new, ctx.container, ctx.policy.gpu.resource) or \
        failed_prediction(group_prediction(new, ctx.container, ctx.policy.gpu.resource)[0])


def refuse_failing(got: LwsView, new: Mapping[str, Any], what: str) -> str | None:
    """The one-line refusal of writing ``new`` (``what`` names the change), or None when it may go."""
    why = failing(got, new)
    return None if why is None else f"{got.ctx.where}: {what}: {why}; nothing was changed"


@operation()
@keeps_its_plan
def caps(max_num_batched_tokens: int | None = None, limit_mm_per_prompt: Mapping[str, int] | None = None,
         max_loras: int | None = None) -> Iterator[FunctionCommand]:
    """
    Cap what one engine step of a LeaderWorkerSet may take on (runbook step 5), in the leader's and — when they run
    vLLM flags too — the workers' command line; values are maxima, never raised.

    + max_num_batched_tokens / limit_mm_per_prompt / max_loras: as ``load_guard.caps``; each left out (None) is the
      policy's ``load_shedding`` value

    Refused (one line, nothing written) when a cap breaks the policy's bounds or the group is predicted not to
    start with it; nothing happens when no cap lowers a value.
    """
    try:
        got = view()
        ctx = got.ctx
        server = server_of(got.leader, ctx.container)
        shed = caps_of(ctx.policy.load_shedding, max_num_batched_tokens, limit_mm_per_prompt, max_loras)
        guard = guard_flags(server.flags, shed, model=server.model, version=version_from_image(server.image),
                            gpu=predict_template(got.leader, ctx.container).gpu)
        changes = {k: v for k, v in guard.set.items() if not same_value(server.flags.get(k), v)}
        new = planned_lwt(got, with_flags(got.leader, changes, container=ctx.container)) if changes else None
    except UserError as exc:
        yield from refuse(state, host, str(exc) if str(exc).startswith(k8s_host(host).where)
                          else f"{k8s_host(host).where}: {exc}")
        return
    if new is None:
        noop(state, host, f"no cap to lower on {ctx.where}: " + ("; ".join(guard.notes) if guard.notes else
                          f"policy {ctx.policy.source} sets no load_shedding caps"))
        return
    why = refuse_failing(got, new, f"cap load {describe(changes)}")
    if why is not None:
        yield from refuse(state, host, why)
        return
    if guard.notes:  # why a cap the policy names is not written: already low enough, or vLLM would refuse it
        show(state, host, [f"cap load on {ctx.where}: {note_}" for note_ in guard.notes], topic="caps-skipped")
    yield from write_lwt(got, new, action=CAPS, reason=f"OOM under load (step 5): cap per policy: {describe(changes)}",
                         summary=f"cap load on {ctx.where}, leader and workers: {describe(changes)}")


@operation()
def rolled_out(timeout: float | None = None) -> Iterator[FunctionCommand]:
    """
    Every group of the LeaderWorkerSet is Ready on its current template; waits (cluster time) after a write of this
    run or while a rollout is under way, failing fast on a crash loop (recorded on its ControllerRevision).

    + timeout: cluster seconds to wait; default the policy's ``restore.rollout_timeout``
    """
    ctx = k8s_host(host)
    path = lws_path(ctx.namespace, ctx.deployment)
    fresh = host.get_fact(LeaderWorkerSetState)["leaderworkerset"]
    planned = planned_objects.current(host, path, fresh)
    seconds = timeout if timeout is not None else ctx.policy.restore.rollout_timeout.total_seconds()
    label = f"wait for {ctx.where} to roll out"
    if planned == fresh and not wrote_in_this_run(state, host, path) and groups_ready(fresh):
        if still_loading(state, host, ctx.where, label, unserved_leaders(ctx)):
            yield FunctionCommand(wait_rolled_out, (seconds, label), {})
        return
    dying = crashing_pods(host.get_fact(LeaderWorkerSetState)) if planned == fresh and not state.is_executing else []
    if dying:  # nothing of this run replaces them: the wait -y reaches fails fast on them (as the Deployment's)
        wait_fails(state, host, label, f"the current template's pod(s) {', '.join(dying)} are crash-looping and this "
                   "run writes nothing that replaces them")
    yield FunctionCommand(wait_rolled_out, (seconds, label), {})
