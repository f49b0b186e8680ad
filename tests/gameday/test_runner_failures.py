"""Game days that must fail or stop: a broken playbook, Ctrl-C mid-game, bad scenarios, unsafe targets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from fixtures.pyinfra_run import ROOT, start_rehearsal

SHIPPED = ROOT / "gameday"


def _variant(tmp: Path, name: str, **changes: object) -> Path:
    """A copy of a shipped scenario with top-level keys replaced; paths re-anchored on the shipped folder."""
    src = next(SHIPPED.glob(f"*-{name}.yaml"))
    data = yaml.safe_load(src.read_text())
    data["policy"] = str((SHIPPED / data["policy"]).resolve())
    data["deploys"] = [str((SHIPPED / d).resolve()) for d in data["deploys"]]
    data.update(changes)
    out = tmp / f"{name}-variant.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def test_a_playbook_that_does_nothing_fails_the_game_with_a_clear_verdict(cli, tmp_path: Path):
    noop = tmp_path / "noop.py"
    noop.write_text('"""A deploy that does nothing (the broken playbook)."""\n')
    scenario = _variant(tmp_path, "bad-rollout", deploys=[str(noop)])
    got = cli("gameday", "run", str(scenario), "--report-dir", str(tmp_path / "r"), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 1
    assert body["passed"] is False
    assert body["verdict"] == ("FAIL: service restored: no rollout of a new template became Ready within "
                               "60.0 min of the fault")
    failed = {c["name"] for c in body["checks"] if not c["ok"]}
    assert failed == {"service restored", "ready replicas", "final flags", "GPU", "final state matches policy"}
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["detected"]["ok"] and checks["pre-game state restored"]["ok"]
    assert body["time_to_restore"] is None
    assert "FAIL: service restored" in Path(body["report"]["md"]).read_text()


def test_sigint_mid_game_restores_the_pre_game_state(tmp_path: Path):
    """A real cluster context: Ctrl-C while the fault is live still leaves the cluster as it was found."""
    sim = start_rehearsal(tmp_path)
    try:
        client = sim.client()
        before = client.get_deployment("llm", "llama-8b")
        env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig), "PYTHONUNBUFFERED": "1"}
        scenario = _variant(tmp_path, "bad-rollout")
        proc = subprocess.Popen(
            [sys.executable, "-m", "vllm_remedy", "gameday", "run", str(scenario), "--cluster", "rehearsal",
             "--i-know-this-is-rehearsal", "--report-dir", str(tmp_path / "r")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path))
        assert proc.stderr is not None
        for line in proc.stderr:
            if "waiting for detection" in line:
                break
        faulted = client.get_deployment("llm", "llama-8b")
        assert "nodeSelector" in faulted["spec"]["template"]["spec"]
        assert faulted["spec"]["template"]["spec"]["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "INTERRUPTED: the game was stopped; pre-game state restored" in out
        after = client.get_deployment("llm", "llama-8b")
        assert after["spec"]["template"]["spec"] == before["spec"]["template"]["spec"]
        assert after["spec"]["strategy"] == before["spec"]["strategy"]
        assert after["metadata"]["annotations"]["kubernetes.io/change-cause"] == \
            before["metadata"]["annotations"]["kubernetes.io/change-cause"]
        assert after["status"]["readyReplicas"] == 2
    finally:
        sim.stop()


def test_sigint_on_the_local_cluster_restores_the_sim_fault(tmp_path: Path):
    """--cluster local: the report written after Ctrl-C shows the node annotations put back and verified."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_remedy", "gameday", "run", "gpu-memory-held", "--report-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path),
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    for line in proc.stderr:
        if "waiting for detection" in line:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    report = json.loads((tmp_path / "gpu-memory-held.json").read_text())
    assert report["interrupted"] is True
    assert [(c["name"], c["ok"]) for c in report["checks"]] == [("pre-game state restored", True)], report["checks"]
    assert "node gpu-l40s-1: annotations, cordon and taints" in report["restored"]
    assert report["timeline"]["marks"][-1]["kind"] == "pre-game-restore"


def test_real_context_needs_confirmation(cli):
    got = cli("gameday", "run", "bad-rollout", "--cluster", "staging-eu")
    assert got.returncode == 2
    assert got.stderr == ("vllm-remedy: error: --cluster staging-eu: a game day breaks the target on purpose; "
                          "confirm with --i-know-this-is-staging-eu\n")


def test_prod_looking_context_is_refused_even_when_confirmed(cli):
    got = cli("gameday", "run", "bad-rollout", "--cluster", "gke-prod-1", "--i-know-this-is-gke-prod-1")
    assert got.returncode == 2
    assert got.stderr.startswith("vllm-remedy: error: --cluster gke-prod-1: looks like production")


def test_sim_only_scenario_refused_on_a_real_context(cli, tmp_path: Path):
    got = cli("gameday", "run", "gpu-memory-held", "--cluster", "staging", "--i-know-this-is-staging",
              "--report-dir", str(tmp_path))
    assert got.returncode == 1
    assert "FAIL:" in got.stdout and "sim-only: this fault exists only on the rehearsal cluster" in got.stdout


def test_bad_scenario_key_is_one_line(cli, tmp_path: Path):
    bad = _variant(tmp_path, "bad-rollout", expect={"detection": {"classification": "melted"}})
    got = cli("gameday", "run", str(bad))
    assert got.returncode == 2
    assert got.stderr.count("\n") == 1
    assert got.stderr.startswith(f"vllm-remedy: error: {bad}: expect.detection.classification: 'melted' is not one of ")


def test_unknown_scenario_names_the_shipped_ones(cli):
    """The list is every scenario file on disk, in file order: a new scenario cannot go unlisted."""
    on_disk = [p.stem.split("-", 1)[1] for p in sorted(SHIPPED.glob("[0-9]*-*.yaml"))]
    assert len(on_disk) >= 13 and "bad-rollout" in on_disk and "statefulset-bad-rollout" in on_disk
    got = cli("gameday", "run", "meltdown")
    assert got.returncode == 2
    assert got.stderr == ("vllm-remedy: error: scenario 'meltdown': no such file or shipped scenario (have: "
                          f"{', '.join(on_disk)})\n")


def test_a_nodes_step_sets_only_cordon_and_taints(cli, tmp_path: Path):
    """What the game can put back exactly: spec.unschedulable and spec.taints; anything else is one line, exit 2."""
    step = {"what": "relabel the pool", "nodes": {"selector": "nvidia.com/gpu.product=NVIDIA-L4",
                                                   "set": {"metadata.labels": {"pool": "x"}}}}
    bad = _variant(tmp_path, "nothing-fits", fault=[step])
    got = cli("gameday", "run", str(bad))
    assert got.returncode == 2
    assert got.stderr == (f"vllm-remedy: error: {bad}: fault[0].nodes.set.metadata.labels: nodes steps set only "
                          "spec.unschedulable, spec.taints\n")


def test_list(cli):
    got = cli("gameday", "list", "-o", "json")
    doc = json.loads(got.stdout)
    assert (doc["apiVersion"], doc["kind"]) == ("vllm-remedy.io/v1alpha1", "ScenarioList")
    assert [s["name"] for s in doc["items"]][:2] == ["bad-rollout", "gpu-swap"]
