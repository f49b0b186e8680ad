"""`vllm-remedy sim up/down` as users run it: background server, kubeconfig, restart from state."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import yaml

from fixtures import sim_world
from fixtures.sim_world import call
from fixtures.yaml_bombs import alias_bomb


def test_up_serves_the_runbook_world_and_down_up_keeps_state(cli, tmp_path):
    state = tmp_path / "state"
    auth, faults = tmp_path / "auth.yaml", tmp_path / "faults.yaml"
    auth.write_text(yaml.safe_dump({"tokens": {
        "t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
        "t-drift": {"user": "drift", "rules": [{"verbs": ["get", "list", "watch"], "resources": "*"}]}}}))
    faults.write_text(yaml.safe_dump({"staging": [{"verb": "patch", "error_rate": 1.0, "error_code": 503}]}))
    up = cli("sim", "up", "--background", "--state", str(state), "--speed", "600", "--cluster", "prod",
             "--cluster", "staging", "--auth", str(auth), "--faults", str(faults), "-o", "json")
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)
    assert (info["apiVersion"], info["kind"]) == ("vllm-remedy.io/v1alpha1", "RehearsalCluster")
    deploy = "/apis/apps/v1/namespaces/llm/deployments/llama-8b"
    merge = "application/merge-patch+json"
    try:
        assert info["clusters"] == ["prod", "staging"]
        config = yaml.safe_load(Path(info["kubeconfig"]).read_text())
        assert [c["name"] for c in config["contexts"]] == ["prod", "prod-drift", "staging", "staging-drift"]
        prod, staging = info["url"] + "/clusters/prod", info["url"] + "/clusters/staging"
        _, _, deploys = call(prod, "GET", "/apis/apps/v1/namespaces/llm/deployments", token="t-drift")
        assert [d["metadata"]["name"] for d in deploys["items"]] == ["llama-8b"]
        assert call(prod, "GET", deploy)[0] == 401
        assert call(prod, "PATCH", deploy, {}, content_type=merge, token="t-drift")[0] == 403
        assert call(staging, "PATCH", deploy, {}, content_type=merge, token="t-admin")[0] == 503
        _, _, scaled = call(prod, "PATCH", deploy, {"spec": {"replicas": 3}}, content_type=merge, token="t-admin")
        uid = scaled["metadata"]["uid"]
        for cluster, replicas in (("prod", 3), ("staging", 2)):  # each cluster's own kube-state-metrics
            status, _, text = call(info["url"], "GET", f"/kube-state-metrics/{cluster}/metrics", accept="text/plain")
            assert status == 200
            assert f'kube_deployment_spec_replicas{{namespace="llm",deployment="llama-8b"}} {replicas}' in text
        again = cli("sim", "up", "--background", "--state", str(state))
        assert again.returncode == 2
        assert "already running" in again.stderr
    finally:
        down = cli("sim", "down", "--state", str(state), "-o", "json")
    assert down.returncode == 0, down.stderr
    stopped = json.loads(down.stdout)
    assert (stopped["apiVersion"], stopped["kind"]) == ("vllm-remedy.io/v1alpha1", "RehearsalClusterStopped")
    assert (state / "prod.json").exists()
    up = cli("sim", "up", "--background", "--state", str(state), "--speed", "600", "--cluster", "prod", "-o", "json")
    assert up.returncode == 0, up.stderr
    try:
        info = json.loads(up.stdout)
        _, _, back = call(info["url"] + "/clusters/prod", "GET", deploy)
        assert (back["metadata"]["uid"], back["spec"]["replicas"]) == (uid, 3)
        kubectl = sim_world.kubectls().get("32")
        if kubectl is not None:  # the written kubeconfig works for real kubectl too
            got = subprocess.run([str(kubectl), "--kubeconfig", info["kubeconfig"], "--context", "prod",
                                  "--cache-dir", str(tmp_path / "cache"), "-n", "llm", "get", "deploy"],
                                 capture_output=True, text=True, timeout=60)
            assert got.returncode == 0, got.stderr
            name, ready = got.stdout.splitlines()[1].split()[:2]
            assert (name, ready.split("/")[1]) == ("llama-8b", "3")
    finally:
        assert cli("sim", "down", "--state", str(state)).returncode == 0


def test_bad_input_is_one_line_exit_2(cli, tmp_path):
    missing = cli("sim", "up", "--state", str(tmp_path), "--seed", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and missing.stderr.startswith("vllm-remedy: error: ")
    down = cli("sim", "down", "--state", str(tmp_path))
    assert (down.returncode, down.stderr.strip()) == (2, f"vllm-remedy: error: {tmp_path}: no rehearsal cluster "
                                                         "is running")
    bad_cluster = cli("sim", "up", "--state", str(tmp_path), "--cluster", "Prod_1")
    assert bad_cluster.returncode == 2 and "--cluster 'Prod_1'" in bad_cluster.stderr


def test_an_alias_bomb_seed_is_refused_fast(cli, tmp_path):
    seed = tmp_path / "seed.yaml"
    seed.write_text(alias_bomb())
    started = time.monotonic()
    got = cli("sim", "up", "--state", str(tmp_path), "--seed", str(seed))
    # a hang guard only (an unrefused bomb takes hours); bench/bench_yaml_limits.py measures how fast it is refused
    assert time.monotonic() - started < 120
    assert (got.returncode, got.stderr) == (2, f"vllm-remedy: error: {seed}: refused: YAML aliases expand to more "
                                               "than 100000 extra nodes (alias bomb?)\n")


def test_reality_flag_overrides_the_seed_and_a_bad_key_is_one_line(cli, tmp_path):
    """`--reality exact` wins over the seed's `reality` keys, which are validated (tests/sim/vllm_pod/test_reality.py
    shows what the pods' logs say in each reality)."""
    seed = tmp_path / "world.yaml"
    seed.write_text(yaml.safe_dump({"reality": "perturbed", "reality-seed": 3, "namespaces": ["llm"], "nodes": [
        {"name": "l40s", "gpu": {"product": "NVIDIA-L40S"}}]}))
    state = tmp_path / "state"
    up = cli("sim", "up", "--background", "--state", str(state), "--speed", "600", "--seed", str(seed),
             "--reality", "exact", "-o", "json")
    assert up.returncode == 0, up.stderr
    try:
        assert json.loads(up.stdout)["reality"] == {"rehearsal": "exact"}
    finally:
        assert cli("sim", "down", "--state", str(state)).returncode == 0
    seed.write_text(yaml.safe_dump({"reality": "real", "namespaces": ["llm"]}))
    bad = cli("sim", "up", "--state", str(tmp_path / "other"), "--seed", str(seed))
    assert (bad.returncode, bad.stderr) == (2, f"vllm-remedy: error: {seed} (cluster rehearsal): reality: expected one "
                                               "of perturbed, exact, got 'real'\n")
