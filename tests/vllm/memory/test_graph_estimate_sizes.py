"""Model Runner V2's in-budget CUDA-graph estimate (0.29-0.33) follows the start's default capture sizes: the largest is
min(2 x max_num_seqs, 512), then capped by max-num-batched-tokens (config/vllm.py@0.29.0), and the estimate captures
exactly those graphs (v1/worker/gpu/cudagraph_utils.py@0.29.0). How much of it shrinks is ``capture.FIXED_SHARE``'s
assumption, not source."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, capture, resolve
from vllm_remedy.vllm.memory.terms import MRV2_GRAPH_ESTIMATE_GIB_PER_LAYER, cudagraph_gib

QWEN3_8B = catalog.model("Qwen/Qwen3-8B")
RTX4090 = catalog.gpu("NVIDIA-GeForce-RTX-4090")
FITTED = MRV2_GRAPH_ESTIMATE_GIB_PER_LAYER * QWEN3_8B.num_layers


def graphs(version: str, **flags: str) -> float:
    settings = EngineSettings.from_flags({"max-model-len": "4096", **flags}, version)
    return cudagraph_gib(QWEN3_8B, resolve(QWEN3_8B, RTX4090, settings))


def test_the_serve_defaults_keep_the_fitted_estimate():
    assert graphs("0.29.0") == pytest.approx(FITTED)  # 256 sequences: the largest size is 512, as fitted


def test_few_sequences_shrink_it_by_the_smaller_largest_size():
    share = capture.FIXED_SHARE + (1 - capture.FIXED_SHARE) * 16 / 512  # 8 sequences: sizes up to 16
    assert graphs("0.29.0", **{"max-num-seqs": "8"}) == pytest.approx(FITTED * share)
    assert graphs("0.33.0", **{"max-num-seqs": "8"}) == pytest.approx(FITTED * share)


def test_a_small_token_budget_caps_the_sizes_too():
    share = capture.FIXED_SHARE + (1 - capture.FIXED_SHARE) * 256 / 512
    assert graphs("0.29.0", **{"max-num-batched-tokens": "256"}) == pytest.approx(FITTED * share)


def test_a_capture_flag_is_left_to_pool_scale():
    settings = EngineSettings.from_flags(
        {"max-model-len": "4096", "max-num-seqs": "8", "max-cudagraph-capture-size": "16"}, "0.29.0")
    assert capture.default_sizes_scale(resolve(QWEN3_8B, RTX4090, settings)) == 1.0


def test_other_runners_and_releases_are_untouched():
    pool = graphs("0.28.0", **{"max-num-seqs": "8"})  # MRv2's pool outside the budget (the capture-OOM check only)
    assert pool == pytest.approx(graphs("0.28.0"))
    assert graphs("0.34.0", **{"max-num-seqs": "8"}) == pytest.approx(graphs("0.34.0"))
