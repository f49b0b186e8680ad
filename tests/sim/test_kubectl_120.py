"""kubectl 1.20 (Debian's kubernetes-client) against the rehearsal cluster.

1.20 reads ``/openapi/v2`` as protobuf before ``apply --server-side --dry-run=server`` and ``diff``;
these tests prove the hand-encoded gnostic document satisfies it. Skipped (with the reason) when no
1.20 binary is present: run scripts/get_tools.py to unpack one.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from fixtures import sim_world
from fixtures.sim_world import HEALTHY_STEP2, runbook_grep

runbook_sim = sim_world.runbook_sim
V = "20"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def ok(got) -> str:
    assert got.returncode == 0, got.stderr
    return got.stdout


def rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def manifest(sim, replicas: int) -> str:
    live = sim.clusters["a"].store.get("deployments.apps", "llm", "llama-8b")
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama-8b", "namespace": "llm"},
           "spec": {"replicas": replicas, "selector": live["spec"]["selector"], "template": live["spec"]["template"]}}
    path = sim.tmp / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_get_tables_and_wide_pods(runbook_sim):
    k = runbook_sim.kubectl
    deploy = rows(ok(k(V, "-n", "llm", "get", "deploy")))
    assert deploy[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert deploy[1][:4] == ["llama-8b", "2/2", "2", "2"]
    pods = rows(ok(k(V, "-n", "llm", "get", "pod", "-l", "app=llama-8b", "-o", "wide")))
    assert pods[0][5:7] == ["IP", "NODE"]
    assert all(r[6].startswith("gpu-l40s-") for r in pods[1:])


def test_rollout_history_undo_status(runbook_sim):
    k = runbook_sim.kubectl
    revs = sim_world.revisions(runbook_sim.clusters["a"])
    history = rows(ok(k(V, "-n", "llm", "rollout", "history", "deploy/llama-8b")))
    assert [r[0] for r in history[2:]] == [str(r) for r in revs]
    assert "--max-model-len" in ok(k(V, "-n", "llm", "rollout", "history", "deploy/llama-8b",
                                     f"--revision={revs[-2]}"))
    assert ok(k(V, "-n", "llm", "rollout", "undo", "deploy/llama-8b")).strip() == \
        "deployment.apps/llama-8b rolled back"
    status = ok(k(V, "-n", "llm", "rollout", "status", "deploy/llama-8b", "--timeout=60s"))
    assert status.strip().splitlines()[-1] == 'deployment "llama-8b" successfully rolled out'


def test_patch_types_and_no_change(runbook_sim):
    k = runbook_sim.kubectl
    store = runbook_sim.clusters["a"].store
    ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "--type", "merge", "-p",
         '{"metadata":{"annotations":{"vllm-remedy.io/reason":"r"}}}'))
    assert ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "-p", '{"spec":{"replicas":2}}')).strip() == \
        "deployment.apps/llama-8b patched (no change)"
    failed = k(V, "-n", "llm", "patch", "deploy", "llama-8b", "--type", "json", "-p",
               json.dumps([{"op": "test", "path": "/spec/replicas", "value": 7}]))
    assert failed.returncode == 1 and "testing value /spec/replicas failed" in failed.stderr
    assert store.get("deployments.apps", "llm", "llama-8b")["metadata"]["annotations"]["vllm-remedy.io/reason"] == "r"


def test_apply_server_side_dry_run_and_diff(runbook_sim):
    k = runbook_sim.kubectl
    store = runbook_sim.clusters["a"].store
    before = store.get("deployments.apps", "llm", "llama-8b")
    assert ok(k(V, "apply", "--server-side", "--dry-run=server", "-f", manifest(runbook_sim, 4))).strip() == \
        "deployment.apps/llama-8b serverside-applied (server dry run)"
    assert store.get("deployments.apps", "llm", "llama-8b") == before
    diff = k(V, "diff", "-f", manifest(runbook_sim, 4))
    assert diff.returncode == 1, diff.stderr
    assert "-  replicas: 2" in diff.stdout.splitlines() and "+  replicas: 4" in diff.stdout.splitlines()


def test_logs_of_a_deployment_with_the_runbooks_grep(runbook_sim):
    out = ok(runbook_sim.kubectl(V, "-n", "llm", "logs", "deploy/llama-8b"))
    assert runbook_grep(out) == HEALTHY_STEP2, out


def test_attach_needs_websockets_which_1_20_lacks(runbook_sim):
    """Documented limitation: 1.20 streams exec/attach over SPDY, which the rehearsal cluster does not speak."""
    pod = runbook_sim.clusters["a"].store.list("pods", "llm")[0][0]["metadata"]["name"]
    got = runbook_sim.kubectl(V, "-n", "llm", "attach", pod, timeout=30)
    assert got.returncode == 1
    assert got.stderr.strip().endswith("exec/attach needs a WebSocket upgrade (kubectl >= 1.30); SPDY streams are "
                                       "not supported by the rehearsal cluster")
    ran = runbook_sim.kubectl(V, "-n", "llm", "exec", pod, "--", "nvidia-smi", timeout=30)
    assert ran.returncode == 1 and "SPDY streams are not supported by the rehearsal cluster" in ran.stderr


def test_port_forward_over_spdy_is_a_clear_error_not_a_hang(runbook_sim):
    """kubectl 1.20 speaks only SPDY for port-forward: it is told why at once, and exits."""
    pod = sorted(p["metadata"]["name"] for p in runbook_sim.clusters["a"].store.list("pods", "llm")[0])[0]
    got = runbook_sim.kubectl(V, "-n", "llm", "port-forward", pod, "18000:8000", timeout=30)
    assert got.returncode == 1
    assert "port-forward needs a WebSocket upgrade (kubectl >= 1.31" in got.stderr
