"""deploys/budget.py reads the crashed pod's own figure: when vLLM refused a max-model-len and printed the KV memory it
had, the fix never asks for a length whose KV cache is more than that at the same budget (real pyinfra CLI,
rehearsal cluster).

A process outside Kubernetes holds 8 GiB on every L40S (the sim's node annotation); vLLM 0.8.5's V1 budget is
absolute, so the cache shrinks by that much: 11.71 GiB (about 95,900 tokens), where the memory model, which cannot see
the process, predicts 19.71 GiB (161,440 tokens). With a policy that needs one request (peak 1 x 1.25) and allows
131,072 tokens, the unscaled prediction proposed about 117,000 tokens: vLLM would refuse it again. (0.8.4-0.9.0 print
"Based on the available memory," with no length, a vLLM bug the sim reproduces: the memory is the figure here.)
"""

from __future__ import annotations

import re

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, MODEL, args_of, deployment, live_pods, policy_file, rolled_out, with_args
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import NS, crash_looping, host_out, pods, vllm_runtime, wait_until, write_inventory
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.sim.vllm_pod.keys import GPU_USED_GIB

exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly

HELD = [MODEL, "--max-model-len", "131072", "--gpu-memory-utilization", "0.80", "--max-num-seqs", "64"]
POLICY = "flags:\n  max-model-len: {min: 4096, max: 131072, preferred: 131072}\npeak_concurrency: 1\n"
_AVAILABLE = re.compile(r"larger than the available KV cache memory \((\d+\.\d+) GiB\)")
_TOKEN_BYTES = 32 * 2 * 8 * 128 * 2  # Llama-3.1-8B, bf16, one GPU: 128 KiB a token


def _hold_every_l40s(rehearsal: Rehearsal, gib: str) -> None:
    client = rehearsal.client()
    for node in client.request("GET", "/api/v1/nodes")["items"]:
        labels = node["metadata"].get("labels") or {}
        if labels.get("nvidia.com/gpu.product") == "NVIDIA-L40S":
            notes = {**(node["metadata"].get("annotations") or {}), GPU_USED_GIB: gib}
            client.request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}",
                           body={"metadata": {"annotations": notes}}, content_type="application/merge-patch+json")


def _available_gib(rehearsal: Rehearsal) -> float:
    """The KV memory the crashed pod's vLLM said it had (the smallest, should two differ)."""
    client = rehearsal.client()
    found = []
    for pod in pods(rehearsal):
        for previous in (False, True):
            try:
                text = client.pod_log(NS, pod["metadata"]["name"], "vllm", previous=previous)
            except KubeError:  # a pod without a previous container has no previous log
                continue
            found += [float(m) for m in _AVAILABLE.findall(text)]
    assert found, "no crashed pod printed vLLM's available KV cache memory"
    return min(found)


def test_the_fix_never_asks_for_more_kv_than_the_crashed_pod_had(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    vllm_runtime(rehearsal)
    _hold_every_l40s(rehearsal, "8")
    rehearsal.change(with_args(HELD), change_cause="131072 tokens at 0.80 beside an 8 GiB process")
    wait_until(lambda: crash_looping(rehearsal, 1), what="the revision to crash-loop")  # maxUnavailable 0: one pod
    available = _available_gib(rehearsal)
    assert available == 11.71  # the sim's vLLM: 19.71 GiB less the 8 GiB held
    inventory = write_inventory(rehearsal.tmp, policy=policy_file(rehearsal.tmp, POLICY))
    got = rehearsal.pyinfra(inventory, BUDGET, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(f"the log shows {available:.2f} GiB of KV cache" in line and "scaled by 0.594" in line
               for line in lines), lines
    args = args_of(deployment(rehearsal))
    length = int(args[args.index("--max-model-len") + 1])
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.80"  # the logged budget, kept
    assert length * _TOKEN_BYTES <= available * 2**30, (length, available)  # vLLM's own check passes
    # and the sim's vLLM, the 8 GiB still held, starts it
    rolled_out(rehearsal)
    assert live_pods(rehearsal)
