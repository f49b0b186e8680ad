"""compressed-tensors NVFP4 routed experts sized as vLLM allocates them, release by release (``memory.nvfp4``), and
the releases that cannot build the layout at all (``quant_ct_fp4``).

The checkpoint: Qwen3-30B-A3B's shapes (tests/data/configs/Qwen3-30B-A3B.json) with llm-compressor's NVFP4 preset
as ``nvfp4-pack-quantized`` exports write it (4-bit float weights and inputs, ``tensor_group``, group 16, symmetric)
and an ``ignore`` of ``lm_head`` and the routers (built here, as the dense test in test_nvfp4_weights builds its
section; no published config.json was at hand). Every figure is checked against a hand count of the config's own
shapes: the packed linear weights at 0.5 B plus 1/16 B of float8 scale per copy kept, the experts' second packed
copy where vLLM keeps one, and the 16-bit embeddings, LM head, routers and norms.

Before this change the experts (and, in a MoE, the attention) were sized as symmetric int4 with fp16 scales per 16:
0.625 B a weight on every release and card (18.69 GiB here), and nothing refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate, nvfp4
from vllm_remedy.vllm.memory.unmodelled import CannotPredict

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
B200, H100 = "NVIDIA-B200", "NVIDIA-H100-80GB-HBM3"
BUFFERS = 0.10  # weights.WEIGHT_BUFFERS_GIB
QWEN: dict[str, Any] = json.loads((CONFIGS / "Qwen3-30B-A3B.json").read_text())
LLAMA: dict[str, Any] = json.loads((CONFIGS / "Llama-3.3-70B-Instruct.json").read_text())

NVFP4_ARGS = {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "tensor_group", "group_size": 16}


def _ct(inputs: bool = True, **weights: Any) -> dict[str, Any]:
    group = {"targets": ["Linear"], "weights": {**NVFP4_ARGS, "dynamic": False, **weights},
             "input_activations": {**NVFP4_ARGS, "dynamic": "local"} if inputs else None}
    return {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
            "ignore": ["lm_head", "re:.*mlp.gate$"], "config_groups": {"group_0": group}}


W4A4 = {**QWEN, "quantization_config": _ct()}
W4A16 = {**QWEN, "quantization_config": _ct(inputs=False)}
# The same checkpoint as ModelOpt writes it (hf_quant_config.json's layout pasted into config.json, mapped to
# modelopt_fp4 from 0.10.1): the routers listed one by one, as nvidia/Qwen3-235B-A22B-NVFP4's file lists them.
MODELOPT = {**QWEN, "quantization_config": {
    "producer": {"name": "modelopt", "version": "0.33.0"},
    "quantization": {"quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": None,
                     "exclude_modules": ["lm_head"] + [f"model.layers.{n}.mlp.gate"
                                                       for n in range(QWEN["num_hidden_layers"])]}}}


def _weights(config: dict[str, Any], version: str, gpu: str) -> float:
    spec = ModelSpec.from_hf_config(config, "m")
    return estimate(spec, catalog.gpu(gpu), EngineSettings.from_flags({"max-model-len": "4096"}, version)).weights_gib


def _hand_gib(scale_copies: int, expert_copies: int = 1) -> float:
    """Qwen3-30B-A3B on one GPU: attention and experts packed (0.5 B a weight per packed copy, 1/16 B per scale
    copy), routers, embeddings, LM head and norms at 2 B (q_norm / k_norm too)."""
    h, layers, heads, kv, d = (QWEN[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                                   "num_key_value_heads", "head_dim"))
    experts, inter, vocab = QWEN["num_experts"], QWEN["moe_intermediate_size"], QWEN["vocab_size"]
    attention = layers * h * (2 * heads * d + 2 * kv * d)  # q, o, k, v
    expert = layers * experts * 3 * h * inter  # gate, up, down of every expert
    scales = scale_copies / 16
    sixteen = 2 * vocab * h + layers * h * experts + layers * (2 * h + 2 * d) + h
    packed = attention * (0.5 + scales) + expert * (0.5 * expert_copies + scales)
    return (packed + sixteen * 2) / GIB + BUFFERS


@pytest.mark.parametrize("version", ["0.8.5", "0.9.0"])
@pytest.mark.parametrize("gpu", [B200, H100])
def test_before_0_9_2_vllm_has_no_w4a4_scheme(version, gpu):
    """compressed_tensors.py@0.9.0 knows W4A16Fp4 only (NotImplementedError for a W4A4 group); 0.8.5 no FP4 at all.
    Before, 18.69 GiB as int4."""
    with pytest.raises(CannotPredict, match="No compressed-tensors compatible scheme was found"):
        _weights(W4A4, version, gpu)


@pytest.mark.parametrize("version", ["0.9.2", "0.10.0", "0.10.1"])
def test_cutlass_keeps_the_loaded_scales_beside_the_swizzled_ones_through_0_10_1(version):
    """``w13_blockscale_swizzled`` beside ``w13_weight_scale`` (compressed_tensors_moe.py@0.9.2 l.245-251), the dense
    ``weight_scale_swizzled`` likewise: 0.625 B a weight, which the int4 sizing happened to give too (18.69 GiB)."""
    assert _weights(W4A4, version, B200) == pytest.approx(_hand_gib(2), abs=0.005)
    assert _hand_gib(2) == pytest.approx(18.69, abs=0.005)


@pytest.mark.parametrize("version", ["0.9.2", "0.10.1", "0.10.2", "0.11.0"])
@pytest.mark.parametrize("gpu", [H100, "NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S"])
def test_marlin_keeps_the_packed_experts_twice_from_0_9_2_to_0_11_0(version, gpu):
    """``w13_weight_packed`` stays registered while ``prepare_moe_fp4_layer_for_marlin`` sets a repacked
    ``w13_weight`` (utils/marlin_utils_fp4.py@0.9.2 l.164-206): the experts' 29.0 G weights cost 1 B each, one scale
    copy (repacked float8): 30.45 GiB, where the int4 sizing said 18.69."""
    assert _weights(W4A4, version, gpu) == pytest.approx(_hand_gib(1, expert_copies=2), abs=0.005)
    assert _hand_gib(1, expert_copies=2) == pytest.approx(30.45, abs=0.005)


@pytest.mark.parametrize(("version", "gpu"), [("0.11.1", H100), ("0.11.2", H100), ("0.12.0", H100), ("0.14.0", H100),
                                              ("0.20.0", H100), ("0.34.0", H100), ("0.10.2", B200), ("0.11.0", B200),
                                              ("0.14.0", B200), ("0.34.0", B200)])
def test_one_packed_copy_and_one_scale_copy_as_modelopts_experts(version, gpu):
    """From 0.11.1 ``delattr(layer, "w13_weight_packed")`` (compressed_tensors_moe.py@0.11.1 l.312) and from 0.10.2
    the swizzled scales replace the loaded ones: 0.5625 B a weight, 16.94 GiB, as the same checkpoint in ModelOpt's
    layout (``ModelOptNvFp4FusedMoE`` registers ``w13_weight`` itself and never keeps a second packed copy)."""
    assert _weights(W4A4, version, gpu) == pytest.approx(_hand_gib(1), abs=0.005)
    assert _weights(MODELOPT, version, gpu) == pytest.approx(_hand_gib(1), abs=0.005)


@pytest.mark.parametrize("version", ["0.10.2", "0.11.0"])
def test_modelopt_experts_on_marlin_are_one_copy_where_compressed_tensors_keeps_two(version):
    """modelopt.py@0.10.2 / @0.11.0: the Marlin branch repacks ``w13_weight``, the only packed parameter it
    registered, so ModelOpt's experts stay one copy on an H100 where compressed-tensors' are two."""
    assert _weights(MODELOPT, version, H100) == pytest.approx(_hand_gib(1), abs=0.005)
    assert _weights(W4A4, version, H100) - _weights(MODELOPT, version, H100) == pytest.approx(
        QWEN["num_hidden_layers"] * QWEN["num_experts"] * 3 * QWEN["hidden_size"] * QWEN["moe_intermediate_size"]
        * 0.5 / GIB, abs=0.005)


@pytest.mark.parametrize("gpu", [B200, H100])
def test_weight_only_experts_have_a_method_from_0_14_0(gpu):
    """compressed_tensors_moe.py@0.13.0 get_moe_method raises RuntimeError (Unsupported FusedMoe scheme) for a group
    without input activations; 0.14.0 runs it on Marlin (``use_marlin=input_quant is None``), one copy."""
    with pytest.raises(CannotPredict, match="Unsupported FusedMoe scheme"):
        _weights(W4A16, "0.13.0", gpu)
    assert _weights(W4A16, "0.14.0", gpu) == pytest.approx(_hand_gib(1), abs=0.005)


def test_a_weight_only_dense_checkpoint_runs_marlin_on_blackwell_too():
    """``_is_fp4a16_nvfp4`` picks ``CompressedTensorsW4A16Fp4`` on every card (compressed_tensors.py@0.10.1 l.405-406),
    whose Marlin repack keeps one float8 scale per group: one copy at 0.10.1 on a B200, 39.88 GiB for
    Llama-3.3-70B where the CUTLASS figure (two copies, 43.86) was charged."""
    config = {**LLAMA, "quantization_config": {**_ct(inputs=False), "ignore": ["lm_head"]}}
    h, layers, inter, vocab = (LLAMA[k] for k in ("hidden_size", "num_hidden_layers", "intermediate_size",
                                                  "vocab_size"))
    kv = LLAMA["num_key_value_heads"] * h // LLAMA["num_attention_heads"]
    linear = layers * (2 * h * h + 2 * h * kv + 3 * h * inter)
    want = (linear * (0.5 + 1 / 16) + (2 * vocab * h + (2 * layers + 1) * h) * 2) / GIB + BUFFERS
    assert _weights(config, "0.10.1", B200) == pytest.approx(want, abs=0.005)
    assert want == pytest.approx(39.88, abs=0.005)


@pytest.mark.parametrize(("weights", "inputs"), [({"strategy": "group"}, True), ({"symmetric": False}, True),
                                                 ({"group_size": 32}, True)])
def test_a_float_group_vllms_predicates_do_not_take_cannot_be_predicted(weights, inputs):
    """``_is_fp4a4_nvfp4`` wants symmetric ``tensor_group`` groups of 16 (compressed_tensors.py@0.9.2, @0.13.0;
    ``_is_nvfp4_format`` @0.14.0): anything else ends in NotImplementedError or the experts' RuntimeError. Before,
    sized as NVFP4 (or int4) all the same."""
    with pytest.raises(CannotPredict, match="takes none of its NVFP4 schemes"):
        _weights({**QWEN, "quantization_config": _ct(inputs=inputs, **weights)}, "0.30.0", B200)


def test_before_0_10_2_the_experts_need_a_group_targeting_linear():
    """``target_scheme_map["Linear"]`` (compressed_tensors_moe.py@0.10.1 l.72): a group targeting the modules by
    regex raises KeyError there; 0.10.2 looks the fused layer's names up."""
    section = _ct()
    section["config_groups"]["group_0"]["targets"] = ["re:.*proj$"]
    config = {**QWEN, "quantization_config": section}
    with pytest.raises(CannotPredict, match="KeyError"):
        _weights(config, "0.10.1", B200)
    assert _weights(config, "0.10.2", B200) == pytest.approx(_hand_gib(1), abs=0.005)


def test_an_unknown_card_takes_the_kernel_that_keeps_more_bytes():
    """Capability None: on 0.9.2-0.11.0 Marlin's second packed copy of the experts (0.5 B a weight) outweighs
    CUTLASS's second scale copy (1/16 B); a dense checkpoint or ModelOpt's experts keep CUTLASS's larger figure."""
    moe = ModelSpec.from_hf_config(W4A4, "m")
    assert nvfp4.kernel(moe, (0, 10, 1), None) == "marlin"
    assert nvfp4.kernel(moe, (0, 11, 1), None) == "cutlass"  # one copy either way: the first, CUTLASS
    assert nvfp4.kernel(ModelSpec.from_hf_config(MODELOPT, "m"), (0, 10, 1), None) == "cutlass"
    dense = ModelSpec.from_hf_config({**LLAMA, "quantization_config": _ct()}, "m")
    assert nvfp4.kernel(dense, (0, 10, 1), None) == "cutlass"


@pytest.mark.parametrize(("gpu", "version", "floor"), [("Tesla-T4", "0.15.0", 80), ("Tesla-T4", "0.11.0", 80),
                                                       ("Tesla-V100-SXM2-32GB", "0.34.0", 75)])
def test_a_card_below_the_schemes_capability_cannot_be_predicted(gpu, version, floor):
    """compressed-tensors' own floor is 70, so the config passes; the scheme's ``get_min_capability`` (80 through
    0.15.x, 75 from 0.16.0) is checked as the layers are built (``_check_scheme_supported``, a RuntimeError). Before,
    a T4 at 0.15.0 was sized as running."""
    with pytest.raises(CannotPredict, match=f"Min capability: {floor}"):
        _weights(W4A4, version, gpu)


def test_a_t4_runs_the_experts_on_marlin_from_0_16_0():
    """From 0.16.0 the schemes ask 75 (compressed_tensors_w4a4_nvfp4.py@0.16.0 l.31-32) and Marlin takes 7.5: one
    copy of everything."""
    assert _weights(W4A4, "0.16.0", "Tesla-T4") == pytest.approx(_hand_gib(1), abs=0.005)
