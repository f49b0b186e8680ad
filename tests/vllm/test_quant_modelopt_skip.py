"""ModelOpt checkpoints read as vLLM reads them: the algorithm under ``quantization`` (``quant_config.modelopt_algo``)
and the modules ``exclude_modules`` / ``ignore`` leave unquantized, release by release (``quant_modelopt_skip``),
including routed experts.

Real files (tests/data/configs, sources in SOURCES.md): the hf_quant_config.json of nvidia/Llama-3.3-70B-Instruct-FP4
and nvidia/Qwen3-235B-A22B-NVFP4, the shapes of Llama-3.3-70B-Instruct, Qwen3-235B-A22B and Qwen3-30B-A3B. The
exclude lists that name attention or experts are ModelOpt's own "module_path*" form (modelopt.py@0.13.0
``apply_vllm_mapper``) added to those real files, said so where they are built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog, quant_config
from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.quant_exclusions import Split, from_text

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
H100 = "NVIDIA-H100-80GB-HBM3"


def _json(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _with(model: str, section: dict[str, Any]) -> dict[str, Any]:
    return {**_json(model), "quantization_config": section}


def _weights(config: dict[str, Any], version: str, tp: str = "4") -> float:
    spec = ModelSpec.from_hf_config(config, "m")
    flags = {"max-model-len": "4096", "tensor-parallel-size": tp}
    return estimate(spec, catalog.gpu(H100), EngineSettings.from_flags(flags, version)).weights_gib


# ---- the algorithm under "quantization" ----------------------------------------------------------------------

FP4_FILE = _json("Llama-3.3-70B-Instruct-FP4.hf_quant_config")


def test_a_nested_nvfp4_algorithm_is_sized_as_nvfp4_not_as_fp8():
    """The file's ``quantization`` under a config.json ``quant_method: modelopt`` (the layout vLLM's ``from_config``
    reads first, modelopt.py@0.10.0-@0.34.0; without ModelOpt's ``producer``, which from 0.10.1 maps the section to
    "modelopt_fp4", not sized: quant_source): 4-bit with its group of 16, as the same algorithm stated flat is.
    Before, ``quant_algo`` was read at the top level only and defaulted to FP8: 8 bits."""
    nested = _with("Llama-3.3-70B-Instruct", {"quant_method": "modelopt", "quantization": FP4_FILE["quantization"]})
    flat = _with("Llama-3.3-70B-Instruct", {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                             "ignore": ["lm_head"]})
    text = nested["quantization_config"]
    assert (quant_config.weight_bits(nested), quant_config.group_size(nested)) == (4, 16), text
    assert _weights(nested, "0.30.0") == _weights(flat, "0.30.0") < 0.7 * _weights(
        _with("Llama-3.3-70B-Instruct", {"quant_method": "modelopt", "quant_algo": "FP8"}), "0.30.0")


def test_a_nested_fp8_algorithm_stays_8_bit_and_a_missing_one_cannot_be_predicted():
    fp8 = {"quantization": {**FP4_FILE["quantization"], "quant_algo": "FP8"}}
    assert quant_config.weight_bits(_with("Llama-3.3-70B-Instruct", {"quant_method": "modelopt", **fp8})) == 8
    none = {"quant_method": "modelopt", "quantization": {"exclude_modules": ["lm_head"]}}
    with pytest.raises(UserError, match="states no quant_algo"):
        quant_config.weight_bits(_with("Llama-3.3-70B-Instruct", none))


# ---- exclude lists -----------------------------------------------------------------------------------------

def _read(model: str, section: dict[str, Any], method: str) -> Any:
    text = _json(model)
    experts = text.get("num_experts", 0)
    head = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    return from_text(text, text["architectures"][0], text["num_hidden_layers"], text["hidden_size"],
                     text["num_attention_heads"], text["num_key_value_heads"], head, text["intermediate_size"],
                     experts, section, method)


def test_the_router_gates_nvidias_qwen3_moe_excludes_are_left_16_bit_by_every_release():
    """nvidia/Qwen3-235B-A22B-NVFP4 lists its 94 router gates and the LM head. vLLM builds the router with the quant
    config from 0.10.1 (qwen3_moe.py) and leaves each listed gate unquantized (an exact name: is_layer_skipped, and
    from 0.12.0 fnmatch too); the weight sizing prices routers at 16 bits anyway. Before, any entry other than the
    LM head made the checkpoint "cannot predict"."""
    section = {**_json("Qwen3-235B-A22B-NVFP4.hf_quant_config"), "quant_method": "modelopt_fp4"}  # quant_source
    found = _read("Qwen3-235B-A22B", section, "modelopt_fp4")  # read from 0.10.1 (quant_source.MODELOPT_SINCE)
    for version in ((0, 10, 1), (0, 10, 2), (0, 11, 0), (0, 12, 0), (0, 24, 0), (0, 26, 0), (0, 34, 0)):
        assert found.at(version) == Split(), version


LAYER0_ATTN = 8192 * (64 * 128) * 2 + 8192 * (8 * 128) * 2  # q, o and k, v of Llama-3.3-70B's first layer


@pytest.mark.parametrize(("method", "algo"), [("modelopt", "FP8"), ("modelopt", "NVFP4")])
def test_a_layers_attention_tree_is_16_bit_where_vllm_matches_it(method, algo):
    """The Llama-3.3-70B file with ModelOpt's "model.layers.0.self_attn*" added (a tree it writes when a whole
    module is left unquantized). FP8 through 0.11.x never matches it (no exclusion before 0.10.0, a substring test
    that takes "*" literally to 0.11.0): vLLM would load the 16-bit tensors into FP8 parameters, not predicted.
    NVFP4 matches it from 0.9.0 (re.fullmatch with "*" as ".*"), both from 0.12.0 (fnmatch)."""
    section = {"quantization": {**FP4_FILE["quantization"], "quant_algo": algo,
                                "exclude_modules": ["lm_head", "model.layers.0.self_attn*"]}}
    found = _read("Llama-3.3-70B-Instruct", {"quant_method": method, **section}, method)
    for version in ((0, 10, 0), (0, 11, 0), (0, 12, 0), (0, 26, 0), (0, 34, 0)):
        split = found.at(version)
        if algo == "FP8" and version < (0, 12, 0):
            assert "quantizes model.layers.0.self_attn.qkv_proj" in (split.problem or ""), (version, split)
        else:
            assert (split.problem, split.unquantized) == (None, LAYER0_ATTN), (version, split)


def test_a_layer_tree_that_vllms_substring_test_widens_cannot_be_predicted():
    """"model.layers.1*" is layer 1 for ModelOpt; vLLM's fnmatch (0.12.0-0.25.x) and, after apply_vllm_mapper splits
    it into "model.layers.1" and "model.layers.1.*" (0.26.0 on), its substring test also take layers 10-19, which
    the checkpoint stores quantized (vllm#28072)."""
    section = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head", "model.layers.1*"]}
    found = _read("Llama-3.3-70B-Instruct", section, "modelopt")
    for version in ((0, 12, 0), (0, 26, 0), (0, 34, 0)):
        assert "leaves model.layers.10.self_attn.qkv_proj unquantized" in found.at(version).problem, version


def test_routed_experts_excluded_are_16_bit_from_0_12_and_not_predicted_before():
    """Qwen3-30B-A3B with its last layer's experts excluded ("model.layers.47.mlp.experts*", added): from 0.12.0 the
    excluded FusedMoE gets no ModelOpt method and FusedMoE falls back to UnquantizedFusedMoEMethod
    (fused_moe/layer.py@0.12.0); before, the MoE branch never reads the list (modelopt.py@0.11.0)."""
    section = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head", "model.layers.47.mlp.experts*"]}
    found = _read("Qwen3-30B-A3B", section, "modelopt")
    experts = 3 * 128 * 2048 * 768
    assert found.at((0, 30, 0)).unquantized == experts and found.at((0, 12, 0)).problem is None
    assert "quantizes model.layers.47.mlp.experts" in found.at((0, 11, 0)).problem
    config = _with("Qwen3-30B-A3B", section)
    plain = _with("Qwen3-30B-A3B", {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head"]})
    assert _weights(config, "0.30.0", "1") - _weights(plain, "0.30.0", "1") == pytest.approx(experts / GIB, abs=0.01)
    with pytest.raises(CannotPredict, match=r"model\.layers\.47\.mlp\.experts"):
        _weights(config, "0.11.0", "1")


def test_an_architecture_whose_names_are_not_walked_still_cannot_be_predicted():
    section = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head", "model.layers.0.self_attn*"]}
    text = {**_json("Llama-3.3-70B-Instruct"), "architectures": ["Phi3ForCausalLM"]}
    found = from_text(text, "Phi3ForCausalLM", 80, 8192, 64, 8, 128, 28672, 0, section, "modelopt")
    assert "does not know the architecture's layer names" in found.at((0, 30, 0)).problem


# ---- what a release builds at all -------------------------------------------------------------------------------

@pytest.mark.parametrize(("section", "version", "words"), [
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "0.9.2", "reads a ModelOpt section only in"),
    ({"quant_method": "modelopt", "quantization": FP4_FILE["quantization"]}, "0.9.2",
     "builds its ModelOpt FP8 config for this NVFP4 checkpoint"),
])
def test_a_section_a_release_cannot_build_is_not_sized(section, version, words):
    """Before 0.10.0 ``from_config`` reads only ``quantization`` (get_from_keys raises on a flat section) and no
    override picks the NVFP4 class, so the FP8 class gets packed NVFP4 weights (modelopt.py@0.9.2 l.72-77). Before,
    both were sized (8 and 4 bits)."""
    with pytest.raises(CannotPredict, match=words):
        _weights(_with("Llama-3.3-70B-Instruct", section), version)
    assert _weights(_with("Llama-3.3-70B-Instruct", section), "0.10.0") > 0  # read from 0.10.0


def test_a_moe_model_before_its_class_has_a_fused_moe_method_is_not_sized():
    """ModelOptFp8Config gives FusedMoE a method from 0.10.0 (modelopt.py@0.10.0 l.169); before, FusedMoE's
    ``assert quant_method is not None`` fails (fused_moe/layer.py@0.9.2 l.732-735)."""
    nested = {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
    with pytest.raises(CannotPredict, match="no FusedMoE method"):
        _weights(_with("Qwen3-30B-A3B", nested), "0.9.2", "1")
    assert _weights(_with("Qwen3-30B-A3B", nested), "0.10.0", "1") > 0
