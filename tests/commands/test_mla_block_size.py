"""The KV block size DeepSeek-V2-Lite runs with, by release and card (``mla_release.block_size``), through the real
`estimate` CLI: vLLM forces a block size for MLA only in ``CudaPlatform.check_and_update_config`` and only under
``model_config.use_mla``: FlashMLA's 64 from 0.8.0 on Hopper only (``is_flashmla_supported``), CUTLASS MLA's 128 on
capability 10.0 from 0.10.2; 0.7.x forces nothing, other cards keep 16 (platforms/cuda.py@0.7.3, @0.8.0, @0.9.2,
@0.10.2, @0.11.0). Main ran every MLA start with 64. The block size is read back as tokens / blocks."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "DeepSeek-V2-Lite.json"


def _block(version: str, gpu: str, *extra: str) -> float:
    got = run_cli("estimate", "--model-config", str(CONFIG), "--gpu", gpu, "--max-model-len", "32768",
                  "--vllm-version", version, *extra, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    doc = json.loads(got.stdout)
    return doc["kv_cache_tokens"] / doc["gpu_blocks"]


def test_the_block_size_each_release_forces_for_mla():
    rows = [
        ("0.7.3", "NVIDIA-H100-80GB-HBM3", 16),  # MLA runs, nothing forced before 0.8.0
        ("0.9.2", "NVIDIA-A100-SXM4-80GB", 16),  # FlashMLA is Hopper-only: Triton MLA keeps 16
        ("0.9.2", "NVIDIA-H100-80GB-HBM3", 64),
        ("0.10.2", "NVIDIA-B200", 128),  # CUTLASS MLA by default on 10.0
        ("0.11.0", "NVIDIA-L40S", 16),
    ]
    got = [(version, gpu, _block(version, gpu)) for version, gpu, _ in rows]
    assert got == rows
    # MLA off: nothing is forced, the default 16 even on Hopper
    assert _block("0.9.2", "NVIDIA-H100-80GB-HBM3", "--vllm-mla-disable", "1") == 16
