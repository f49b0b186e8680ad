"""A sliding-window group's per-request need counts the in-flight batches from 0.26.0: gpt-oss-120b on an H100, figures
by hand from vLLM's source (``in_flight`` cites ``SlidingWindowSpec.max_admission_blocks_per_request`` and
``VllmConfig.max_concurrent_batches`` / ``max_in_flight_tokens``, and the async-scheduling default, by release)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vllm_remedy.vllm import catalog, resolved
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory.in_flight import async_scheduling, batches
from vllm_remedy.vllm.memory.kv_layout import KvLayout
from vllm_remedy.vllm.memory.terms import kv_layout
from vllm_remedy.vllm.outcomes import Outcome

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")
A100_40 = catalog.gpu("NVIDIA-A100-SXM4-40GB")
FLAGS = {"dtype": "bfloat16", "max-num-batched-tokens": "16384"}
# gpt-oss-120b: 18 sliding (128 tokens) and 18 full layers, 8 KV heads x 64, bf16, 16-token blocks.
BLOCK = 16 * 2 * 8 * 64 * 2 * 18  # one block id across a group of 18 layers: 589,824 B
FULL_BLOCKS = 131072 // 16  # 8,192
ONE_BATCH = -(-(128 - 1 + 16384) // 16) + 1  # 1,032 + 1 for misalignment = 1,033
TWO_BATCHES = -(-(128 - 1 + 2 * 16384) // 16) + 1  # 2,056 + 1 = 2,057


def gpt_oss() -> ModelSpec:
    return ModelSpec.from_hf_config(json.loads((DATA / "configs" / "gpt-oss-120b.json").read_text()), "gpt-oss-120b")


def settings(version: str, **flags: str) -> EngineSettings:
    return EngineSettings.from_flags({**FLAGS, **flags}, version)


@pytest.mark.parametrize(
    ("version", "async_on", "pp", "runner_v2", "count"),
    [((0, 25, 0), True, 1, False, 1), ((0, 25, 0), True, 4, True, 1),  # one batch through 0.25
     ((0, 26, 0), True, 1, False, 2), ((0, 26, 0), False, 1, False, 1), ((0, 26, 0), True, 1, True, 2),
     ((0, 26, 0), True, 4, False, 4), ((0, 26, 0), True, 4, True, 5), ((0, 33, 0), False, 4, True, 4),
     ((0, 34, 0), True, 1, False, 2), ((0, 34, 0), True, 4, False, 5), ((0, 34, 0), False, 1, False, 1)],
)
def test_the_batches_follow_max_concurrent_batches(version, async_on, pp, runner_v2, count):
    assert batches(version, async_on, pp, runner_v2) == count


@pytest.mark.parametrize(("version", "flag", "on"), [((0, 13, 0), None, False), ((0, 14, 0), None, True),
                                                     ((0, 26, 0), None, True), ((0, 26, 0), False, False),
                                                     ((0, 13, 0), True, True)])
def test_async_scheduling_is_on_by_default_from_0_14(version, flag, on):
    assert async_scheduling(version, flag) is on


@pytest.mark.parametrize(("version", "flags", "count"), [
    ("0.25.0", {}, 1), ("0.26.0", {}, 2), ("0.34.0", {}, 2),
    ("0.26.0", {"no-async-scheduling": ""}, 1), ("0.26.0", {"async-scheduling": "false"}, 1),
    ("0.34.0", {"no-async-scheduling": "true"}, 1), ("0.16.0", {"async-scheduling": ""}, 1)])
def test_the_layout_reads_the_release_and_the_flag(version, flags, count):
    model = gpt_oss()
    assert kv_layout(model, resolve(model, H100, settings(version, **flags))).batches == count


def test_the_sliding_need_doubles_the_chunk_with_async_scheduling_by_hand():
    model = gpt_oss()
    lay = kv_layout(model, resolve(model, H100, settings("0.26.0")))
    assert lay.blocks_for(131072, 16384) == FULL_BLOCKS + TWO_BATCHES == 10_249
    assert lay.needed_bytes(131072, 16384, "groups") == 10_249 * BLOCK
    off = kv_layout(model, resolve(model, H100, settings("0.26.0", **{"no-async-scheduling": ""})))
    assert off.blocks_for(131072, 16384) == FULL_BLOCKS + ONE_BATCH == 9_225
    # the window caps at the length: an 8,192-token request needs 8,192 tokens in either group, plus one block
    assert lay.blocks_for(8192, 16384) == 512 + 513 == off.blocks_for(8192, 16384)


def test_a_budget_between_the_needs_starts_only_without_async_scheduling():
    """Utilization 0.89 on 0.26.0: 9,495 blocks, between 9,225 (one batch) and 10,249 (two) per 131,072-token
    request; "Maximum concurrency" 9,495 / 10,249 = 0.93x with async scheduling, 9,495 / 9,225 = 1.03x without."""
    model = gpt_oss()
    on = estimate(model, H100, settings("0.26.0", **{"gpu-memory-utilization": "0.89"}))
    off = estimate(model, H100, settings("0.26.0", **{"gpu-memory-utilization": "0.89", "no-async-scheduling": ""}))
    assert on.gpu_blocks == off.gpu_blocks == 9495
    assert on.outcome is Outcome.MAX_LEN_EXCEEDS_KV and off.outcome is Outcome.FITS
    assert on.needed_kv_gib is not None and on.needed_kv_gib * 2**30 == pytest.approx(10_249 * BLOCK)
    assert on.max_concurrency == pytest.approx(9495 / 10_249) and off.max_concurrency == pytest.approx(9495 / 9225)
    # 0.25.0 counts one batch whatever the scheduling: the same budget starts there
    assert estimate(model, H100, settings("0.25.0", **{"gpu-memory-utilization": "0.89"})).outcome is Outcome.FITS


def gpt_oss_20b_layout(version: str) -> KvLayout:
    case = yaml.safe_load((DATA / "calibration" / "h100-v0.23.0-gpt-oss-20b-bf16-8k-u0.8-eager.yaml").read_text())
    model = ModelSpec.from_hf_config(case["model_config"], case["model"], case["model_params_b"])
    return kv_layout(model, resolve(model, H100, EngineSettings.from_flags(case["flags"], version)))


def test_the_logged_token_count_is_concurrency_times_length_from_0_21():
    """The 0.23.0 gpt-oss-20b log: "GPU KV cache size: 448,969 tokens", "Maximum concurrency for 8,192 tokens per
    request: 54.81x". 56,176 blocks / (512 full + 513 sliding) = 54.806; x 8,192 = 448,969.55 -> 448,969, a count
    no block multiple gives; through 0.20 the same blocks log 56,176 // 2 x 16 = 449,408."""
    lay = gpt_oss_20b_layout("0.23.0")
    assert lay.blocks_for(8192, 8192) == 1025
    assert lay.logged_tokens(56_176, 8192, 8192, (0, 23, 0)) == 448_969
    assert lay.logged_tokens(56_176, 8192, 8192, (0, 20, 0)) == 449_408 == lay.tokens(56_176)


def test_the_logged_count_follows_the_in_flight_need_on_0_26():
    """gpt-oss-120b at utilization 0.89 without async scheduling: 9,495 blocks / 9,225 x 131,072 tokens."""
    model = gpt_oss()
    est = estimate(model, H100, settings("0.26.0", **{"gpu-memory-utilization": "0.89", "no-async-scheduling": ""}))
    assert est.kv_cache_tokens == int(9495 / 9225 * 131072) == 134_908


GEMMA2_PAGE = 16 * 2 * 8 * 256 * 2  # Gemma 2 9B: 8 KV heads x 256, bf16, one layer, one 16-token block: 131,072 B


@pytest.mark.parametrize(("version", "windows", "group", "checked"), [
    ("0.8.0", (None,), 42, ()),  # no SlidingWindowSpec yet: every layer full, checked as full
    ("0.8.3", (None,), 42, ((None, 21), (4096, 21))),  # allocated as full, checked as sliding
    ("0.9.0", (None,), 42, ((None, 21), (4096, 21))),
    ("0.9.1", (None, 4096), 21, ()),  # the hybrid manager: a full and a sliding group of 21 layers
    ("0.10.0", (None, 4096), 21, ())])
def test_the_hybrid_manager_starts_at_0_9_1(version, windows, group, checked):
    model = resolved.model("google/gemma-2-9b-it", None)
    s = EngineSettings.from_flags({"max-num-batched-tokens": "512"}, version)
    lay = kv_layout(model, resolve(model, A100_40, s))
    assert (lay.windows, lay.group_layers, lay.check_windows) == (windows, group, checked)


def test_before_the_hybrid_manager_the_check_counts_the_window_the_cache_does_not_hold():
    """0.9.0, Gemma 2 9B, --max-num-batched-tokens 512, utilization 0.57 on an A100 40GB: 458 blocks of all 42 layers
    (7,328 tokens, under the 8,192-token length), but ``check_enough_kv_cache_memory`` sums 21 full layers x 512 blocks
    and 21 sliding ones x (ceil((4,095 + 512) / 16) + 1 = 289) = 16,821 pages against 458 x 42 = 19,236: it starts."""
    model = resolved.model("google/gemma-2-9b-it", None)
    s = EngineSettings.from_flags({"max-num-batched-tokens": "512", "gpu-memory-utilization": "0.57"}, "0.9.0")
    lay = kv_layout(model, resolve(model, A100_40, s))
    assert lay.needed_bytes(8192, 512, "layers") == (21 * 512 + 21 * 289) * GEMMA2_PAGE
    est = estimate(model, A100_40, s)
    assert (est.outcome, est.gpu_blocks, est.kv_cache_tokens) == (Outcome.FITS, 458, 7328)
