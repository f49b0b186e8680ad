"""deploys/restore.py when nothing was deployed and the pods die of OOM under load: shed load per policy.

The policy (llama-8b plus a gateway fallback) lowers --max-num-seqs to 32, --max-model-len to 8192 and
--max-num-batched-tokens to 2048, moves 50 % of the HTTPRoute's traffic to a hosted fallback and waits for
the shed pods; a second run changes nothing. Load that no flag sheds fails the run with the log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import (
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

rehearsal = pyinfra_run.rehearsal
ROUTE_PATH = "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes/llm"
#: Long prompts asking for prompt logprobs: one 16k-token prefill chunk's logits no longer fit (runbook step 5).
LOAD = "requests=4,prompt-tokens=12000,max-prompt-tokens=16000,prompt-logprobs=0.1"
#: 4 GiB the profile run never saw (a multimodal encoder, LoRA swaps): no flag sheds that; the L40S has 3.5 GiB.
EXTRA_GIB = "requests=16,extra-gib=4"
BIG_CHUNKS = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "--gpu-memory-utilization", "0.90",
              "--max-num-seqs", "64", "--max-num-batched-tokens", "16384"]
POLICY = """extends: {base}
fallback:
  route: {{name: llm, namespace: llm}}
  primary: {{name: llama-8b, port: 8000}}
  fallback: {{name: hosted-llm, port: 443}}
  shift_percent: 50
load_shedding:
  max_num_batched_tokens: 2048  # 4096 x 128k vocab x 8 B of prompt logits would still not fit in 3.5 GiB
"""


def route() -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "llm", "namespace": NS},
            "spec": {"parentRefs": [{"name": "gateway"}],
                     "rules": [{"backendRefs": [{"name": "llama-8b", "port": 8000}]}]}}


def oom_under_load(rehearsal: Rehearsal, tmp: Path, load: str = LOAD) -> str:
    """A revision with 16k prefill chunks, running for half an hour; then ``load`` arrives and crash-loops it."""
    vllm_runtime(rehearsal)
    client = rehearsal.client()
    client.request("POST", "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes", body=route())

    def big_chunks(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(BIG_CHUNKS)

    rehearsal.change(big_chunks, change_cause="bigger prefill chunks for throughput")
    wait_until(lambda: rehearsal.cluster.rolled_out(NS, NAME), 30, "the 16k-chunk revision to roll out")
    clock = rehearsal.cluster.clock
    created = max(parse_rfc3339(rs["metadata"]["creationTimestamp"])  # the running (newest) revision's
                  for rs in client.list_replicasets(NS, "app=llama-8b"))
    wait_until(lambda: clock.now() - created > 31 * 60, 10, "the running revision to be 31 minutes old")

    def loaded(dep: dict[str, Any]) -> None:
        dep["metadata"]["annotations"]["sim.vllm-remedy.io/load"] = load

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
    assert any(line.startswith("shed load on deployment llm/llama-8b: --max-num-seqs 32 --max-model-len 8192 "
                               "--max-num-batched-tokens 2048 (the prediction is for startup; the load that killed "
                               "it is not modelled): written") for line in lines), lines
    assert any(line.startswith('wait for the shed-load template to roll out: deployment "llama-8b" successfully '
                               "rolled out after ") for line in lines), lines
    assert any(line.startswith("shift 50% of HTTPRoute llm/llm's traffic from llama-8b to hosted-llm: written")
               for line in lines), lines
    deployment = client.get_deployment(NS, NAME)
    server = find_server(deployment["spec"]["template"]["spec"])
    assert server.flags["max-num-seqs"] == "32" and server.flags["max-model-len"] == "8192"
    assert server.flags["max-num-batched-tokens"] == "2048"
    assert server.flags["gpu-memory-utilization"] == "0.90"
    assert int(deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"]) == int(revision) + 1
    assert deployment["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "shed-load"
    shifted = client.request("GET", ROUTE_PATH)
    assert shifted["spec"]["rules"][0]["backendRefs"] == [{"name": "llama-8b", "port": 8000, "weight": 50},
                                                         {"name": "hosted-llm", "port": 443, "weight": 50}]
    assert shifted["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "shed-load"

    again = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    # toggles, record crashes, roll back, shed, budget handover, wait
    assert host_out(again.stderr).count("No changes") == 6, again.stderr
    assert client.request("GET", ROUTE_PATH)["metadata"]["resourceVersion"] == shifted["metadata"]["resourceVersion"]
    assert client.get_deployment(NS, NAME)["metadata"]["generation"] == deployment["metadata"]["generation"]


def test_load_no_flag_sheds_fails_the_run_with_the_classified_log(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Memory the profile never saw is not shed by any flag: restore sheds, waits, and says it did not hold."""
    inventory = oom_under_load(rehearsal, tmp_path, EXTRA_GIB)
    got = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert got.returncode != 0
    lines = host_out(got.stderr)
    failed = [line for line in lines if line.startswith("wait for the shed-load template to roll out: crash-loop")]
    assert len(failed) == 1 and failed[0].endswith("startup log: oom_under_load"), lines
    assert any("torch.OutOfMemoryError: CUDA out of memory" in line for line in lines), lines
