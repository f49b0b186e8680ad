"""ModelOpt NVFP4 weights sized as vLLM allocates them (``memory.nvfp4``): 0.5 B per packed weight plus one
float8 scale per group of 16, no zero points, once or twice by release and kernel; the same for either spelling of
the method; a Qwen3-MoE router built with the quantization config (0.10.1 on) sized packed where the checkpoint
stores it so.

Real files (tests/data/configs, sources in SOURCES.md): the hf_quant_config.json of nvidia/Llama-3.3-70B-Instruct-FP4
(https://huggingface.co/nvidia/Llama-3.3-70B-Instruct-FP4/blob/main/hf_quant_config.json) and of
nvidia/Qwen3-235B-A22B-NVFP4 (https://huggingface.co/nvidia/Qwen3-235B-A22B-NVFP4/blob/main/hf_quant_config.json),
pasted into config.json as its ``quantization_config`` (vLLM maps the pasted file's ``producer`` + ``quantization``
to "modelopt_fp4" from 0.10.1 as it does the file, ``quant_source.as_release``), with the shapes of
Llama-3.3-70B-Instruct and Qwen3-235B-A22B. The flat spelling and the list without the routers are built from them,
said so where they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
B200, H100 = "NVIDIA-B200", "NVIDIA-H100-80GB-HBM3"
BUFFERS = 0.10  # weights.WEIGHT_BUFFERS_GIB


def _json(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


LLAMA = _json("Llama-3.3-70B-Instruct")
LLAMA_FILE = _json("Llama-3.3-70B-Instruct-FP4.hf_quant_config")
QWEN_FILE = _json("Qwen3-235B-A22B-NVFP4.hf_quant_config")


def _weights(config: dict[str, Any], version: str, gpu: str = B200) -> float:
    spec = ModelSpec.from_hf_config(config, "m")
    flags = {"max-model-len": "4096"}
    return estimate(spec, catalog.gpu(gpu), EngineSettings.from_flags(flags, version)).weights_gib


def _llama_gib(scale_copies: int) -> float:
    """Llama-3.3-70B's linear layers at 0.5 B + copies x 1/16 B, untied 16-bit embeddings and LM head, 16-bit norms."""
    h, layers, inter, vocab = LLAMA["hidden_size"], LLAMA["num_hidden_layers"], LLAMA["intermediate_size"], \
        LLAMA["vocab_size"]
    kv = LLAMA["num_key_value_heads"] * h // LLAMA["num_attention_heads"]
    linear = layers * (h * h * 2 + 2 * h * kv + 3 * h * inter)  # q, o, k, v, gate, up, down
    norms = (2 * layers + 1) * h
    return (linear * (0.5 + scale_copies / 16) + (2 * vocab * h + norms) * 2) / GIB + BUFFERS


FILE_SPELLING = {**LLAMA, "quantization_config": LLAMA_FILE}
# The flat spelling of the same checkpoint (config.json's ``quant_method: modelopt``; the override picks
# ModelOptNvFp4Config from 0.10.0, ``modelopt_class``), its group stated as the file states it.
FLAT_SPELLING = {**LLAMA, "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4",
                                                  "group_size": 16, "kv_cache_quant_algo": "FP8"}}


@pytest.mark.parametrize("version", ["0.10.2", "0.13.0", "0.16.0", "0.30.0", "0.34.0"])
def test_llama_70b_fp4_is_its_packed_weights_and_one_fp8_scale_per_16(version):
    """From 0.10.2 the swizzled scales replace the loaded ones on every kernel. Before, the flat spelling weighed
    45.85 GiB (fp16 scales and int32 zero points per group of 16, +31 % on the packed bytes) and the file's spelling
    was not sized ("quant_method 'modelopt_fp4' is not modelled"); now both 39.87."""
    want = _llama_gib(1)
    assert _weights(FILE_SPELLING, version) == pytest.approx(want, abs=0.005)
    assert _weights(FLAT_SPELLING, version) == pytest.approx(want, abs=0.005)
    assert want == pytest.approx(39.88, abs=0.005)


@pytest.mark.parametrize(("gpu", "copies"), [(B200, 2), (H100, 1)])
def test_at_0_10_1_cutlass_keeps_both_scale_copies_and_marlin_one(gpu, copies):
    """0.10.1: ``weight_scale_swizzled`` is added beside ``weight_scale`` on the CUTLASS path (capability >= 100) and
    deleted on the Marlin fallback below it (modelopt.py@0.10.1 l.817-866): 43.86 GiB on a B200, 39.87 on an H100."""
    assert _weights(FILE_SPELLING, "0.10.1", gpu) == pytest.approx(_llama_gib(copies), abs=0.005)
    assert _weights(FLAT_SPELLING, "0.10.1", gpu) == pytest.approx(_llama_gib(copies), abs=0.005)


def test_a_flat_nvfp4_section_without_group_size_takes_vllms_16():
    """``from_config`` defaults the group to 16 (modelopt.py@0.10.1 l.648-651); 128 (the integer methods' default)
    priced a quarter of the real scales."""
    section = {k: v for k, v in FLAT_SPELLING["quantization_config"].items() if k != "group_size"}
    assert _weights({**LLAMA, "quantization_config": section}, "0.30.0") == pytest.approx(_llama_gib(1), abs=0.005)


# llm-compressor's NVFP4 layout (RedHatAI's ``nvfp4-pack-quantized`` exports): 4-bit float weights and activations,
# group 16; vLLM's CompressedTensorsW4A4Fp4 (or W4A16Fp4 on Marlin) stores what ModelOpt's class stores.
CT_SPELLING = {**LLAMA, "quantization_config": {
    "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"],
                                  "weights": {"num_bits": 4, "type": "float", "symmetric": True,
                                              "strategy": "tensor_group", "group_size": 16, "dynamic": False},
                                  "input_activations": {"num_bits": 4, "type": "float", "symmetric": True,
                                                        "strategy": "tensor_group", "group_size": 16,
                                                        "dynamic": "local"}}}}}


@pytest.mark.parametrize(("version", "gpu", "copies"), [("0.34.0", B200, 1), ("0.10.2", B200, 1), ("0.10.1", B200, 2),
                                                        ("0.10.1", H100, 1)])
def test_compressed_tensors_nvfp4_is_sized_as_modelopts(version, gpu, copies):
    """compressed_tensors_w4a4_nvfp4.py@0.10.1 l.43-84: uint8 pairs and a float8 scale per 16, the swizzled copy
    beside them through 0.10.1 (l.140-142), replacing them from 0.10.2; Marlin's W4A16Fp4 below capability 100.
    Was 5 bits a weight (fp16 scales per 16: 43.86 GiB on a B200 at 0.34.0), now 39.88 as ModelOpt's."""
    assert _weights(CT_SPELLING, version, gpu) == pytest.approx(_llama_gib(copies), abs=0.005)


# ---- the Qwen3-MoE router ----------------------------------------------------------------------------------

QWEN = _json("Qwen3-235B-A22B")
ROUTER_PARAMS = QWEN["num_hidden_layers"] * QWEN["hidden_size"] * QWEN["num_experts"]  # 94 x 4096 x 128


def test_a_qwen3_moe_router_stored_packed_is_sized_packed_from_0_10_1():
    """qwen3_moe.py@0.10.1 builds the router ``gate`` with the model's quant_config (``quant_layers.LAYOUTS``), so a
    checkpoint whose list does not name the routers stores them NVFP4 and vLLM loads them so: 49.3 M weights at
    0.5625 B instead of 2 B, 67.56 MiB less. NVIDIA's real file lists all 94 routers (16-bit either way); the other
    list is that file's without the 94 ``model.layers.N.mlp.gate`` entries (built here, not a published checkpoint).
    Before, the router was 16-bit whatever the checkpoint stored."""
    listed = {**QWEN, "quantization_config": QWEN_FILE}
    unlisted_file = {"producer": QWEN_FILE["producer"], "quantization": {
        **QWEN_FILE["quantization"], "exclude_modules": ["lm_head"]}}
    unlisted = {**QWEN, "quantization_config": unlisted_file}
    saved = ROUTER_PARAMS * (2 - 0.5625) / GIB
    assert _weights(listed, "0.30.0") - _weights(unlisted, "0.30.0") == pytest.approx(saved, rel=1e-6)
    assert saved * 1024 == pytest.approx(67.56, abs=0.005)


# ---- the card ----------------------------------------------------------------------------------------------

def _start(config: dict[str, Any], version: str, gpu: str) -> Any:
    spec = ModelSpec.from_hf_config(config, "m")
    return estimate(spec, catalog.gpu(gpu), EngineSettings.from_flags(
        {"max-model-len": "4096", "tensor-parallel-size": "4"}, version))


def test_the_files_spelling_meets_the_nvfp4_class_capability_floor():
    """``ModelOptNvFp4Config.get_min_capability`` is 80 through 0.13.0, 75 from 0.14.0 (``modelopt_class``), the same
    floor as the Marlin fallback (``is_fp4_marlin_supported``, marlin_utils_fp4.py@0.13.0 80, @0.14.0 75): a T4 is
    refused in vLLM's words at 0.13.0 and runs Marlin at 0.30.0 (one scale copy). Before, "not modelled" at both."""
    refused = _start(FILE_SPELLING, "0.13.0", "Tesla-T4")
    assert refused.refusal and "modelopt_fp4 is not supported for the current GPU. Minimum capability: 80" in \
        refused.refusal, refused.refusal
    runs = _start(FILE_SPELLING, "0.30.0", "Tesla-T4")
    assert runs.refusal is None and runs.weights_gib == pytest.approx(_start(FLAT_SPELLING, "0.30.0", B200).weights_gib)


# ---- routed experts FlashInfer's TRT-LLM layout would pad --------------------------------------------------

def test_experts_a_blackwell_backend_would_pad_cannot_be_predicted():
    """Qwen3-30B-A3B's shapes (moe_intermediate_size 768) under the Llama FP4 file's section (a combination built
    here): at TP 8 each GPU holds 96 intermediate channels per expert, which FlashInfer's TRT-LLM layout pads to 128
    from 0.26.0 (``align_fp4_moe_weights_for_fi``, min_alignment 64 for gated experts) and the other backends do not;
    the backend vLLM picks on a B200 is not modelled, so "cannot predict" there. TP 4 (192) is aligned whichever
    backend runs; 0.16.0 has no padding; an H100 runs Marlin. Before, every one was sized."""
    config = {**_json("Qwen3-30B-A3B"), "quantization_config": LLAMA_FILE}
    spec = ModelSpec.from_hf_config(config, "m")

    def weights(version: str, gpu: str, tp: str) -> float:
        flags = {"max-model-len": "4096", "tensor-parallel-size": tp}
        return estimate(spec, catalog.gpu(gpu), EngineSettings.from_flags(flags, version)).weights_gib

    with pytest.raises(UserError, match="padded by FlashInfer's TRT-LLM MoE layout"):
        weights("0.30.0", B200, "8")
    assert weights("0.30.0", B200, "4") > 0 and weights("0.16.0", B200, "8") > 0 and weights("0.30.0", H100, "8") > 0
