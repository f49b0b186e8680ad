"""A compressed-tensors NVFP4 MoE through the real CLI (``estimate --model-config``, no Hub): its experts sized as
vLLM allocates them per release and card (``memory.nvfp4``), the releases without the scheme "cannot predict".

The config.json: Qwen3-30B-A3B's (tests/data/configs) with llm-compressor's ``nvfp4-pack-quantized`` section (weights
and inputs 4-bit float, ``tensor_group``, group 16; routers and LM head ignored), built here. Before this change it
was 18.69 GiB (int4 with fp16 scales per 16) on every release and card, 0.9.0 included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
ARGS = {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "tensor_group", "group_size": 16}
CONFIG = {**json.loads((CONFIGS / "Qwen3-30B-A3B.json").read_text()), "quantization_config": {
    "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head", "re:.*mlp.gate$"],
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {**ARGS, "dynamic": False},
                                  "input_activations": {**ARGS, "dynamic": "local"}}}}}
H100, B200 = "NVIDIA-H100-80GB-HBM3", "NVIDIA-B200"


def _estimate(tmp_path: Path, gpu: str, version: str) -> tuple[int, str, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", gpu, "--max-model-len", "8192",
                  "--vllm-version", version, "-o", "json")
    return got.returncode, got.stdout, got.stderr


@pytest.mark.parametrize(("gpu", "version", "weights"), [
    (H100, "0.11.0", 30.44),  # Marlin: w13_weight_packed kept beside the repacked experts (to 0.11.0)
    (H100, "0.11.1", 16.94),  # delattr(layer, "w13_weight_packed") from 0.11.1
    (B200, "0.10.1", 18.69),  # CUTLASS: loaded and swizzled scales (to 0.10.1)
    (B200, "0.34.0", 16.94),
])
def test_the_experts_weigh_what_the_release_keeps(tmp_path, gpu, version, weights):
    code, out, err = _estimate(tmp_path, gpu, version)
    assert code in (0, 1), err
    got = json.loads(out)
    assert got["outcome"] == "fits" and got["weights_gib"] == pytest.approx(weights, abs=0.011), got


def test_a_release_without_the_w4a4_scheme_cannot_be_predicted(tmp_path):
    code, _, err = _estimate(tmp_path, H100, "0.9.0")
    assert code == 2
    assert "cannot predict" in err and "No compressed-tensors compatible scheme was found" in err, err
