"""Runbook step 4, "pin the GPU type so scheduling cannot pick a smaller card" — safely (pure).

Nodes, pods and the pod template in; a :class:`PinPlan` out. What "safely" means here (landscape items 5, 8):

* **Label variants.** GPU feature discovery appends ``-SHARED`` on time-sliced nodes and MIG "single"
  rewrites the product (``A100-SXM4-40GB-MIG-1g.5gb``); GKE and Karpenter use their own keys and
  spellings. A nodeSelector matches one exact value of one key, so the value written is the one the
  matching nodes actually carry under the policy's ``gpu.label`` — never a guess. Time-sliced nodes
  count only when the policy allows shared GPUs; MIG slices only when the product names the profile.
* **Capacity first.** Pinning to a product with no schedulable GPU (ready, not cordoned, taints
  tolerated) turns a crash loop into Pending pods: refused. GPUs our own pods hold on matching nodes
  count, since the rollout frees them.
* **Room for every pod.** A pin whose pods only some fit (capacity below the replicas) would leave the rollout
  unfinished, the workload across two products and the rest Pending: the pin deploy and the budget refuse it, in
  ``--dry`` too, unless the operator consents (``--data override=capacity``); restore's hand-over, where nothing
  serves, takes what fits.
* **Full nodes.** A RollingUpdate with ``maxSurge`` > 0 needs one free GPU for the surge pod; with none
  it never progresses. Then the strategy becomes ``maxSurge: 0, maxUnavailable: 1`` and the plan says so.
  The rule is :func:`surge_switch`, asked by every write of a pod template (the budget's rung and the eager
  toggle too, through :func:`template_surge_switch`), and the switch stays: it is the Deployment's state now,
  which confirm records with a known-good mark and restore puts back with the revision it marked (the eager toggle
  records it and reverts it with its flag). The switch trades availability for progress, so it is written only
  when something keeps serving: the old pods are not Ready (nothing serving is stopped), or replicas minus the new
  maxUnavailable stay up. Where it would stop every Ready pod (one replica, ``maxUnavailable: 0``) it is refused,
  in ``--dry`` too, unless the operator consents (``--data override=capacity``): :attr:`SurgeSwitch.outage`.
* **Already pinned.** A template that carries the pin needs no write: nothing to refuse, even with every GPU of
  the product taken (its pods wait for one), so the steps after the pin still run. A product with no schedulable
  node at all (cordoned, not Ready, untolerated) is still refused: no pod of any later write could start there.
  A rollout such a pool already holds up (new pods unschedulable beside old ones holding the GPUs) gets the switch alone
  (:func:`stuck_surge_switch`): that is what restore's "then deploys/pin_gpu.py" points at.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.gpus import PRODUCT_LABELS, SHARED_SUFFIX, affinity_products, node_gpus, pod_gpu_request
from vllm_remedy.kube.health import node_health
from vllm_remedy.kube.selectors import matches
from vllm_remedy.policy import GpuPolicy
from vllm_remedy.remedies.plan import TemplateChange
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.cmdline import find_server


@dataclass(frozen=True)
class PinPlan:
    """The pinned template, the strategy to use (None: unchanged), what was counted, or why it is refused."""

    template: dict[str, Any]
    strategy: dict[str, Any] | None = None
    label: str = ""
    value: str = ""
    nodes: tuple[str, ...] = ()
    free: int = 0  # GPUs free now on usable matching nodes
    capacity_pods: int = 0  # pods of this size the rollout can place (free + what our pods hold)
    surge_pods: int = 0  # pods a rollout can add beside those it keeps (surge_room)
    notes: tuple[str, ...] = ()
    refusal: str | None = None
    lines: tuple[str, ...] = field(default=())

    @property
    def refused(self) -> bool:
        """True when nothing may be written; ``refusal`` then holds the one-line reason."""
        return self.refusal is not None


def canonical_product(value: str) -> str:
    """A product label value as the catalog names the card (``nvidia-l4`` → ``NVIDIA-L4``), MIG profile kept."""
    try:
        return catalog.gpu(value).product
    except UserError:
        base = value[: -len(SHARED_SUFFIX)] if value.upper().endswith(SHARED_SUFFIX) else value
        return base.upper()


def tolerates(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """Does one of ``tolerations`` tolerate ``taint`` (the scheduler's rule, PreferNoSchedule ignored)?"""
    if taint.get("effect") == "PreferNoSchedule":
        return True
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def gpu_quantity(value: Any) -> int | None:
    """A GPU count from a limit, request or flag (``2`` or ``"2"``); None when not a whole number, so the
    caller rewrites it rather than trust it."""
    try:
        return int(str(value))
    except ValueError:
        return None


def apply_template_change(template: Mapping[str, Any], change: TemplateChange,
                          container: str | None = None) -> dict[str, Any]:
    """``template`` with a planner's :class:`TemplateChange` applied (nodeSelector, GPU limit and request)."""
    new = copy.deepcopy(dict(template))
    spec = new.setdefault("spec", {})
    if change.node_selector or change.drop_node_selector:
        selector = dict(spec.get("nodeSelector") or {})
        for key in change.drop_node_selector:
            selector.pop(key, None)
        selector.update(change.node_selector)
        spec["nodeSelector"] = selector
    if change.gpu_limit is not None:
        name = find_server(spec, container).container_name
        for c in spec.get("containers") or []:
            if c.get("name") != name:
                continue
            res = c.setdefault("resources", {})
            limits = res.setdefault("limits", {})
            if gpu_quantity(limits.get(change.gpu_resource)) != change.gpu_limit:
                limits[change.gpu_resource] = str(change.gpu_limit)
            requests = res.get("requests") or {}
            if change.gpu_resource in requests and gpu_quantity(requests[change.gpu_resource]) != change.gpu_limit:
                requests[change.gpu_resource] = str(change.gpu_limit)
    return new


def _scaled(value: Any, replicas: int, round_up: bool) -> int:
    """A rollingUpdate int-or-percent resolved as the deployment controller does."""
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * replicas / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def _surge_unavailable(strategy: Mapping[str, Any], replicas: int) -> tuple[int, int] | None:
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate") or {}
    surge = _scaled(rolling.get("maxSurge", "25%"), replicas, True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # the controller's own fallback
    return surge, unavailable


def describe_strategy(strategy: Mapping[str, Any]) -> str:
    """``RollingUpdate maxSurge 1, maxUnavailable 0`` as the lines name a strategy."""
    return _describe_strategy(strategy)


def _describe_strategy(strategy: Mapping[str, Any]) -> str:
    rolling = strategy.get("rollingUpdate") or {}
    return (f"{strategy.get('type') or 'RollingUpdate'} maxSurge {rolling.get('maxSurge', '25%')}, "
            f"maxUnavailable {rolling.get('maxUnavailable', '25%')}")


#: Host data that lets a pin through whose pods only some fit (``plan_pin``'s ``refuse_partial``), in the pattern of
#: restore's ``override=evidence``: the operator's consent, per run.
PARTIAL = "override=capacity"

#: The write's reason when it switches the strategy (the change-cause a person reads in ``rollout history``).
SURGE_REASON = "maxSurge 0 / maxUnavailable 1: no free GPU for a surge pod"


@dataclass(frozen=True)
class SurgeSwitch:
    """The strategy a rollout needs on a full pool, the one it replaces, and the line saying why. ``outage``: why it
    would stop serving (one line, the refusal's reason) when every Ready pod goes down before a new one is Ready,
    None when something keeps serving or nothing serves now."""

    strategy: dict[str, Any]
    current: dict[str, Any]
    line: str
    outage: str | None = None


def surge_switch(current: Mapping[str, Any], replicas: int, surge_pods: int, where: str,
                 ready: int | None = None) -> SurgeSwitch | None:
    """``maxSurge: 0, maxUnavailable: 1`` (or the unavailability it allowed) when a RollingUpdate with a surge must
    place ``surge_pods`` < 1 new pods beside the old ones: the surge pod stays Pending, and with maxUnavailable
    rounding to 0 the controller scales no old pod down — the rollout never progresses. None: the strategy rolls.
    ``ready``: the workload's Ready pods now (None: not known, nothing said of serving). With replicas minus the new
    maxUnavailable below 1, the old pods stop before the new ones start: fine when none is Ready (a crash loop),
    an outage of a serving workload otherwise (``outage``)."""
    moves = _surge_unavailable(current, replicas)
    if moves is None or moves[0] <= 0 or surge_pods >= 1:
        return None
    down = max(1, moves[1])
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": down}}
    head = (f"strategy: {_describe_strategy(current)} -> {_describe_strategy(strategy)}: no free {where} GPU for a "
            "surge pod")
    if replicas - down >= 1 or ready is None:
        return SurgeSwitch(strategy, dict(current), f"{head}, so pods are replaced one at a time")
    if ready <= 0:
        return SurgeSwitch(strategy, dict(current), f"{head}; no pod of it is Ready, so the old pod(s) stop before "
                           "the new start (nothing serving is stopped)")
    outage = (f"no free {where} GPU for a surge pod, and with {replicas} replica(s) maxSurge 0 / maxUnavailable "
              f"{down} stops its {ready} Ready pod(s) before a new one starts: it would serve nothing until the new "
              f"pod is Ready; free a {where} GPU, or accept the outage with --data {PARTIAL}")
    return SurgeSwitch(strategy, dict(current), f"{head}: it serves nothing from the old pod's stop until the new one "
                       f"is Ready (--data {PARTIAL})", outage)


def _placeable(spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the scheduler may put a pod of ``spec`` on ``node``: Ready, not cordoned, its nodeSelector and the
    product values of its required node affinity matched, every taint tolerated."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != str(v) for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    allowed = affinity_products(spec)
    if allowed and not any(labels.get(k) in allowed for k in PRODUCT_LABELS):
        return False
    health = node_health(node)
    taints = (node.get("spec") or {}).get("taints") or []
    return health.ready and not health.cordoned and all(tolerates(t, spec.get("tolerations") or []) for t in taints)


def ours_in(pods: Sequence[Mapping[str, Any]], namespace: str, selector: Mapping[str, Any] | None) -> set[str]:
    """``namespace/name`` of the pods the workload's ``selector`` selects (none without a selector)."""
    return {f"{namespace}/{(p.get('metadata') or {}).get('name')}" for p in pods
            if (p.get("metadata") or {}).get("namespace") == namespace and selector
            and matches(selector, (p.get("metadata") or {}).get("labels"))}


def surge_room(spec: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
               ours: set[str], replicas: int) -> int:
    """Pods of ``spec``'s size a rollout can add beside those it keeps: on the nodes ``spec`` may use, the free GPUs
    and those our own pods hold, less one slot per pod of ours there (up to ``replicas``). Ours count as held, not
    free, so a rollout of ours under way — a revert written earlier in the same run, whose surge pod holds a GPU the
    dry run, having written nothing, sees free — leaves the same room in ``--dry`` as with ``-y``."""
    gpus = max(1, pod_gpu_request(spec))
    slots = here = 0
    for node in nodes:
        if not _placeable(spec, node):
            continue
        picture = node_gpus(node, pods)
        mine = [n for pod, n in picture.consumers if pod in ours]
        slots += (picture.free + sum(mine)) // gpus
        here += len(mine)
    return max(0, slots - min(replicas, here))


def template_surge_switch(before: Mapping[str, Any], after: Mapping[str, Any], deployment_spec: Mapping[str, Any],
                          nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]], namespace: str,
                          ready: int | None = None) -> SurgeSwitch | None:
    """:func:`surge_switch` for giving a workload the pod template ``after``, its room counted on the nodes ``after``
    may use (:func:`surge_room`). None when the template does not change or its pods ask for no GPU."""
    if dict(before) == dict(after):
        return None
    return _switch_for(after, deployment_spec, nodes, pods, namespace, ready)


def _switch_for(template: Mapping[str, Any], deployment_spec: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                pods: Sequence[Mapping[str, Any]], namespace: str, ready: int | None = None) -> SurgeSwitch | None:
    """:func:`surge_switch` for pods of ``template``, their room counted on the nodes it may use; None when they ask
    for no GPU."""
    spec = dict(template.get("spec") or {})
    if pod_gpu_request(spec) < 1:
        return None
    replicas = int(deployment_spec.get("replicas", 1) or 0)
    room = surge_room(spec, nodes, pods, ours_in(pods, namespace, deployment_spec.get("selector")), replicas)
    pinned = next((str(v) for k, v in (spec.get("nodeSelector") or {}).items() if k in PRODUCT_LABELS), None)
    return surge_switch(dict(deployment_spec.get("strategy") or {}), replicas, room, pinned or "matching", ready)


def stuck_surge_switch(deployment_spec: Mapping[str, Any], template: Mapping[str, Any],
                       rows: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                       pods: Sequence[Mapping[str, Any]], namespace: str, ready: int | None = None
                       ) -> SurgeSwitch | None:
    """The switch that lets a rollout a full pool holds up finish (a template written with a surge before anything
    switched it, by hand or by an older release): new pods unschedulable while old ones hold the GPUs, and no room
    for a surge pod. ``rows``: the Pods fact's. None when no rollout waits so."""
    live = [r for r in rows if not r.get("deleting")]
    if not any(r.get("new") and r.get("unschedulable") for r in live) or all(r.get("new") for r in live):
        return None
    return _switch_for(template, deployment_spec, nodes, pods, namespace, ready)


def plan_pin(template: Mapping[str, Any], deployment_spec: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
             pods: Sequence[Mapping[str, Any]], namespace: str, gpu: GpuPolicy, product: str, gpus: int,
             container: str | None = None, refuse_partial: bool = False, ready: int | None = None) -> PinPlan:
    """Pin ``template`` to ``product`` with ``gpus`` GPUs per pod, or refuse (see the module docstring).

    ``refuse_partial``: also refuse a write whose pods only some fit (capacity below the replicas): its rollout cannot
    finish, so it would leave a healthy workload mid-rollout across two products, the rest Pending (:data:`PARTIAL`
    names the consent that lets it through) — and a strategy switch that would stop every one of ``ready`` serving
    pods before a new one starts (:attr:`SurgeSwitch.outage`)."""
    if gpus < 1:
        raise UserError(f"gpus: {gpus} must be at least 1")
    spec = dict(template.get("spec") or {})
    server = find_server(spec, container)
    tp = gpu_quantity(server.flags.get("tensor-parallel-size", "1")) or 1
    if gpus < tp:
        return PinPlan(dict(template), refusal=f"gpus={gpus} is fewer than --tensor-parallel-size {tp} needs")
    want = canonical_product(product)
    shared_wanted = product.upper().endswith(SHARED_SUFFIX)
    tolerations = list(spec.get("tolerations") or [])
    ours = ours_in(pods, namespace, deployment_spec.get("selector"))
    notes: list[str] = []
    groups: dict[str, list[tuple[str, int, int, bool]]] = {}  # label value → (node, free, ours, usable)
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name"))):
        labels = (node.get("metadata") or {}).get("labels") or {}
        picture = node_gpus(node, pods)
        if picture.capacity <= 0 or picture.product.value is None:
            continue
        if canonical_product(picture.product.value) != want:
            continue
        if picture.product.shared and not (gpu.allow_shared or shared_wanted):
            notes.append(f"{picture.node}: time-sliced ({picture.product.value}); not counted (gpu.allow_shared)")
            continue
        value = labels.get(gpu.label)
        if not value:
            notes.append(f"{picture.node}: no {gpu.label} label; a nodeSelector on it cannot reach this node")
            continue
        health = node_health(node)
        taints = (node.get("spec") or {}).get("taints") or []
        untolerated = [t.get("key") for t in taints if not tolerates(t, tolerations)]
        usable = health.ready and not health.cordoned and not untolerated
        if not usable:
            why = "not ready" if not health.ready else "cordoned" if health.cordoned else \
                f"taint {', '.join(map(str, untolerated))} not tolerated"
            notes.append(f"{picture.node}: {why}")
        held = sum(n for pod, n in picture.consumers if pod in ours)
        groups.setdefault(value, []).append((picture.node, picture.free, held, usable))
    if not groups:
        return PinPlan(dict(template), label=gpu.label, notes=tuple(notes),
                       refusal=f"no node offers {product} under {gpu.label} (allow_shared={gpu.allow_shared}); "
                               "nothing to pin to")

    def pods_fit(rows: list[tuple[str, int, int, bool]], with_ours: bool) -> int:
        return sum((free + (held if with_ours else 0)) // gpus for _, free, held, usable in rows if usable)

    current_value = (spec.get("nodeSelector") or {}).get(gpu.label)
    value = max(groups, key=lambda v: (not v.upper().endswith(SHARED_SUFFIX), pods_fit(groups[v], True),
                                       v == current_value, v))
    rows = groups[value]
    capacity = pods_fit(rows, True)
    free = sum(f for _, f, _, usable in rows if usable)
    names = tuple(n for n, *_ in rows)
    drop = tuple(k for k in (spec.get("nodeSelector") or {}) if k in PRODUCT_LABELS and k != gpu.label)
    change = TemplateChange(node_selector={gpu.label: value}, drop_node_selector=drop, gpu_limit=gpus,
                            gpu_resource=gpu.resource)
    pinned = apply_template_change(template, change, container)
    schedulable = any(usable for *_, usable in rows)
    if capacity == 0 and (pinned != dict(template) or not schedulable):
        return PinPlan(dict(template), label=gpu.label, value=value, nodes=names, notes=tuple(notes),
                       refusal=f"no schedulable {value} capacity: {len(rows)} node(s) labelled {gpu.label}={value}, "
                               f"{free} free GPU(s), none can take a pod of {gpus} GPU(s)")
    if capacity == 0:  # already pinned: no write to refuse; its pods wait for a GPU as they would anyway
        notes.append(f"no {value} GPU is free for its pods now ({len(rows)} node(s), {free} free GPU(s)); "
                     "the pin is already written, so nothing is refused")
    replicas = int(deployment_spec.get("replicas", 1) or 0)
    # on the nodes counted above (the pin's label value; the template's other selector keys are not this plan's)
    surge_pods = surge_room({**(pinned.get("spec") or {}), "nodeSelector": {gpu.label: value}}, nodes, pods, ours,
                            replicas)
    if capacity < replicas and refuse_partial and pinned != dict(template):
        return PinPlan(dict(template), label=gpu.label, value=value, nodes=names, free=free, capacity_pods=capacity,
                       notes=tuple(notes),
                       refusal=f"only {capacity} of {replicas} pod(s) fit on {value} nodes ({len(rows)} node(s), "
                               f"{free} free GPU(s)): the rollout could not finish and would leave "
                               f"{replicas - capacity} pod(s) Pending; free {value} GPUs, or pin anyway with "
                               f"--data {PARTIAL}")
    if capacity < replicas:
        notes.append(f"only {capacity} of {replicas} pod(s) fit on {value} nodes: the rest stay Pending")
    strategy = None
    lines = [f"pin {gpu.label}={value}, {gpus} x {gpu.resource} per pod: {len(rows)} node(s), {free} free GPU(s), "
             f"room for {capacity} pod(s) during the rollout"]
    switch = (surge_switch(dict(deployment_spec.get("strategy") or {}), replicas, surge_pods, value, ready)
              if pinned != dict(template) else None)
    if switch is not None and switch.outage is not None and refuse_partial:
        return PinPlan(dict(template), label=gpu.label, value=value, nodes=names, free=free, capacity_pods=capacity,
                       surge_pods=surge_pods, notes=tuple(notes), refusal=switch.outage)
    if switch is not None:
        strategy = switch.strategy
        lines.append(switch.line)
    return PinPlan(pinned, strategy, gpu.label, value, names, free, capacity, surge_pods, tuple(notes), None,
                   tuple(lines))


def contested(spec: Mapping[str, Any], strategy: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
              pods: Sequence[Mapping[str, Any]], pending: Sequence[Mapping[str, Any]], ours: set[str]
              ) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
    """What a Recreate rollout of a pod template ``spec`` leaves to chance: it deletes every old pod before creating
    the new ones, so the GPUs our pods hold on the nodes ``spec`` may use are free for a moment, and a Pending GPU pod
    of another workload that may go there can take one first (hostile15b: 1 of 2 new pods Unschedulable). (GPUs freed,
    their nodes, the other workloads' Pending GPU pods that may land on those nodes); nothing for another strategy.
    ``pods``: the GPU holders; ``pending``: pods not yet bound; ``ours``: ``namespace/name`` of our pods."""
    if (strategy.get("type") or "RollingUpdate") != "Recreate":
        return 0, (), ()
    freed, where = 0, []
    for node in nodes:
        picture = node_gpus(node, pods)
        mine = sum(n for pod, n in picture.consumers if pod in ours)
        if mine and _placeable(spec, node):
            freed, where = freed + mine, [*where, picture.node]
    if not freed:
        return 0, (), ()
    usable = [n for n in nodes if str((n.get("metadata") or {}).get("name")) in where]
    rivals = []
    for pod in pending:
        meta = pod.get("metadata") or {}
        name = f"{meta.get('namespace')}/{meta.get('name')}"
        if name in ours or (pod.get("spec") or {}).get("nodeName") or pod_gpu_request(pod) < 1:
            continue
        if any(_placeable(pod.get("spec") or {}, node) for node in usable):
            rivals.append(name)
    return freed, tuple(where), tuple(sorted(rivals))
