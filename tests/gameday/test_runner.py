"""Game days end to end: every shipped scenario through the real CLI on the built-in rehearsal cluster."""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path

import pytest

from vllm_remedy.gameday.scenario import load_scenario, shipped

SCENARIOS = [load_scenario(p).name for p in shipped()]
#: The startup failure each fault causes, predicted before it happened (gpu-memory-held needs the held GiB).
CRASH_PREDICTED = {"bad-rollout": "max_len_exceeds_kv", "gpu-memory-held": "free_memory_below_utilization"}


def test_thirteen_scenarios_ship_in_run_order():
    assert SCENARIOS == ["bad-rollout", "gpu-swap", "gpu-memory-held", "oom-under-load", "kv-fp8-unsupported",
                         "gateway-fallback", "enforce-eager-expired", "two-bad-revisions", "nothing-fits",
                         "mark-withdrawn", "statefulset-bad-rollout", "inferenceservice-bad-rollout",
                         "leaderworkerset-bad-rollout"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_passes_end_to_end(cli, tmp_path: Path, name: str):
    # At 300x rather than the demo's 600x: each wall second a loaded CI box loses (process starts, polls)
    # costs the cluster half as many minutes against the scenarios' time-to-restore limits.
    got = cli("gameday", "run", name, "--speed", "300", "--report-dir", str(tmp_path), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0, body["verdict"]
    assert (body["apiVersion"], body["kind"]) == ("vllm-remedy.io/v1alpha1", "GameDayResult")
    assert body["passed"] is True and body["verdict"] == "PASS"
    assert all(c["ok"] for c in body["checks"]), body["checks"]
    names = [c["name"] for c in body["checks"]]
    assert names[:4] == ["detected", "deploys succeeded", "service restored", "ready replicas"]
    assert names[-1] == "pre-game state restored"
    kinds = [m["kind"] for m in body["timeline"]["marks"]]
    assert kinds[0] == "fault" and "detection" in kinds and "rollout-done" in kinds and kinds[-1] == "pre-game-restore"
    assert kinds.index("fault") < kinds.index("detection") < kinds.index("action") < kinds.index("rollout-done")
    # the runner's stable window (its last 600 cluster s end at the confirm mark) is whole on the cluster's clock,
    # and fast-forwarded: its samples (each reads the cluster's clock and ours together) mostly saw the cluster run
    # faster than the game's 300x
    at = {m["kind"]: m for m in body["timeline"]["marks"]}
    assert at["confirm"]["t"] - at["rollout-done"]["t"] >= 600
    window = [s for s in body["timeline"]["samples"] if at["confirm"]["t"] - 600 <= s["t"] <= at["confirm"]["t"]]
    rates = sorted((b["t"] - a["t"]) / (b["wall"] - a["wall"]) for a, b in itertools.pairwise(window))
    assert rates[len(rates) // 2] > 600, rates
    ttr = body["time_to_restore"]
    assert 0 < ttr["cluster_seconds"] <= 3600 and 0 < ttr["wall_seconds"] < 20
    # projected: the playbooks' own seconds counted at wall speed, never more than the raw cluster time
    assert 0 < ttr["projected_seconds"] <= ttr["cluster_seconds"] and 0 < ttr["tool_wall_seconds"] < 20
    assert body["matches_policy"] is True
    assert all(d["returncode"] == 0 for d in body["deploys"])
    page = Path(body["report"]["html"]).read_text()
    png = Path(body["report"]["png"]).read_bytes()
    assert png.startswith(b"\x89PNG") and base64.b64encode(png).decode() in page  # self-contained
    assert "PASS" in Path(body["report"]["md"]).read_text()
    # the memory model is never contradicted by how a pod actually started
    assert body["predictions"] and not [p for p in body["predictions"] if p["agree"] == "no"], body["predictions"]
    if name in CRASH_PREDICTED:
        assert any(p["predicted"] == CRASH_PREDICTED[name] and p["agree"] == "yes" for p in body["predictions"])
    if name in KIND_SHOWS:
        KIND_SHOWS[name](body, {c["name"]: c for c in body["checks"]}, *body["deploys"])


def _statefulset_shows(body: dict, checks: dict, run: dict) -> None:
    """restore.py ran on the StatefulSet host and rolled the set back by its ControllerRevisions."""
    assert checks["detected"]["detail"].startswith("detected: max_len_exceeds_kv in pod llama-sts-")
    assert checks["ready replicas"]["detail"] == "2 Ready, expected 2"
    assert checks["final flags"]["detail"] == "--max-model-len=16384"
    assert checks["GPU"]["ok"] and checks["pre-game state restored"]["ok"]
    assert any(line.startswith("roll back statefulset llm/llama-sts from revision 2 to revision 1")
               for line in run["output"]), run["output"]
    assert ("statefulset llm/llama-sts: pre-game spec.template, spec.updateStrategy, spec.replicas and annotations"
            in body["restored"])
    assert "controllerrevisions marks" in body["restored"]
    assert body["template_changes_to_recovery"] == 1


def _inferenceservice_shows(body: dict, checks: dict, run: dict) -> None:
    """KServe's last ready predictor revision written back; flags read from the pod template KServe derives."""
    assert checks["detected"]["detail"].startswith("detected: max_len_exceeds_kv in pod llama-predictor-")
    assert checks["ready replicas"]["detail"] == "1 Ready, expected 1"
    assert checks["final flags"]["detail"] == "--max-model-len=16384"  # runtime command + model.args
    assert any(line.startswith("roll back inferenceservice llm/llama from predictor revision llama-predictor-00002 "
                               "to llama-predictor-00001") for line in run["output"]), run["output"]
    assert "inferenceservice llm/llama: pre-game spec.predictor and annotations" in body["restored"]


def _leaderworkerset_shows(body: dict, checks: dict, run: dict) -> None:
    """The previous ControllerRevision written back; readiness counted in groups, the leader's log classified."""
    assert checks["detected"]["detail"] == "detected: max_len_exceeds_kv in pod qwen-lws-0's log"  # the leader
    assert checks["ready replicas"]["detail"] == "1 Ready, expected 1"  # one group
    assert checks["final flags"]["detail"] == "--max-model-len=32768"
    assert any(line.startswith("roll back leaderworkerset llm/qwen-lws from revision 2 to revision 1")
               for line in run["output"]), run["output"]
    assert ("leaderworkerset llm/qwen-lws: pre-game spec.leaderWorkerTemplate, spec.replicas and annotations"
            in body["restored"])


#: What a game day on another kind than a Deployment must show, checked on the same run as every scenario (the
#: same command line test_kinds.py ran a second time: one game day of ~15 s each saved).
KIND_SHOWS = {"statefulset-bad-rollout": _statefulset_shows, "inferenceservice-bad-rollout": _inferenceservice_shows,
              "leaderworkerset-bad-rollout": _leaderworkerset_shows}


def test_bad_rollout_figures(cli, tmp_path: Path):
    """The main demo's numbers: one rollback, the L4 pods' crashes classified, every prediction confirmed."""
    got = cli("rehearse", "--report-dir", str(tmp_path), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0, body["verdict"]
    assert (body["apiVersion"], body["kind"]) == ("vllm-remedy.io/v1alpha1", "GameDayResult")
    assert body["template_changes_to_recovery"] == 1
    assert body["restarts_to_recovery"] >= 2
    crashed = {c["failure"] for c in body["timeline"]["classified"]}
    assert crashed == {"max_len_exceeds_kv"}
    l4 = [p for p in body["predictions"] if p["node"].endswith("(NVIDIA-L4)")]
    assert l4 and all(p["predicted"] == "max_len_exceeds_kv" and p["agree"] == "yes" for p in l4)
    diff = "\n".join(body["deploys"][0]["diff"])
    assert "+    nvidia.com/gpu.product: NVIDIA-L40S" in diff
    assert "-    cloud.google.com/gke-accelerator: nvidia-l4" in diff
