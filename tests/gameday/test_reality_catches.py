"""A rehearsal that can fail the plan: the thin-margin game day fails under the perturbed reality, and says why.

gameday/catches/thin-margin.yaml rolls back to a revision the memory model says fits an L4 with 6 % spare KV
cache; the world's reality is a held-out miss of +8.0 % (seed 273), so that revision crash-loops. The failure
must be in the verdict, the checks and the predictions table (predicted fits, happened max_len_exceeds_kv, the
two KV caches side by side), not hidden; and the same game under `--reality exact` passes, so it is the reality
that caught it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.pyinfra_run import ROOT
from vllm_remedy.sim.vllm_pod.reality import residual_for

SCENARIO = ROOT / "gameday" / "catches" / "thin-margin.yaml"
OVER, _ = residual_for("LlamaForCausalLM", "NVIDIA-L4", "0.8", 273)  # the world's reality-seed


def test_the_thin_margin_rollback_fails_honestly_under_the_perturbed_reality(cli, tmp_path: Path):
    got = cli("gameday", "run", str(SCENARIO), "--speed", "300", "--report-dir", str(tmp_path), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 1 and body["passed"] is False, body["verdict"]
    failed = {c["name"] for c in body["checks"] if not c["ok"]}
    assert {"service restored", "ready replicas"} <= failed, body["checks"]
    assert {"detected", "pre-game state restored"}.isdisjoint(failed)
    rollback = [p for p in body["predictions"] if p["step"] == "deploys/restore.py"]
    assert rollback, body["predictions"]
    for row in rollback:
        assert (row["predicted"], row["happened"], row["agree"]) == ("fits", "max_len_exceeds_kv", "no"), row
        assert row["predicted_kv_tokens"] == 32240
        # the log's KV (predicted / (1 + OVER)), not the estimate's
        assert row["actual_kv_gib"] == pytest.approx(row["predicted_kv_gib"] / (1 + OVER), abs=0.01)
    report = Path(body["report"]["md"]).read_text()
    actual = f"{rollback[0]['actual_kv_gib']:.2f} GiB"  # the report prints the log's figure as the JSON has it
    assert ("| fits (32,240 KV tokens, 1.07x at 30208) | max_len_exceeds_kv | 32,240 tokens / 3.94 GiB | "
            f"{actual} | no |") in report


def test_the_same_game_passes_when_the_cluster_obeys_the_estimate(cli, tmp_path: Path):
    got = cli("gameday", "run", str(SCENARIO), "--reality", "exact", "--speed", "300", "--report-dir",
              str(tmp_path), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0 and body["verdict"] == "PASS", body["checks"]
    rollback = [p for p in body["predictions"] if p["step"] == "deploys/restore.py"]
    assert rollback and all(p["actual_kv_tokens"] == p["predicted_kv_tokens"] == 32240 for p in rollback), rollback
