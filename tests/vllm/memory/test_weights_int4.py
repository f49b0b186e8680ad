"""Quantized checkpoints: what is stored beside the packed values, and what stays 16-bit (``weights.weights_gib``)."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog, quant_config
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, resolve
from vllm_remedy.vllm.memory.weights import INT4_GROUP_SIZE, WEIGHT_BUFFERS_GIB, weights_gib

LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
         "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
RTX3090 = catalog.gpu("NVIDIA-GeForce-RTX-3090")


def compressed(symmetric: bool) -> dict:
    weights = {"num_bits": 4, "type": "int", "symmetric": symmetric, "strategy": "group", "group_size": 128}
    return {"quant_method": "compressed-tensors", "format": "pack-quantized",
            "config_groups": {"group_0": {"weights": weights, "targets": ["Linear"]}}}


def test_only_symmetric_compressed_tensors_has_no_zero_points():
    assert not quant_config.zero_points({"quantization_config": compressed(True)})
    assert quant_config.zero_points({"quantization_config": compressed(False)})
    assert quant_config.zero_points({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}})
    assert quant_config.zero_points({"quantization_config": {"quant_method": "gptq", "bits": 4, "sym": True}})


def test_symmetric_int4_stores_scales_alone():
    def gib(config: dict) -> float:
        model = catalog.ModelSpec.from_hf_config(config, "m")
        res = resolve(model, RTX3090, EngineSettings.from_flags({"max-model-len": "8192"}, "0.10.0"))
        return weights_gib(model, res, None)

    sym, asym = (gib({**LLAMA, "quantization_config": compressed(s)}) for s in (True, False))
    model = catalog.ModelSpec.from_hf_config({**LLAMA, "quantization_config": compressed(True)}, "m")
    packed = model.params_b * 1e9 - 2 * model.vocab_size * model.hidden_size
    # one int4 zero point (0.5 B) per group of 128 less
    assert asym - sym == pytest.approx(packed * 0.5 * (0.5 / INT4_GROUP_SIZE / 0.5) / GIB)
    assert sym == pytest.approx((2 * 128256 * 4096 * 2 + packed * 0.5 * (1 + 2 / 128 / 0.5)) / GIB + WEIGHT_BUFFERS_GIB)


def test_moe_router_gates_stay_16_bit():
    # vLLM builds the MoE gate with quant_config=None (qwen3_moe.py@0.10.0), so an fp8 or int4 checkpoint keeps it bf16
    model = catalog.model("Qwen/Qwen3-30B-A3B")
    res = resolve(model, RTX3090, EngineSettings.from_flags({"max-model-len": "8192"}, "0.10.0"))
    router = model.num_layers * model.hidden_size * model.num_experts  # 48 x 2048 x 128
    kept = model.vocab_size * model.hidden_size * 2 + router
    expected = (kept * 2 + (model.params_b * 1e9 - kept) * 1) / GIB + WEIGHT_BUFFERS_GIB
    assert weights_gib(model, res, "fp8") == pytest.approx(expected)


@pytest.mark.parametrize(("qc", "group"), [
    ({"quant_method": "awq", "bits": 4, "group_size": 32}, 32),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64}, 64),  # AutoAWQ's own key names
    ({"quant_method": "awq", "bits": 4, "q_group_size": 32, "group_size": 128}, 32),  # awq.py reads q_group_size first
    ({"quant_method": "gptq", "bits": 4, "q_group_size": 32, "group_size": 128}, 128),  # gptq.py reads group_size
    ({"quant_method": "gptq", "bits": 4, "group_size": -1}, None),  # per output channel
    (compressed(False), 128),
    ({**compressed(False), "config_groups": {"g": {"weights": {"num_bits": 4, "strategy": "channel"}}}}, None),
])
def test_group_size_is_the_configs(qc, group):
    assert quant_config.group_size({"quantization_config": qc}) == group


@pytest.mark.parametrize("qc", [
    {"quant_method": "awq", "bits": 4, "group_size": "lots"},
    {"quant_method": "awq", "bits": 4, "group_size": "128"},  # a JSON string: vLLM's shape arithmetic fails on it
    {"quant_method": "gptq", "bits": 4, "group_size": 0},
    {"quant_method": "gptq", "bits": 4},  # get_from_keys raises when the key is missing (gptq.py from_config@0.8.3)
    {"quant_method": "awq", "w_bit": 4},
])
def test_group_size_vllm_cannot_read_cannot_be_predicted(qc):
    with pytest.raises(Exception, match="group_size"):
        quant_config.group_size({"quantization_config": qc})


def test_scales_follow_the_group_size():
    # awq.py create_weights@0.8.3: scales [in / group_size, out] fp16 and qzeros packed 8 per int32, per group: a
    # group of 32 stores four times the scales and zero points of 128 (gemma-3-27b-it-int4-awq is one such export)
    def gib(group: int) -> float:
        model = catalog.ModelSpec.from_hf_config(
            {**LLAMA, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": group}}, "m")
        res = resolve(model, RTX3090, EngineSettings.from_flags({"max-model-len": "8192"}, "0.10.0"))
        return weights_gib(model, res, None)

    model = catalog.ModelSpec.from_hf_config(
        {**LLAMA, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}, "m")
    packed = model.params_b * 1e9 - 2 * model.vocab_size * model.hidden_size
    assert gib(32) - gib(128) == pytest.approx(packed * 0.5 * ((2 + 0.5) / 32 / 0.5 - (2 + 0.5) / 128 / 0.5) / GIB)
