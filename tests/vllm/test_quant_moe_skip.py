"""Routed experts under fp8 ``ignored_layers`` / ``modules_to_not_convert`` and compressed-tensors ``ignore``, release
by release (``quant_moe_skip``): 16-bit where vLLM's MoE path reads the list as the checkpoint wrote it, "cannot
predict" where it does not.

The shapes are Qwen3-30B-A3B's published config.json (tests/data/configs, SOURCES.md); the lists that reach its
experts are added here (no published fp8 or compressed-tensors checkpoint excluding experts was found to quote)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.quant_exclusions import from_text

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
QWEN3_MOE = json.loads((CONFIGS / "Qwen3-30B-A3B.json").read_text())


def _read(section: dict[str, Any], method: str) -> Any:
    t = QWEN3_MOE
    return from_text(t, "Qwen3MoeForCausalLM", t["num_hidden_layers"], t["hidden_size"], t["num_attention_heads"],
                     t["num_key_value_heads"], t["head_dim"], t["intermediate_size"], t["num_experts"], section, method)


def _weights(section: dict[str, Any], version: str) -> float:
    spec = ModelSpec.from_hf_config({**QWEN3_MOE, "quantization_config": section}, "m")
    settings = EngineSettings.from_flags({"max-model-len": "4096"}, version)
    return estimate(spec, catalog.gpu("NVIDIA-H100-80GB-HBM3"), settings).weights_gib


LAYER0_EXPERTS = [f"model.layers.0.mlp.experts.{e}.{s}" for e in range(128) for s in ("gate_proj", "up_proj",
                                                                                       "down_proj")]
ONE_LAYER = 3 * 128 * 2048 * 768  # Qwen3-30B-A3B's experts of one layer
W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized",
         "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                       "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                   "strategy": "group", "group_size": 128}}}}


def test_fp8_experts_listed_are_16_bit_from_0_11_and_not_predicted_before():
    """Qwen3-30B-A3B with its first layer's experts listed by name in ``ignored_layers`` (added): fp8.py@0.11.0 on
    returns UnquantizedFusedMoEMethod for them; through 0.10.x every FusedMoE gets Fp8MoEMethod."""
    found = _read({"quant_method": "fp8", "ignored_layers": ["lm_head", *LAYER0_EXPERTS]}, "fp8")
    assert (found.at((0, 11, 0)).unquantized, found.at((0, 30, 0)).unquantized) == (ONE_LAYER, ONE_LAYER)
    assert "vLLM quantizes model.layers.0.mlp.experts" in found.at((0, 10, 2)).problem


def test_fp8_experts_listed_in_part_cannot_be_predicted():
    """is_layer_skipped's experts branch skips the whole layer as soon as one listed name holds its prefix; the
    checkpoint keeps the other experts in FP8."""
    found = _read({"quant_method": "fp8", "ignored_layers": ["lm_head", *LAYER0_EXPERTS[:3]]}, "fp8")
    assert "names some of model.layers.0.mlp.experts's modules" in found.at((0, 30, 0)).problem


def test_compressed_tensors_experts_ignored_are_16_bit_from_0_12():
    """``re:.*mlp.experts.*`` (added to a W4A16 section): get_moe_method reads ``ignore`` from 0.12.0 (expert 0's
    gate/up/down), never before."""
    section = {**W4A16, "ignore": ["lm_head", "re:.*mlp.experts.*"]}
    found = _read(section, "compressed-tensors")
    assert found.at((0, 12, 0)).unquantized == 48 * ONE_LAYER and found.at((0, 30, 0)).problem is None
    assert "vLLM quantizes model.layers.0.mlp.experts" in found.at((0, 11, 0)).problem
    grown = _weights(section, "0.30.0") - _weights({**W4A16, "ignore": ["lm_head"]}, "0.30.0")
    assert grown == pytest.approx(48 * ONE_LAYER * (2 - 0.5 * (1 + 2 / 128 / 0.5)) / GIB, abs=0.02)


def test_a_compressed_tensors_experts_container_entry_is_not_what_vllm_matches():
    """An entry naming the container (as some exporters collapse a layer's experts) never equals vLLM's
    ``...experts.0.gate_proj`` lookups: vLLM would quantize experts the checkpoint stores 16-bit."""
    section = {**W4A16, "ignore": ["lm_head", "model.layers.0.mlp.experts"]}
    found = _read(section, "compressed-tensors")
    assert "vLLM quantizes model.layers.0.mlp.experts" in found.at((0, 30, 0)).problem


AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}


def test_awq_experts_named_by_substring_are_16_bit_from_0_20_and_hang_on_the_card_before():
    """``modules_to_not_convert: ["mlp.experts"]`` (added): from 0.20.0 awq_marlin, plain AWQ (through moe_wna16 or
    an AWQMarlinConfig) and auto_awq all return UnquantizedFusedMoEMethod for a prefix containing it; before, the
    Marlin path and the plain one differ, and the estimate is not given the card."""
    found = _read({**AWQ, "modules_to_not_convert": ["mlp.experts"]}, "awq")
    assert found.at((0, 20, 0)).unquantized == found.at((0, 34, 0)).unquantized == 48 * ONE_LAYER
    assert "hangs on the card" in found.at((0, 19, 0)).problem


def test_awq_gate_entry_that_also_names_every_experts_gate_proj_cannot_be_predicted():
    """AutoAWQ tests ``"gate" in name``, which takes each expert's gate_proj with the router; vLLM tests the FusedMoE
    prefix, which holds no "gate": it would quantize experts whose gate_proj the checkpoint keeps 16-bit."""
    found = _read({**AWQ, "modules_to_not_convert": ["gate"]}, "awq")
    assert "names some of model.layers.0.mlp.experts's modules" in found.at((0, 30, 0)).problem
