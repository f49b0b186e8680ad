"""Qwen3-VL's encoder profile on vLLM 0.11-0.12: every dummy encoder output is padded to the whole encoder budget and
held through the language model's dummy forward (``encoder.qwen3_vl_encoder_cache_gib``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, resolve
from vllm_remedy.vllm.memory.encoder import qwen3_vl_encoder_cache_gib

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"
QWEN3_VL_MOE = yaml.safe_load((CASES / "rtx3090x4-v0.11.0-qwen3-vl-30b-a3b-tp4-64k.yaml").read_text())["model_config"]
MODEL = catalog.ModelSpec.from_hf_config(QWEN3_VL_MOE, "Qwen/Qwen3-VL-30B-A3B-Instruct", 31.1)
RTX3090 = catalog.gpu("NVIDIA-GeForce-RTX-3090")


def cache_gib(version: str, **flags: str) -> float:
    settings = EngineSettings.from_flags({"tensor-parallel-size": "4", "max-model-len": "65536", **flags}, version)
    return qwen3_vl_encoder_cache_gib(MODEL, resolve(MODEL, RTX3090, settings))


def test_the_deepstack_row_is_four_merger_widths():
    assert MODEL.mm_embed_dim == 2048 * 4  # main output + three deepstack levels


def test_one_video_padded_to_the_logged_budget_of_153600_tokens():
    # "Encoder cache will be initialized with a budget of 153600 tokens, and profiled with 1 video items"
    assert cache_gib("0.11.0") == pytest.approx(153600 * 8192 * 2 / GIB)  # 2.34 GiB


def test_without_video_the_largest_image_fills_the_budget():
    assert cache_gib("0.11.0", **{"limit-mm-per-prompt": '{"image": 1, "video": 0}'}) == pytest.approx(
        16384 * 8192 * 2 / GIB
    )
    assert cache_gib("0.11.0", **{"limit-mm-per-prompt": "image=0,video=0"}) == 0.0


def test_chunked_prefill_off_with_fewer_batch_tokens_than_an_image_still_profiles_one():
    # The T4 Qwen3-VL-Embedding start's flags: 8192 batch tokens, chunked prefill off, one image and no video per
    # prompt. mnbt // 16384 = 0 requests, floored at one item padded to a 16384-row budget. (Its log profiles 6
    # smaller items: the checkpoint's processor, which config.json does not state.)
    flags = {"limit-mm-per-prompt": '{"image": 1, "video": 0}', "enable-chunked-prefill": "false",
             "max-num-batched-tokens": "8192"}
    assert cache_gib("0.11.0", **flags) == pytest.approx(16384 * 8192 * 2 / GIB)


def test_a_malformed_limit_is_refused():
    with pytest.raises(UserError):
        cache_gib("0.11.0", **{"limit-mm-per-prompt": "image"})


@pytest.mark.parametrize("version", ["0.10.2", "0.13.0", "0.20.0"])
def test_only_0_11_and_0_12_pad_the_outputs(version: str):
    assert cache_gib(version) == 0.0
