"""deploys/budget.py answers a V0 CUDA-graph capture OOM with a smaller --max-num-seqs, the lever vLLM's own capture
line names and the only one 0.5.5-0.6.4 have (V0 captures graphs up to max_num_seqs, worker/model_runner.py@0.6.3),
and the rehearsal cluster's pods then start with the smaller pool (real pyinfra CLI, rehearsal cluster). Hostile
review 12, #10: the plan cut the context instead, and called --compilation-config the only way."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, MODEL, args_of, deployment, rolled_out, startup_logs
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import L4_TOLERATION, crash_looping, host_out, vllm_runtime, wait_until, write_inventory
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.startup_log import classify

rehearsal = pyinfra_run.rehearsal
exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly

#: vLLM 0.6.3 on an L4 at 0.95 with the default 256 sequences: the KV cache is sized, then 35 graphs (0.96 GiB) do
#: not fit beside the profile's activation, which 0.6.3 does not free before the cache (peak 22.20 of 21.96 GiB).
ARGS = [MODEL, "--max-model-len", "8192", "--gpu-memory-utilization", "0.95"]
POLICY = ("gpu: {products: [NVIDIA-L4], label: cloud.google.com/gke-accelerator}\nknown_good: []\n"
          "flags:\n  max-model-len: {min: 4096, max: 8192, preferred: 8192}\n"
          "  gpu-memory-utilization: {min: 0.80, max: 0.95}\npeak_concurrency: 1\n")
SUMMARY = ("budget deployment llm/llama-8b: --gpu-memory-utilization 0.92 --max-num-seqs 128 "
           "(cudagraph-capture-size, rung 1 of 3)")


def v0_graphs_oom_on_l4(dep: dict[str, Any]) -> None:
    spec = dep["spec"]["template"]["spec"]
    spec["containers"][0]["image"] = "vllm/vllm-openai:v0.6.3"
    spec["containers"][0]["args"] = list(ARGS)
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]
    dep["spec"]["strategy"] = {"type": "Recreate"}  # both replicas move to the L4 pool and crash there


def _crashed(rehearsal: Rehearsal) -> str:
    """Roll out the 0.6.3 revision, wait for its capture OOM; the inventory naming the test's policy."""
    vllm_runtime(rehearsal)
    rehearsal.change(v0_graphs_oom_on_l4, change_cause="vLLM 0.6.3 on the L4 pool at 0.95")
    wait_until(lambda: crash_looping(rehearsal), what="the graphs to crash the start")
    crashed = [r for r in startup_logs(rehearsal, previous=True) if classify(r).value == "cudagraph_capture_oom"]
    assert crashed, "the sim's pods did not die capturing CUDA graphs"
    policy = rehearsal.tmp / "policy.yaml"
    policy.write_text(f"extends: {pyinfra_run.ROOT / 'policies' / 'llama-8b.yaml'}\n{POLICY}")
    return write_inventory(rehearsal.tmp, policy=str(policy))


def test_a_dry_run_plans_a_smaller_max_num_seqs_and_changes_nothing(rehearsal: Rehearsal) -> None:
    inventory = _crashed(rehearsal)
    before = deployment(rehearsal)
    got = rehearsal.pyinfra(inventory, BUDGET, "--dry")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith(SUMMARY) for line in lines), "\n".join(lines)
    assert not any("only through --compilation-config" in line or "cuda-graph-sizes" in line for line in lines)
    after = deployment(rehearsal)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]  # status moves; the spec does not
    assert args_of(after) == ARGS


def test_capture_oom_on_v0_gets_a_smaller_max_num_seqs_and_the_pods_start(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    got = rehearsal.pyinfra(_crashed(rehearsal), BUDGET, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith(SUMMARY) for line in lines), "\n".join(lines)
    args = args_of(rolled_out(rehearsal))
    assert args == [MODEL, "--max-model-len", "8192", "--gpu-memory-utilization", "0.92", "--max-num-seqs", "128"]
    # The rehearsal cluster's vLLM starts as predicted: 128 sequences capture a smaller pool than 256 did.
    started = startup_logs(rehearsal)
    assert len(started) == 2 and all(classify(r).value == "none" and r.server_was_up for r in started)
    model, l4 = catalog.model(MODEL), catalog.gpu("NVIDIA-L4")
    before = estimate(model, l4, EngineSettings.from_flags(dict(zip(ARGS[1::2], ARGS[2::2], strict=True)), "0.6.3"))
    after = estimate(model, l4, EngineSettings.from_flags(dict(zip(args[1::2], args[2::2], strict=True)), "0.6.3"))
    assert before.graph_capture_oom and after.fits and not after.graph_capture_oom
    assert after.cudagraph_gib < before.cudagraph_gib
    assert {r.gpu_blocks for r in started} == {after.gpu_blocks}  # 0.6.3 logs blocks, not tokens
    assert "--enforce-eager" not in args_of(deployment(rehearsal))
