"""The gate: policy mode, one action per host, cool-down, dedup on the fingerprint."""

from __future__ import annotations

from vllm_remedy.respond.gate import DRY_RUN, RUN, SKIP, Gate, stamped

H = "@k8s/prod/llm/llama-8b"


def test_auto_runs_once_then_busy_then_cool_down_then_runs_again() -> None:
    gate = Gate()
    assert gate.decide(H, "f1", "auto", 600, 0).kind == RUN
    busy = gate.decide(H, "f2", "auto", 600, 1)
    assert busy.kind == SKIP and "already running" in busy.reason
    gate.finished(H, 100)
    dup = gate.decide(H, "f1", "auto", 600, 200)
    assert dup.kind == SKIP and dup.reason.startswith("duplicate: alert f1")
    cool = gate.decide(H, "f2", "auto", 600, 200)
    assert cool.kind == SKIP and "cool-down for another 500s" in cool.reason
    assert gate.repeat("f1", 200) == dup and gate.repeat("f2", 200) is None  # before routing: by fingerprint only
    assert gate.decide(H, "f1", "auto", 600, 701).kind == RUN  # counted from the end of the last action


def test_modes() -> None:
    assert Gate().decide(H, "f", "off", 600, 0) == Gate().decide(H, "f", "off", 0, 0)
    assert Gate().decide(H, "f", "off", 600, 0).kind == SKIP
    assert Gate().decide(H, "f", "dry-run", 600, 0).kind == DRY_RUN
    gate = Gate()
    gate.decide(H, "f", "off", 600, 0)
    assert not gate.running and gate.decide(H, "f", "auto", 600, 1).kind == RUN  # off left no trace


def test_the_deployments_stamp_keeps_the_cool_down_across_restarts() -> None:
    at = "vllm-remedy.io/last-action-at"
    notes = {at: "2026-12-03T18:00:00Z", "vllm-remedy.io/last-action": "restore"}
    now = 1796320800.0 + 60  # 18:01:00Z
    decision, age = stamped(notes, "vllm-remedy.io/", 600, now)
    assert decision.kind == SKIP and age == 60
    assert decision.reason == "cool-down: last action at 2026-12-03T18:00:00Z by restore (540s left)"
    assert stamped(notes, "vllm-remedy.io/", 600, now + 600) is None  # cool-down over
    assert stamped(notes, "example.com/", 600, now) is None  # the policy's prefix decides the key
    assert stamped({at: "garbage"}, "vllm-remedy.io/", 600, now) is None
    assert stamped({}, "vllm-remedy.io/", 600, now) is None
    gate = Gate()
    assert gate.decide(H, "f1", "auto", 600, 1000).kind == RUN
    gate.release(H, "f1", 1000 - 60)
    assert not gate.running and gate.repeat("f1", 1001) is None
    assert "cool-down for another 539s" in gate.decide(H, "f2", "auto", 600, 1001).reason
