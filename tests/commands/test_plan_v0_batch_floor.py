"""`vllm-remedy plan` on V0 without chunked prefill: the --max-num-batched-tokens floor follows the max-model-len
being tried (vLLM 0.6.3 config.py ``SchedulerConfig._verify_args`` only asks batched tokens ≥ max-model-len), so a
profile_oom ladder that shortens the context may shrink the batch with it instead of keeping the old length's."""

from __future__ import annotations

import json

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def test_a_shorter_context_takes_a_smaller_batch_with_it(cli):
    """32,768 tokens at 0.85 on an L4 overflow the profile; 32,768 batched tokens left only 7,424 of context,
    while 16,384/16,384 with a slightly larger budget keeps 16,384."""
    out = cli("plan", "--model", LLAMA, "--vllm-version", "0.6.5", "--gpu", "NVIDIA-L4", "--max-model-len", "32768",
              "--max-num-batched-tokens", "65536", "--gpu-memory-utilization", "0.85", "--target-concurrency", "1",
              "-o", "json")
    assert out.returncode in (0, 1), out.stderr
    first = json.loads(out.stdout)["steps"][0]
    assert first["lever"] == "max-num-batched-tokens", first
    assert int(first["set"]["max-model-len"]) == 16384, first
    assert int(first["set"]["max-num-batched-tokens"]) == 16384, first
    assert first["prediction"]["start"] == "fits", first
