"""deploys/restore.py when nothing was deployed and the pods die of OOM under load: shed load per policy.

The policy (llama-8b plus a gateway fallback) lowers --max-num-seqs to 32, --max-model-len to 8192 and
--max-num-batched-tokens to 2048, moves 50 % of the HTTPRoute's traffic to a hosted fallback and waits for
the shed pods; ``--dry`` shows all of it, and a second run changes nothing. The fallback is temporary: once
the shed pods have been Ready for the policy's time, the deploy's last step gives the route back its rules;
until then confirm refuses and drift reports the route. Load that no flag sheds fails the run with the log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.drift_world import inventory as drift_inventory
from fixtures.dry_run import diffs, dry_then_apply
from fixtures.pyinfra_run import ROOT, Rehearsal, detected_changes
from fixtures.restore_world import (
    CONFIRM,
    HOST,
    NAME,
    NS,
    RESTORE,
    crash_looping,
    host_out,
    pods,
    stable,
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
load_shedding:
  max_num_batched_tokens: 2048  # 4096 x 128k vocab x 8 B of prompt logits would still not fit in 3.5 GiB
"""
FALLBACK = """fallback:
  route: {{name: llm, namespace: llm}}
  primary: {{name: llama-8b, port: 8000}}
  fallback: {{name: hosted-llm, port: 443}}
  shift_percent: 50
  shift_back_after: {after}
"""
ROUTES = {"llm/llm": ROUTE_PATH}


def route() -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "llm", "namespace": NS},
            "spec": {"parentRefs": [{"name": "gateway"}],
                     "rules": [{"backendRefs": [{"name": "llama-8b", "port": 8000}]}]}}


def oom_under_load(rehearsal: Rehearsal, tmp: Path, load: str = LOAD, shift_back_after: str | None = "1d") -> str:
    """A revision with 16k prefill chunks, running for half an hour; then ``load`` arrives and crash-loops it.
    The policy's fallback shifts back after ``shift_back_after`` (1d: not within a test; None: no fallback)."""
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
    policy.write_text(POLICY.format(base=ROOT / "policies" / "llama-8b")
                      + ("" if shift_back_after is None else FALLBACK.format(after=shift_back_after)))
    return write_inventory(tmp, HOST, policy=str(policy))


def test_oom_under_load_sheds_load_and_shifts_the_gateway_once(rehearsal: Rehearsal, tmp_path: Path) -> None:
    inventory = oom_under_load(rehearsal, tmp_path)
    client = rehearsal.client()
    revision = client.get_deployment(NS, NAME)["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
    # the rehearsal cluster's reported bug: --dry showed the route shift only, the run also rolled new flags
    dry, got = dry_then_apply(rehearsal, inventory, RESTORE, routes=ROUTES, expect_diffs=2)
    assert [d.name for d in diffs(dry.stderr)] == ["httproute llm/llm spec", "deployment llm/llama-8b template"]
    assert "+    - '32'" in diffs(dry.stderr)[1].lines, dry.stderr
    assert detected_changes(dry.stderr)["Shed load when OOM under load and nothing was deployed"][0] != "-"
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith("shed load on deployment llm/llama-8b: --max-num-seqs 32 --max-model-len 8192 "
                               "--max-num-batched-tokens 2048 (the prediction is for startup; the load that killed "
                               "it is not modelled): written") for line in lines), lines
    assert any(line.startswith('wait for the shed-load template to roll out and stay up for 2m: deployment '
                               '"llama-8b" successfully rolled out after ') for line in lines), lines
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
    # toggles, record crashes, roll back, shed, budget handover, wait, shift back
    assert host_out(again.stderr).count("No changes") == 7, again.stderr
    assert client.request("GET", ROUTE_PATH)["metadata"]["resourceVersion"] == shifted["metadata"]["resourceVersion"]
    assert client.get_deployment(NS, NAME)["metadata"]["generation"] == deployment["metadata"]["generation"]


def test_without_a_fallback_the_dry_run_shows_the_shed_flags_it_then_writes(rehearsal: Rehearsal,
                                                                           tmp_path: Path) -> None:
    inventory = oom_under_load(rehearsal, tmp_path, shift_back_after=None)
    dry, got = dry_then_apply(rehearsal, inventory, RESTORE, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    assert "noop: no traffic to shift back: policy" in "\n".join(host_out(dry.stderr))
    assert client_route(rehearsal)["spec"] == route()["spec"]  # no fallback in the policy: the route is not touched


def test_a_route_edited_at_the_prompt_is_refused_and_nothing_is_written(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The prompt showed the route's and the template's diffs; a colleague edits the route before enter: the route
    write is refused (never overwritten) and the host fails before the template is touched."""
    inventory = oom_under_load(rehearsal, tmp_path)
    before = rehearsal.client().get_deployment(NS, NAME)

    def colleague() -> None:
        edited = client_route(rehearsal)
        edited["spec"]["rules"][0]["backendRefs"][0]["weight"] = 7
        rehearsal.client().request("PUT", ROUTE_PATH, body=edited)

    got = prompted_run(rehearsal, RESTORE, colleague, inventory=inventory)
    assert got.returncode == 1, got.stderr
    said = [line for line in host_out(got.stderr) if "changed since it was read" in line]
    assert len(said) == 1 and said[0].startswith("shift 50% of HTTPRoute llm/llm's traffic"), host_out(got.stderr)
    assert client_route(rehearsal)["spec"]["rules"][0]["backendRefs"] == [{"name": "llama-8b", "port": 8000,
                                                                           "weight": 7}]
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]  # the flags were not written either


def client_route(rehearsal: Rehearsal) -> dict[str, Any]:
    return rehearsal.client().request("GET", ROUTE_PATH)


def test_the_fallback_is_temporary(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """Shed and shift; confirm refuses and drift reports while the fallback serves; once the shed pods have been
    Ready for shift_back_after the next restore gives the route back exactly its rules; confirm's route check and
    drift pass; a further run changes nothing."""
    inventory = oom_under_load(rehearsal, tmp_path, shift_back_after="2h")  # 12 s at 600x: not within the run
    shed = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert shed.returncode == 0, shed.stderr
    lines = host_out(shed.stderr)
    kept = [line for line in lines if line.startswith("noop: HTTPRoute llm/llm keeps 50% of its traffic on the "
                                                      "fallback hosted-llm: pod(s) of revision ")]
    assert len(kept) == 1 and "of the required 2h; re-run after " in kept[0], lines
    rehearsal.cluster.clock.set_speed(60.0)  # confirm and drift below see the route still shifted (2h = 120 s here)
    shifted = client_route(rehearsal)
    prior = json.loads(shifted["metadata"]["annotations"]["vllm-remedy.io/fallback-prior-rules"])
    assert prior == route()["spec"]["rules"]

    refused = rehearsal.pyinfra(inventory, CONFIRM, "-y")
    assert refused.returncode != 0
    said = [line for line in host_out(refused.stderr) if line.startswith("FAIL: HTTPRoute llm/llm ")]
    assert said == ["FAIL: HTTPRoute llm/llm sends 50% of its traffic to the fallback hosted-llm: the fallback is "
                    "temporary — deploys/restore.py shifts it back once the primary has been Ready for 2h; confirm "
                    "after that"], host_out(refused.stderr)
    in_cluster = drift_inventory(tmp_path, rehearsal.kubeconfig, str(tmp_path / "fallback.yaml"), name="drift")
    drift = cli("drift", "-i", in_cluster, "-o", "json")
    assert drift.returncode == 1, drift.stderr  # drift's exit code, as README states
    host = json.loads(drift.stdout)["hosts"][0]
    assert "fallback-route" in host["drifted"], host
    check = next(c for c in host["checks"] if c["check"] == "fallback-route")
    assert check["detail"].startswith("HTTPRoute llm/llm sends 50% of its traffic to the fallback hosted-llm"), check
    waiting = "deploys/restore.py shifts the route back once the primary is stable; not yet: HTTPRoute llm/llm keeps"
    assert waiting in (host["fix"]["note"] or ""), host

    rehearsal.cluster.clock.set_speed(600.0)
    stable(rehearsal, 2 * 3600 + 60)
    _dry, back = dry_then_apply(rehearsal, inventory, RESTORE, routes=ROUTES, expect_diffs=1)
    assert back.returncode == 0, back.stderr
    assert any(line.startswith("shift HTTPRoute llm/llm's traffic back from hosted-llm to llama-8b (2 pod(s) of "
                               "revision ") and "Ready for at least 2h): the rules as they were before the shift: "
                                                "written (resourceVersion " in line
               for line in host_out(back.stderr)), host_out(back.stderr)
    restored = client_route(rehearsal)
    assert restored["spec"] == route()["spec"]
    notes = restored["metadata"]["annotations"]
    assert "vllm-remedy.io/fallback-prior-rules" not in notes and notes["vllm-remedy.io/last-action"] == "shift-back"

    confirmed = rehearsal.pyinfra(inventory, CONFIRM, "--dry")
    assert "ok: HTTPRoute llm/llm sends no traffic to the fallback hosted-llm" in host_out(confirmed.stderr)
    drift = cli("drift", "-i", in_cluster, "-o", "json")
    check = next(c for c in json.loads(drift.stdout)["hosts"][0]["checks"] if c["check"] == "fallback-route")
    assert check["status"] == "pass", check
    again = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    assert host_out(again.stderr).count("No changes") == 7, again.stderr
    assert client_route(rehearsal)["metadata"]["resourceVersion"] == restored["metadata"]["resourceVersion"]


def test_load_no_flag_sheds_fails_the_run_with_the_classified_log(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Memory the profile never saw is not shed by any flag: restore sheds, waits, and says it did not hold."""
    inventory = oom_under_load(rehearsal, tmp_path, EXTRA_GIB)
    got = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert got.returncode != 0
    lines = host_out(got.stderr)
    failed = [line for line in lines
              if line.startswith("wait for the shed-load template to roll out and stay up for 2m: crash-loop")]
    assert len(failed) == 1 and "startup log: oom_under_load" in failed[0], lines
    assert any("torch.OutOfMemoryError: CUDA out of memory" in line for line in lines), lines


def test_a_split_nobody_recorded_as_ours_is_never_shifted_back(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """A person's 1/99 canary on the route (no record of a shift of ours), the primary stable: restore reports
    it and leaves it as it is; confirm and drift still say the fallback serves (review finding #6)."""
    client = rehearsal.client()
    split = route()
    split["spec"]["rules"][0]["backendRefs"] = [{"name": "llama-8b", "port": 8000, "weight": 1},
                                                {"name": "hosted-llm", "port": 443, "weight": 99}]
    client.request("POST", "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes", body=split)
    policy = tmp_path / "fallback.yaml"
    policy.write_text(POLICY.format(base=ROOT / "policies" / "llama-8b") + FALLBACK.format(after="1m"))
    inventory = write_inventory(tmp_path, HOST, policy=str(policy))
    stable(rehearsal, 120)
    before = client.request("GET", ROUTE_PATH)
    got = rehearsal.pyinfra(inventory, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    assert any(line.startswith("noop: HTTPRoute llm/llm sends 99% of its traffic to the fallback hosted-llm, but no "
                               "shift of ours is recorded on it: left as it is") for line in host_out(got.stderr)), \
        got.stderr
    assert client.request("GET", ROUTE_PATH)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
