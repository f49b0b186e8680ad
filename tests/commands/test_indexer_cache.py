"""DeepSeek-V3.2's indexer cache through the real `estimate` CLI (``vllm.memory.indexer_cache``): from 0.11.0 a layer
whose config has ``index_topk`` registers ``DeepseekV32IndexerCache`` beside its MLA cache, index_head_dim fp8 bytes
plus a 4-byte scale per 128 (132 for index_head_dim 128) per token and layer (models/deepseek_v2.py@0.11.0, 0.30.0).
Hostile review 10 (finding 6) found V3.2 sized as plain MLA: ~10 % more tokens than vLLM holds.

The config is DeepSeek-V2-Lite's (tests/data/configs) made V3.2-shaped: architecture DeepseekV32ForCausalLM and the
index_* values DeepSeek-V3.2's published config.json carries (index_head_dim 128, index_n_heads 64, index_topk
2048); per layer the latent is (512 + 64) x 2 = 1,152 bytes, with the indexer 1,284."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "DeepSeek-V2-Lite.json"
GIB = 2**30


def _per_token(config: Path, version: str) -> float:
    got = run_cli("estimate", "--model-config", str(config), "--gpu", "NVIDIA-H100-80GB-HBM3", "--max-model-len",
                  "32768", "--vllm-version", version, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    doc = json.loads(got.stdout)
    return doc["kv_cache_gib"] * GIB / doc["kv_cache_tokens"]


# 0.11.0 stores V3.2's latent as fp8_ds_mla even with --kv-cache-dtype auto (656 bytes, ``mla_cache``); 0.27.0 keeps
# it 16-bit with auto (from 0.28.0 V3.2's page is the sparse backend's: "cannot predict").
@pytest.mark.parametrize(("version", "latent"), [("0.11.0", 656), ("0.27.0", 1152)])
def test_the_indexer_adds_132_bytes_per_token_and_layer(tmp_path, version, latent):
    config = json.loads(CONFIG.read_text())
    config.update(architectures=["DeepseekV32ForCausalLM"], index_head_dim=128, index_n_heads=64, index_topk=2048)
    v32 = tmp_path / "config.json"
    v32.write_text(json.dumps(config))
    layers = config["num_hidden_layers"]
    assert _per_token(CONFIG, version) == pytest.approx(layers * 1152, rel=0.005)
    assert _per_token(v32, version) == pytest.approx(layers * (latent + 132), rel=0.005)
