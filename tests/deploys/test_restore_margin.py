"""deploys/restore.py says when the revision it rolls back to fits only inside the estimate margin (real pyinfra
CLI, rehearsal cluster seeded with the thin-margin game day's world).

Revision 12 of gameday/catches/thin-margin-world.yaml is predicted to fit an L4 at --max-model-len 30208 with
1.07x concurrency: its KV cache could lose only 6 % and still hold one request, less than the estimator's own
held-out error. The planner says so ("fits by 6 %, below the 11 % estimate margin"); the line an operator
reads before approving the rollback must say it the same way, not a bare "fits".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.dry_run import predictions
from fixtures.pyinfra_run import ROOT, Rehearsal, start_rehearsal
from fixtures.restore_world import RESTORE, crash_looping, write_inventory
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm.memory.kv_margin import KV_ESTIMATE_MARGIN

WORLD = ROOT / "gameday" / "catches" / "thin-margin-world.yaml"
POLICY = ROOT / "gameday" / "policies" / "llama-8b-l4.yaml"
PCT = f"{KV_ESTIMATE_MARGIN * 100:.3g} %"


@pytest.fixture
def thin_margin(tmp_path: Path) -> Iterator[Rehearsal]:
    sim = start_rehearsal(tmp_path, seed=str(WORLD), reality=EXACT)
    yield sim
    sim.stop()


def _l40s_cordoned(rehearsal: Rehearsal) -> None:
    client = rehearsal.client()
    for node in client.list_nodes("nvidia.com/gpu.product=NVIDIA-L40S"):
        client.request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", content_type="application/json-patch+json",
                       body=[{"op": "add", "path": "/spec/unschedulable", "value": True}])


def _revision_14(dep: dict[str, Any]) -> None:
    """The game day's fault: --max-model-len dropped on the L4 pool (the model's 131072 default cannot fit)."""
    dep["spec"]["strategy"] = {"type": "Recreate"}
    spec = dep["spec"]["template"]["spec"]
    spec["containers"][0]["args"] = ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.90",
                                     "--max-num-seqs", "64"]
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_the_rollback_prediction_says_the_fit_is_inside_the_estimate_margin(thin_margin: Rehearsal) -> None:
    rehearsal = thin_margin
    _l40s_cordoned(rehearsal)
    rehearsal.change(_revision_14, change_cause="drop --max-model-len; move to the L4 pool")
    assert rehearsal.cluster.wait_for(lambda: crash_looping(rehearsal), 60), "revision 14 never crash-looped"
    got = rehearsal.pyinfra(write_inventory(rehearsal.tmp, policy=str(POLICY)), RESTORE, "--dry")
    assert got.returncode == 0, got.stderr
    assert "to revision 12" in got.stderr, got.stderr
    assert predictions(got.stderr) == [
        f"prediction on NVIDIA-L4: fits by 6 %, below the {PCT} estimate margin — KV cache 32,240 tokens, "
        "maximum concurrency 1.07x at max-model-len 30208"], got.stderr
