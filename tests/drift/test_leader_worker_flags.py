"""`vllm-remedy drift -o json` on LeaderWorkerSets whose leader and worker templates disagree: the check restore
refuses on (``kube.lws_history.flag_disagreement``) is a drift finding too, in the same words - a group that
would start two different engines must not read as in sync until the 3 a.m. restore refuses it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixtures import lws_world, pyinfra_run
from fixtures.drift_world import as_json
from fixtures.drift_world import inventory as drift_inventory
from fixtures.pyinfra_run import ROOT, Rehearsal

rehearsal = pyinfra_run.rehearsal
SPLIT = "qwen-split"
SPLIT_HOST = f"@k8s/rehearsal/llm/leaderworkerset/{SPLIT}"
WORKER_ARGS = [lws_world.GOOD_ARGS[0], "--max-model-len", "8192", "--gpu-memory-utilization", "0.50",
               *lws_world.GOOD_ARGS[5:]]


def split_lws() -> dict[str, Any]:
    """The review's shape: workers run `vllm serve` too, at 8192 / 0.50, while the leader runs 32768 / 0.90."""
    lws = lws_world.vllm_lws(SPLIT)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    worker = copy.deepcopy(lwt["leaderTemplate"]["spec"]["containers"][0])
    worker.pop("readinessProbe")
    lwt["workerTemplate"]["spec"]["containers"] = [{**worker, "name": "vllm-worker", "args": WORKER_ARGS}]
    return lws


def test_drift_reports_leader_and_worker_templates_that_disagree(rehearsal: Rehearsal, tmp_path: Path) -> None:
    lws_world.install_crd(rehearsal.clusters["rehearsal"])
    client = rehearsal.client()
    path = client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1")
    client.request("POST", path, body=lws_world.vllm_lws(lws_world.NAME))  # workers only join Ray: agrees
    client.request("POST", path, body=split_lws())
    inv = drift_inventory(tmp_path, rehearsal.kubeconfig, str(ROOT / "policies"),
                          hosts=[lws_world.HOST, SPLIT_HOST])
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "drift", "-i", inv, "-o", "json"],
                         capture_output=True, text=True, env=rehearsal.env(), cwd=rehearsal.tmp, timeout=180)
    doc = as_json(got)
    # deploys/budget.py refuses the split set (its operations read both templates): drift with its fix refused, exit 3
    assert (got.returncode, doc["status"]["errors"]) == (3, 0), got.stdout
    hosts = {h["host"]: h for h in doc["hosts"]}
    said = ("leader and worker templates disagree on --max-model-len (leader 32768, worker 8192); make them agree "
            "before remediating")
    split = {c["check"]: c for c in hosts[SPLIT_HOST]["checks"]}["leader-worker-flags"]
    assert split == {"check": "leader-worker-flags", "status": "drift", "detail": said}, hosts[SPLIT_HOST]["checks"]
    assert "leader-worker-flags" in hosts[SPLIT_HOST]["drifted"]
    assert hosts[SPLIT_HOST]["status"] == "FixRefused"  # refused in the check's words, before anything is written
    assert hosts[SPLIT_HOST]["fix"]["refused"]["reason"] == f"leaderworkerset llm/{SPLIT}: {said}"
    assert hosts[lws_world.HOST]["status"] == "Drifted" and hosts[lws_world.HOST]["fix"]["changes"] == 1
    agreeing = {c["check"]: c["status"] for c in hosts[lws_world.HOST]["checks"]}
    assert agreeing["leader-worker-flags"] == "pass"
    assert "leader-worker-flags" not in hosts[lws_world.HOST]["drifted"]
