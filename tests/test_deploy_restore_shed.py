"""deploys/restore.py when nothing was deployed and the pods die of OOM under load: shed load per policy.

The policy (llama-8b plus a gateway fallback) lowers --max-num-seqs to 32 and --max-model-len to 8192 and
moves 50 % of the HTTPRoute's traffic to a hosted fallback; a second run changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyinfra_fixtures
from pyinfra_fixtures import ROOT, Rehearsal
from test_deploy_restore_world import (
    HOST,
    NAME,
    NS,
    RESTORE,
    crash_looping,
    host_out,
    pods,
    vllm_runtime,
    wait_until,
    write_inventory,
)
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.vllm.cmdline import find_server

rehearsal = pyinfra_fixtures.rehearsal
ROUTE_PATH = "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes/llm"
#: 4 GiB the profile run never saw (a multimodal encoder, LoRA swaps): the L40S has 3.5 GiB of headroom.
LOAD = "requests=16,extra-gib=4"
POLICY = """extends: {base}
fallback:
  route: {{name: llm, namespace: llm}}
  primary: {{name: llama-8b, port: 8000}}
  fallback: {{name: hosted-llm, port: 443}}
  shift_percent: 50
"""


def route() -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "llm", "namespace": NS},
            "spec": {"parentRefs": [{"name": "gateway"}],
                     "rules": [{"backendRefs": [{"name": "llama-8b", "port": 8000}]}]}}


def oom_under_load(rehearsal: Rehearsal, tmp: Path) -> str:
    """Restart the running revision under the vLLM simulator, offer the load, wait for the crash loop."""
    vllm_runtime(rehearsal)
    client = rehearsal.client()
    client.request("POST", "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes", body=route())
    clock = rehearsal.cluster.clock
    created = max(parse_rfc3339(rs["metadata"]["creationTimestamp"])  # the running (newest) revision's
                  for rs in client.list_replicasets(NS, "app=llama-8b"))
    wait_until(lambda: clock.now() - created > 31 * 60, 10, "the running revision to be 31 minutes old")

    def loaded(dep: dict[str, Any]) -> None:
        dep["metadata"]["annotations"]["sim.vllm-remedy.io/load"] = LOAD

    rehearsal.change(loaded)  # metadata only: no new revision
    for pod in pods(rehearsal):
        client.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}")
    wait_until(lambda: crash_looping(rehearsal), 30, "OOM under load to crash-loop the pods")
    policy = tmp / "fallback.yaml"
    policy.write_text(POLICY.format(base=ROOT / "policies" / "llama-8b"))
    return write_inventory(tmp, HOST, policy=str(policy))


def test_oom_under_load_sheds_load_and_shifts_the_gateway_once(rehearsal: Rehearsal, tmp_path: Path) -> None:
    inventory = oom_under_load(rehearsal, tmp_path)
    client = rehearsal.client()
    revision = client.get_deployment(NS, NAME)["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
    got = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith("shed load on deployment llm/llama-8b: --max-num-seqs 32 --max-model-len 8192: "
                               "written") for line in lines), lines
    assert any(line.startswith("shift 50% of HTTPRoute llm/llm's traffic from llama-8b to hosted-llm: written")
               for line in lines), lines
    deployment = client.get_deployment(NS, NAME)
    server = find_server(deployment["spec"]["template"]["spec"])
    assert server.flags["max-num-seqs"] == "32" and server.flags["max-model-len"] == "8192"
    assert server.flags["gpu-memory-utilization"] == "0.90"
    assert int(deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"]) == int(revision) + 1
    assert deployment["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "shed-load"
    shifted = client.request("GET", ROUTE_PATH)
    assert shifted["spec"]["rules"][0]["backendRefs"] == [{"name": "llama-8b", "port": 8000, "weight": 50},
                                                         {"name": "hosted-llm", "port": 443, "weight": 50}]
    assert shifted["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "shed-load"

    again = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    assert host_out(again.stderr).count("No changes") == 3, again.stderr  # toggles, roll back, shed
    assert client.request("GET", ROUTE_PATH)["metadata"]["resourceVersion"] == shifted["metadata"]["resourceVersion"]
    assert client.get_deployment(NS, NAME)["metadata"]["generation"] == deployment["metadata"]["generation"]
