"""deploys/budget.py answers a flag-sized KV cache that starts but holds fewer requests than the policy requires by
removing the flag (back to the --gpu-memory-utilization budget), as the plan's first rung — predicted, shown, applied
— and the rehearsal cluster's pods then start with the larger cache (real pyinfra CLI, rehearsal cluster)."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, MODEL, args_of, kv_logged, rolled_out, startup_logs
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import L4_TOLERATION, host_out, vllm_runtime, wait_until, write_inventory
from vllm_remedy.vllm.startup_log import classify

exact_rehearsal = pyinfra_run.exact_rehearsal

# 1 GiB pinned on an L4: 8,192 tokens, 1.00x at 8,192 — it starts, but the policy needs 2 x 1.25 = 2.50x
ARGS = [
    MODEL,
    "--max-model-len",
    "8192",
    "--gpu-memory-utilization",
    "0.9",
    "--kv-cache-memory-bytes",
    "1G",
    "--max-num-seqs",
    "64",
]
POLICY = (
    "gpu: {products: [NVIDIA-L4], label: cloud.google.com/gke-accelerator}\nknown_good: []\n"
    "flags:\n  max-model-len: {min: 4096, max: 8192, preferred: 8192}\n"
    "  gpu-memory-utilization: {min: 0.80, max: 0.92}\npeak_concurrency: 2\n"
)


def pinned_on_l4(dep: dict[str, Any]) -> None:
    spec = dep["spec"]["template"]["spec"]
    spec["containers"][0]["image"] = "vllm/vllm-openai:v0.11.0"
    spec["containers"][0]["args"] = list(ARGS)
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]
    dep["spec"]["strategy"] = {"type": "Recreate"}


def _serving(rehearsal: Rehearsal) -> bool:
    logs = startup_logs(rehearsal)
    return bool(logs) and all(classify(r).value == "none" and r.server_was_up for r in logs)


def test_a_pin_short_of_the_target_is_removed_and_the_pods_serve_more(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    vllm_runtime(rehearsal)
    rehearsal.change(pinned_on_l4, change_cause="a 1 GiB pinned KV cache on the L4 pool")
    rolled_out(rehearsal)
    wait_until(lambda: _serving(rehearsal), what="the pinned pods to serve")
    before = max(kv_logged(rehearsal).values())
    policy = rehearsal.tmp / "policy.yaml"
    policy.write_text(f"extends: {pyinfra_run.ROOT / 'policies' / 'llama-8b.yaml'}\n{POLICY}")
    got = rehearsal.pyinfra(write_inventory(rehearsal.tmp, policy=str(policy)), BUDGET, "-y")
    assert got.returncode == 0, got.stderr
    out = host_out(got.stderr)
    assert any("unset --kv-cache-memory-bytes (kv-cache-pin, rung 1" in line and "written" in line for line in out), out
    assert any("falls short of the policy's concurrency" in line for line in out), out
    assert any("prediction on NVIDIA-L4: fits" in line for line in out), out
    args = args_of(rolled_out(rehearsal))
    assert "--kv-cache-memory-bytes" not in args and args[args.index("--max-model-len") + 1] == "8192", args
    wait_until(lambda: _serving(rehearsal), what="the unpinned pods to serve")
    after = min(kv_logged(rehearsal).values())
    assert after > 2.5 * 8192 > before, (before, after)
