"""The rollout strategy a full pool needs, pure: one rule (``surge_switch``) over the room a template's new pods have
(``surge_room``), asked by the pin, the budget's rung, the eager toggle and a rollout already held up."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.pod_templates import ARGS, template
from vllm_remedy.remedies.pin_gpu import stuck_surge_switch, surge_room, surge_switch, template_surge_switch

L4 = {"nvidia.com/gpu.product": "NVIDIA-L4"}
TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def node(name: str, gpus: int = 1, labels: dict[str, str] | None = None, taint: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels if labels is not None else L4)},
            "spec": {"taints": [dict(TAINT, value="present")] if taint else []},
            "status": {"capacity": {"nvidia.com/gpu": str(gpus)}, "allocatable": {"nvidia.com/gpu": str(gpus)},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, on: str, app: str = "x") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "llm", "labels": {"app": app}},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}}


def spec(replicas: int = 1, strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"replicas": replicas, "selector": {"matchLabels": {"app": "x"}}, **({"strategy": strategy} if strategy
                                                                              is not None else {})}


BEFORE, AFTER = template(selector=L4), template([*ARGS, "--enforce-eager"], selector=L4)
NODES = [node("a"), node("b")]
FULL = [pod("x-1", "a"), pod("other-1", "b", app="other")]  # ours on a, someone else's on b


def test_the_default_strategy_on_a_full_pool_switches_and_says_why() -> None:
    got = template_surge_switch(BEFORE, AFTER, spec(), NODES, FULL, "llm")
    assert got is not None
    assert got.strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert got.line == ("strategy: RollingUpdate maxSurge 25%, maxUnavailable 25% -> RollingUpdate maxSurge 0, "
                        "maxUnavailable 1: no free NVIDIA-L4 GPU for a surge pod, so pods are replaced one at a time")


@pytest.mark.parametrize(("why", "args"), [
    ("a free GPU on b", (BEFORE, AFTER, spec(), NODES, [pod("x-1", "a")], "llm")),
    ("Recreate has no surge", (BEFORE, AFTER, spec(strategy={"type": "Recreate"}), NODES, FULL, "llm")),
    ("maxSurge 0 already", (BEFORE, AFTER, spec(strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 0, "maxUnavailable": 1}}), NODES, FULL, "llm")),
    ("the template does not change", (BEFORE, BEFORE, spec(), NODES, FULL, "llm")),
])
def test_no_switch_where_the_rollout_progresses(why: str, args: tuple[Any, ...]) -> None:
    assert template_surge_switch(*args) is None, why


def test_room_counts_our_pods_as_held_so_a_rollout_of_ours_under_way_leaves_the_same_room() -> None:
    """Two replicas on three nodes: the dry run sees c free; with -y an earlier write's surge pod of ours holds it."""
    nodes = [node("a"), node("b"), node("c")]
    steady = [pod("x-1", "a"), pod("x-2", "b")]
    rolling = [*steady, pod("x-3", "c")]
    tpl = AFTER["spec"]
    assert surge_room(tpl, nodes, steady, {"llm/x-1", "llm/x-2"}, 2) == 1
    assert surge_room(tpl, nodes, rolling, {"llm/x-1", "llm/x-2", "llm/x-3"}, 2) == 1
    assert surge_room(tpl, nodes, rolling, {"llm/x-1", "llm/x-2", "llm/x-3"}, 3) == 0


def test_room_is_on_the_nodes_the_template_may_use() -> None:
    tainted = [node("a", taint=True), node("b", labels={"nvidia.com/gpu.product": "NVIDIA-L40S"})]
    assert surge_room(AFTER["spec"], tainted, [], set(), 1) == 0  # a: taint not tolerated; b: another product
    tolerated = {**AFTER["spec"], "tolerations": [TAINT]}
    assert surge_room(tolerated, tainted, [], set(), 1) == 1


def test_percentages_round_as_the_deployment_controller_does() -> None:
    eight = spec(8)  # 25 % of 8: surge 2, unavailable 2 - switched to unavailable 2, never less
    got = surge_switch(eight.get("strategy") or {}, 8, 0, "NVIDIA-L4")
    assert got is not None and got.strategy["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 2}
    assert surge_switch({}, 0, 0, "NVIDIA-L4") is None  # no replicas: nothing to surge


def test_a_rollout_held_up_by_the_pool_gets_the_switch_a_lone_pending_revision_does_not() -> None:
    rows = [{"name": "x-old", "new": False, "unschedulable": None, "deleting": False},
            {"name": "x-new", "new": True, "unschedulable": "0/2 nodes are available", "deleting": False}]
    held = stuck_surge_switch(spec(), BEFORE, rows, NODES, FULL, "llm")
    assert held is not None and held.strategy["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    assert stuck_surge_switch(spec(), BEFORE, rows[1:], NODES, [pod("other-1", "b", app="other")], "llm") is None
    assert stuck_surge_switch(spec(), BEFORE, [dict(rows[1], unschedulable=None), rows[0]], NODES, FULL, "llm") is None
