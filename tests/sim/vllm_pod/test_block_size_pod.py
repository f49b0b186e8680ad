"""The rehearsal pod logs its KV cache in whole blocks of the size the release really runs with: 64 tokens on 0.34
(``CacheConfig.DEFAULT_BLOCK_SIZE``, ``memory.attn_block``), shared out among a hybrid model's groups, also in a
perturbed world; and from 0.29 one max-length request must leave the null block free (``core._longest``)."""

from __future__ import annotations

import re
from datetime import datetime

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.sim.vllm_pod.reality import EXACT, Reality, perturb
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.startup_log import parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GEMMA2 = "google/gemma-2-9b-it"  # 21 full + 21 sliding layers: two groups share each block id


def launch(version: str, args: list[str], gpu: str = "NVIDIA-L40S") -> Launch:
    c = {"name": "vllm", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve"], "args": args,
         "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    got = plan(find_server({"containers": [c]}), c, make_node({"name": "n", "gpu": {"product": gpu}}, "t"))
    assert isinstance(got, Launch), got
    return got


def log(run: Launch) -> str:
    return "\n".join(line.text for line in timeline.plan_start(run, datetime(2026, 12, 6)).lines)


def test_0_34_logs_64_token_blocks():
    start = EXACT.apply(launch("0.34.0", [LLAMA, "--max-model-len", "8192"]))
    text = log(start)
    blocks = int(re.search(r"(\d+) KV cache blocks \(", text).group(1))  # the extensible cache's advisory
    assert start.resolved.block_size == 64
    assert parse_startup_log(text).kv_cache_tokens == blocks * 64 == start.estimate.kv_cache_tokens


def test_0_33_still_logs_16_token_blocks():
    start = launch("0.33.0", [LLAMA, "--max-model-len", "8192"])
    assert start.resolved.block_size == 16 and start.estimate.kv_cache_tokens == start.estimate.gpu_blocks * 16


def test_a_perturbed_hybrid_logs_whole_blocks_per_group():
    for version, size in (("0.33.0", 16), ("0.34.0", 64)):
        for seed in range(4):
            real = Reality(seed=seed).apply(launch(version, [GEMMA2, "--max-model-len", "8192"],
                                                   "NVIDIA-H100-80GB-HBM3")).estimate
            assert real.kv_cache_tokens == real.gpu_blocks // 2 * size
            assert parse_startup_log(log(Reality(seed=seed).apply(launch(
                version, [GEMMA2, "--max-model-len", "8192"], "NVIDIA-H100-80GB-HBM3")))).kv_cache_tokens \
                == real.kv_cache_tokens


def test_a_perturbed_world_keeps_the_null_block_out_of_one_request():
    args = [LLAMA, "--gpu-memory-utilization", "0.5", "--max-num-seqs", "8"]
    tokens = perturb(launch("0.33.0", [*args, "--max-model-len", "8192"]), 0.05).kv_cache_tokens
    for length, outcome in ((tokens - 16, Outcome.FITS), (tokens - 15, Outcome.MAX_LEN_EXCEEDS_KV)):
        real = perturb(launch("0.33.0", [*args, "--max-model-len", str(length)]), 0.05)
        assert (real.kv_cache_tokens, real.outcome) == (tokens, outcome)
    assert real.suggested_max_model_len == tokens - 16
