"""Rehearsal pods log what vLLM logs when a flag sizes the KV cache: the "reserved ... as specified by
kv_cache_memory_bytes config" line instead of the budget's (v1/worker/gpu_worker.py ``determine_available_memory``),
"Overriding num_gpu_blocks=..." (v1/core/kv_cache_utils.py ``get_num_blocks``), no after-warmup "Extended KV cache"
lines on 0.34 (either flag turns the extensible cache off, config/vllm.py@0.34.0), and an oversized cache's OOM in
``initialize_kv_cache`` that the classifier names ``kv_cache_allocation_oom``, as the estimate predicts."""

from __future__ import annotations

from datetime import datetime

import pytest

from vllm_remedy.sim.vllm_pod import flag_sized, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
NODE = {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}


def launch(extra: list[str], image: str = "vllm/vllm-openai:v0.11.0") -> Launch | Refusal:
    c = {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": [LLAMA, "--max-model-len", "16384",
                                                                              *extra],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return plan(find_server({"containers": [c]}), c, NODE)


def _start(extra: list[str], image: str = "vllm/vllm-openai:v0.11.0") -> timeline.Plan:
    got = launch(extra, image)
    assert isinstance(got, Launch)
    return timeline.plan_start(flag_sized.size(EXACT.apply(got)), datetime(2026, 1, 1))


def _log(start: timeline.Plan) -> str:
    return "\n".join([*(line.text for line in start.lines), *(start.exit.log if start.exit else ())])


def test_the_bytes_are_logged_as_reserved_not_as_a_budget():
    text = _log(_start(["--kv-cache-memory-bytes", "4G"]))
    assert ("reserved 4.00 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory "
            "profiling") in text
    assert "Available KV cache memory" not in text


def test_the_override_is_logged_with_the_count_it_replaces():
    text = _log(_start(["--num-gpu-blocks-override", "4000"]))
    assert "with num_gpu_blocks_override=4000" in text and "Overriding num_gpu_blocks=" in text
    assert "Available KV cache memory: 7.81 GiB" not in text  # the profiled budget, not the override's 4,000 blocks


# 1,000 blocks: 0.34's blocks hold 64 tokens (DEFAULT_BLOCK_SIZE), so 4,000 of them (31 GiB) no longer fit an L40S
@pytest.mark.parametrize("flag", [["--kv-cache-memory-bytes", "4G"], ["--num-gpu-blocks-override", "1000"]])
def test_0_34_with_either_flag_has_no_extended_kv_cache_lines(flag):
    start = _start(flag, "vllm/vllm-openai:v0.34.0")
    assert start.exit is None
    assert "Extended KV cache" not in _log(start)


def test_an_oversized_cache_is_classified_as_the_estimate_predicts():
    got = launch(["--kv-cache-memory-bytes", "40G"])
    assert isinstance(got, Launch) and got.estimate.start == "kv_cache_allocation_oom"
    report = parse_startup_log(_log(_start(["--kv-cache-memory-bytes", "40G"])))
    assert classify(report) is Failure.KV_CACHE_ALLOCATION_OOM
    assert report.failure_detail["phase"] == "kv_cache_allocation"
