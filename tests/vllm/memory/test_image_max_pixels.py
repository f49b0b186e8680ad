"""The checkpoint's image-processor cap (``image-max-pixels``) sizes Qwen3-VL's dummy profile image on 0.11-0.12."""

from __future__ import annotations

import pytest
import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.encoder import QWEN3_VL_IMAGE_TOKENS, qwen3_vl_image_tokens
from vllm_remedy.vllm.memory.settings import EngineSettings

CASE = "tests/data/calibration/t4-v0.11.0-qwen3-vl-embedding-2b-fp16-eager-8k.yaml"


def test_official_processor_cap_is_the_default() -> None:
    # longest_edge 16,777,216 px: a 4096 px square, 16,384 tokens of 32 x 32 px.
    assert qwen3_vl_image_tokens(None) == QWEN3_VL_IMAGE_TOKENS == qwen3_vl_image_tokens(16_777_216)


def test_smaller_cap_gives_the_smart_resize_square() -> None:
    # sqrt(1,310,720) = 1144.9 px -> 35 x 32 = 1120 px a side -> 35 x 35 tokens.
    assert qwen3_vl_image_tokens(1_310_720) == 1225


def test_input_is_not_a_flag_and_must_be_positive() -> None:
    assert EngineSettings.from_flags({}, "0.11.0", {"image-max-pixels": "1310720"}).image_max_pixels == 1_310_720
    with pytest.raises(UserError):
        EngineSettings.from_flags({"image-max-pixels": "1310720"}, "0.11.0")
    with pytest.raises(UserError):
        EngineSettings(image_max_pixels=-1)


def test_smaller_images_profile_more_items_and_less_kv() -> None:
    """6 items of 1,225 tokens in an 8,192-token budget, each padded to the budget, hold more than one 16,384-token
    item: the cap moves the estimate toward less KV, as the T4 log's "profiled with 6 image items" says."""
    with open(CASE) as f:
        case = yaml.safe_load(f)
    capped = estimate_case(case)
    official = estimate_case({k: v for k, v in case.items() if k != "image_max_pixels"})
    assert capped.activation_gib > official.activation_gib
    assert capped.kv_cache_tokens < official.kv_cache_tokens


def test_mm_processor_kwargs_flag_overrides_the_checkpoint_cap() -> None:
    """vLLM merges --mm-processor-kwargs into the processor; max_pixels overrides size.longest_edge."""
    inputs = {"image-max-pixels": "1310720"}
    flag = EngineSettings.from_flags({"mm-processor-kwargs": '{"max_pixels": 200704}'}, "0.11.0", inputs)
    assert flag.image_max_pixels == 200_704
    size = EngineSettings.from_flags({"mm-processor-kwargs": '{"size": {"longest_edge": 401408}}'}, "0.11.0")
    assert size.image_max_pixels == 401_408
    other = EngineSettings.from_flags({"mm-processor-kwargs": '{"fps": 1}'}, "0.11.0", inputs)
    assert other.image_max_pixels == 1_310_720
    with pytest.raises(UserError):
        EngineSettings.from_flags({"mm-processor-kwargs": "max_pixels=5"}, "0.11.0")


def test_cli_passes_the_cap_as_a_model_input() -> None:
    import argparse

    from vllm_remedy.commands._engine_args import model_inputs

    assert model_inputs(argparse.Namespace(image_max_pixels=1_310_720)) == {"image-max-pixels": "1310720"}
    assert model_inputs(argparse.Namespace(image_max_pixels=None)) == {}
