"""A LeaderWorkerSet whose world size (TP × PP) exceeds its group's GPUs cannot start, and every LWS prediction says
so — `vllm-remedy check`, the deploys' prediction lines, restore's choice — and the startup log vLLM then prints is
classified; and every LWS template write warns when its rollout leaves no group serving.

Real-world line (vLLM ≥ 0.11.1 refuses the layout in ParallelConfig before sizing memory): "Value error, World size
(2) is larger than the number of available GPUs (1) in this node. If this is intentional and you are using: - ray,
set '--distributed-executor-backend ray'. - multiprocessing, set '--nnodes' appropriately." — the wording that
vllm-project/vllm pull request #30140 (fixing issue #29447, "Multinode TP Errors when TP > number GPUS on 1 node")
gives the check, as a Kubernetes pod's `kubectl logs --previous` showed it.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER
from fixtures.drift_world import as_json
from fixtures.drift_world import inventory as drift_inventory
from fixtures.lws_remedy import inventory, lines, serve
from fixtures.lws_world import ARGS, GOOD_ARGS, HOST, NAME, RESTORE, install_crd, patch, read, vllm_lws
from fixtures.pyinfra_run import ROOT, Rehearsal
from vllm_remedy.kube.lws_history import rollout_outage, world_size_shortfall
from vllm_remedy.kube.lws_wait import wait_for_lws_rollout
from vllm_remedy.operations.leaderworkerset import prediction_line
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

rehearsal = pyinfra_run.rehearsal
POLICY = str(Path(__file__).resolve().parents[2] / "gameday" / "policies" / "qwen-lws.yaml")
WIDE_ARGS = [*GOOD_ARGS[:6], "2", *GOOD_ARGS[7:]]  # TP 2 × PP 2 = 4 GPUs, the group has 2 pods × 1
SHORT = "world size 4 (TP 2 × PP 2) is larger than the 2 GPUs of the group (2 pods × 1)"
OUTAGE = "replicas 1 with maxSurge 0: the only group is recreated; the model is unavailable for the restart"
REAL_LINES = (
    "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig\n"
    "  Value error, World size (2) is larger than the number of available GPUs (1) in this node. If this is "
    "intentional and you are using:\n  - ray, set '--distributed-executor-backend ray'.\n"
    "  - multiprocessing, set '--nnodes' appropriately.",
    "ValueError: World size (4) is larger than the number of available GPUs (2)",
)


def wide(lws: dict[str, Any]) -> dict[str, Any]:
    got = copy.deepcopy(lws)
    got["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"] = list(WIDE_ARGS)
    return got


def test_the_shortfall_is_one_pure_verdict() -> None:
    assert WIDE_ARGS[5:7] == ["--tensor-parallel-size", "2"]
    lwt = wide(vllm_lws())["spec"]["leaderWorkerTemplate"]
    assert world_size_shortfall(lwt) == SHORT
    assert prediction_line(lwt, 3, None) == f"revision 3: predicted to fail: {SHORT}"
    assert world_size_shortfall(vllm_lws()["spec"]["leaderWorkerTemplate"]) is None  # PP 2 over 2 × 1 fits
    assert world_size_shortfall(vllm_lws(size=4)["spec"]["leaderWorkerTemplate"] | {"leaderTemplate": lwt[
        "leaderTemplate"]} | {"size": 4}) is None


def test_the_outage_warning_follows_the_rollout_strategy() -> None:
    lws = vllm_lws()
    assert rollout_outage(lws) == OUTAGE
    assert rollout_outage(vllm_lws(replicas=2)) is None  # maxUnavailable 1 of 2 keeps a group serving
    lws["spec"]["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxSurge": 1}}
    assert rollout_outage(lws) is None
    lws["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": "0%", "maxUnavailable": "100%"}}
    lws["spec"]["replicas"] = 3
    assert rollout_outage(lws) == ("replicas 3 with maxSurge 0 and maxUnavailable 3: every group is recreated at "
                                   "once; the model is unavailable for the restart")


def test_real_vllm_world_size_lines_are_classified() -> None:
    for text in REAL_LINES:
        report = parse_startup_log(text)
        assert classify(report) is Failure.WORLD_SIZE_EXCEEDS_GPUS, text
        assert report.failure_detail["available_gpus"] < report.failure_detail["world_size"]


def test_check_refuses_a_layout_the_group_cannot_hold(cli, tmp_path: Path) -> None:
    path = tmp_path / "lws.yaml"
    path.write_text(json.dumps(wide(vllm_lws())))
    got = cli("check", "-f", str(path), "--policy", POLICY)
    out = got.stdout.splitlines()
    assert got.returncode == 1, got.stdout + got.stderr
    assert f"  start [error]: {SHORT}" in out, got.stdout
    assert f"  note: predicted to fail: {SHORT}" in out, got.stdout
    assert not any("TP × PP = 4 GPUs over 2 pods" in line for line in out), got.stdout


def test_a_single_group_write_says_the_model_goes_down(rehearsal: Rehearsal, tmp_path: Path) -> None:
    serve(rehearsal)
    inv = inventory(tmp_path)
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, EAGER, flag, "--data", "eager_ttl=2h", timeout=300)
        assert got.returncode == 0, got.stderr
        assert f"warning: {OUTAGE}" in lines(got), got.stderr


def test_restore_reads_the_crash_and_rolls_back_with_the_warning(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The bad rollout is the wide layout: the rehearsal pod refuses it with vLLM's words, and restore rolls back."""
    install_crd(rehearsal.clusters["rehearsal"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    client, clock = rehearsal.client(), rehearsal.clusters["rehearsal"].clock
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=vllm_lws(NAME))
    assert wait_for_lws_rollout(client, "llm", NAME, timeout=1800, clock=clock, interval=5).ok
    good = read(rehearsal)
    patch(rehearsal, [{"op": "replace", "path": ARGS, "value": WIDE_ARGS}])
    # vLLM 0.8.5 has no config check: Ray waits for the placement group and gives up at 2,550 cluster seconds
    failed = wait_for_lws_rollout(client, "llm", NAME, timeout=3600, clock=clock, interval=5)
    assert failed.outcome == "crash-loop", failed.message
    assert failed.crash is not None and str(failed.crash.failure) == Failure.WORLD_SIZE_EXCEEDS_GPUS.value, failed
    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", timeout=600)
    assert got.returncode == 0, got.stderr
    said = lines(got)
    assert f"warning: {OUTAGE}" in said, got.stderr
    assert read(rehearsal)["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]


def test_drift_reports_the_layout_as_a_failed_prediction(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """`vllm-remedy drift` on the wide set (POSTed, never Ready): its prediction check drifts in the same words."""
    install_crd(rehearsal.clusters["rehearsal"])
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=wide(vllm_lws(NAME)))
    inv = drift_inventory(tmp_path, rehearsal.kubeconfig, str(ROOT / "policies"), hosts=[HOST])
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "drift", "-i", inv, "-o", "json"],
                         capture_output=True, text=True, env=rehearsal.env(), cwd=rehearsal.tmp, timeout=180)
    host = as_json(got)["hosts"][0]
    checks = {c["check"]: c for c in host["checks"]}
    assert checks["prediction"] == {"check": "prediction", "status": "drift", "detail": f"predicted to fail: {SHORT}"}
    assert "prediction" in host["drifted"], host


def test_a_deploy_refuses_to_write_a_layout_the_group_cannot_hold(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """enforce_eager on the wide set: any template it would write keeps the world size, so it is one refusal line
    naming it, and nothing is written."""
    install_crd(rehearsal.clusters["rehearsal"])
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=wide(vllm_lws(NAME)))
    before = read(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path), EAGER, "-y", "--data", "eager_ttl=2h", timeout=300)
    assert any(SHORT in line for line in lines(got)), got.stderr
    assert read(rehearsal)["spec"] == before["spec"]
