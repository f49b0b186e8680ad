"""A flag-sized KV cache larger than what the card leaves is allocated and dies in initialize_kv_cache.

Nothing in vLLM compares --kv-cache-memory-bytes / --num-gpu-blocks-override with the card (``vllm.memory.pinned``):
the estimate must say so (``start``: ``kv_cache_allocation_oom``), not ``fits`` with a peak above the card.
"""

from __future__ import annotations

import json

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import estimate
from vllm_remedy.vllm.memory.settings import EngineSettings

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _est(version: str, **flags: str):
    settings = EngineSettings.from_flags({"max-model-len": "16384", **flags}, version)
    return estimate(catalog.model(LLAMA), catalog.gpu("NVIDIA-L4"), settings)


@pytest.mark.parametrize(("version", "flags"), [
    ("0.11.0", {"kv-cache-memory-bytes": "8G"}), ("0.11.0", {"kv-cache-memory-bytes": "100G"}),
    ("0.8.5", {"num-gpu-blocks-override": "4000"}), ("0.11.0", {"num-gpu-blocks-override": "10000"}),
    ("0.21.0", {"num-gpu-blocks-override": "4000"}), ("0.34.0", {"num-gpu-blocks-override": "4000"}),
])
def test_an_oversized_flag_sized_cache_is_a_kv_allocation_oom(version, flags):
    est = _est(version, **flags)
    assert est.peak_gib > est.total_gib
    assert est.kv_allocation_oom and not est.graph_capture_oom
    assert est.start == "kv_cache_allocation_oom" and est.to_json()["start"] == "kv_cache_allocation_oom"


def test_a_flag_sized_cache_that_fits_still_fits():
    est = _est("0.11.0", **{"kv-cache-memory-bytes": "4G"})
    assert est.start == "fits" and not est.kv_allocation_oom and est.peak_gib <= est.total_gib


def test_estimate_names_it(cli):
    got = cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.11.0", "--max-model-len",
              "16384", "--kv-cache-memory-bytes", "8G")
    assert got.stdout.splitlines()[0].split()[1] == "kv_cache_allocation_oom:", got.stdout
    data = json.loads(cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.11.0",
                          "--max-model-len", "16384", "--kv-cache-memory-bytes", "8G", "-o", "json").stdout)
    assert data["start"] == "kv_cache_allocation_oom" and data["outcome"] == "fits"  # vLLM's checks pass
