"""The full-pool switch's availability rule (pure): written where something keeps serving or nothing serves now,
an outage (refused without consent) where it would stop every Ready pod; and a toggle's strategy record is put back
only while the Deployment still has the strategy the toggle wrote."""

from __future__ import annotations

from vllm_remedy.kube.annotations import Toggle
from vllm_remedy.remedies import enforce_eager
from vllm_remedy.remedies.pin_gpu import surge_switch

NO_DOWN = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
SWITCHED = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def test_one_serving_replica_is_an_outage_and_the_line_says_so() -> None:
    got = surge_switch(NO_DOWN, 1, 0, "NVIDIA-A10G", ready=1)
    assert got is not None and got.strategy == SWITCHED
    assert got.outage is not None and "serve nothing until the new pod is Ready" in got.outage
    assert got.outage.endswith("free a NVIDIA-A10G GPU, or accept the outage with --data override=capacity")
    assert "one at a time" not in got.line and "serves nothing" in got.line


def test_no_ready_pod_or_replicas_left_serving_is_no_outage() -> None:
    crashing = surge_switch(NO_DOWN, 1, 0, "NVIDIA-A10G", ready=0)
    assert crashing is not None and crashing.outage is None and "nothing serving is stopped" in crashing.line
    three = surge_switch(NO_DOWN, 3, 0, "NVIDIA-A10G", ready=3)
    assert three is not None and three.outage is None and three.line.endswith("replaced one at a time")
    assert surge_switch(NO_DOWN, 1, 1, "NVIDIA-A10G", ready=1) is None  # room for the surge pod: no switch


def test_the_recorded_switch_goes_back_only_while_it_is_ours() -> None:
    prior = enforce_eager.with_strategy({"container": "vllm", "command": None, "args": ["m"]}, NO_DOWN, SWITCHED)
    toggle = Toggle(enforce_eager.EAGER, "2026-12-06T00:00:00Z", prior)
    assert enforce_eager.strategy_back(toggle, SWITCHED) == (NO_DOWN, None)
    back, why = enforce_eager.strategy_back(toggle, {"type": "Recreate"})
    assert back is None and why is not None and "left as it is" in why
    plain = Toggle(enforce_eager.EAGER, "2026-12-06T00:00:00Z", {"container": "vllm", "command": None, "args": []})
    assert enforce_eager.strategy_back(plain, SWITCHED) == (None, None)
    forged = Toggle(enforce_eager.EAGER, "x", {**prior, "strategy": {"before": {"type": "Bogus"}, "written": SWITCHED}})
    assert enforce_eager.strategy_back(forged, SWITCHED) == (None, None)
