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
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate

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
