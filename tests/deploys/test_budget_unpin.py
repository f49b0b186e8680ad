"""deploys/budget.py answers a flag-sized KV cache larger than the card leaves (kv_cache_allocation_oom) by removing
the flag, back to the utilization budget, and the rehearsal cluster's pods then start (real pyinfra CLI, rehearsal
cluster)."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, MODEL, args_of, rolled_out, startup_logs
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import L4_TOLERATION, crash_looping, host_out, vllm_runtime, wait_until, write_inventory
from vllm_remedy.vllm.startup_log import classify

exact_rehearsal = pyinfra_run.exact_rehearsal

ARGS = [MODEL, "--max-model-len", "8192", "--kv-cache-memory-bytes", "8G", "--max-num-seqs", "64"]
POLICY = ("gpu: {products: [NVIDIA-L4], label: cloud.google.com/gke-accelerator}\nknown_good: []\n"
          "flags:\n  max-model-len: {min: 4096, max: 8192, preferred: 8192}\n"
          "  gpu-memory-utilization: {min: 0.80, max: 0.92}\npeak_concurrency: 1\n")


def pinned_on_l4(dep: dict[str, Any]) -> None:
    spec = dep["spec"]["template"]["spec"]
    spec["containers"][0]["image"] = "vllm/vllm-openai:v0.11.0"
    spec["containers"][0]["args"] = list(ARGS)
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]
    dep["spec"]["strategy"] = {"type": "Recreate"}


def test_an_oversized_pin_is_removed_and_the_pods_start(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    vllm_runtime(rehearsal)
    rehearsal.change(pinned_on_l4, change_cause="an 8 GiB pinned KV cache on the L4 pool")
    wait_until(lambda: crash_looping(rehearsal), what="the pinned cache to crash the start")
    crashed = [r for r in startup_logs(rehearsal, previous=True) if classify(r).value == "kv_cache_allocation_oom"]
    assert crashed, "the sim's pods did not die allocating the KV cache"
    policy = rehearsal.tmp / "policy.yaml"
    policy.write_text(f"extends: {pyinfra_run.ROOT / 'policies' / 'llama-8b.yaml'}\n{POLICY}")
    got = rehearsal.pyinfra(write_inventory(rehearsal.tmp, policy=str(policy)), BUDGET, "-y")
    assert got.returncode == 0, got.stderr
    assert any("unset --kv-cache-memory-bytes" in line for line in host_out(got.stderr)), host_out(got.stderr)
    args = args_of(rolled_out(rehearsal))
    assert "--kv-cache-memory-bytes" not in args, args
    started = startup_logs(rehearsal)
    assert started and all(classify(r).value == "none" and r.server_was_up for r in started)
