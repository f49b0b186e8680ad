"""A plain budget overrun — weights, activation and non-torch memory alone above utilization x total, all of it within
the card — is "No available memory for the cache blocks" in every release, and `estimate` and `check` say so:

* V0: ``determine_num_available_blocks`` profiles, then ``raise_if_cache_size_invalid`` refuses ``num_gpu_blocks <= 0``
  (worker/worker.py@0.7.2, as vllm/memory/pinned.py reads it);
* V1: ``determine_available_memory`` returns ``requested_memory - non_kv_cache_memory`` (v1/worker/gpu_worker.py@0.11.0,
  @0.19.0), which ``check_enough_kv_cache_memory`` refuses when ``<= 0`` (v1/core/kv_cache_utils.py@0.11.0, @0.19.0);
* 0.34's extensible cache: ``measure_kv_cache_bytes`` returns ``max(available, 0)``
  (v1/worker/extensible_kv_cache.py@0.34.0) and ``_check_enough_kv_cache_memory`` refuses the 0 blocks the same way
  (v1/core/kv_cache_planning.py@0.34.0).

Nothing is allocated for the cache, so no CUDA OOM: the class is ``no_cache_blocks``, never ``kv_cache_allocation_oom``.
"""

from __future__ import annotations

import json

import pytest

from fixtures.vllm_deployment import manifest as deployment

M = "meta-llama/Llama-3.1-8B-Instruct"
# 0.35 x 44.42 GiB = 15.55 GiB: below the 15.06 GiB of weights plus the profile's activation and non-torch memory
OVERRUN = ("--gpu", "NVIDIA-L40S", "--max-model-len", "8192", "--gpu-memory-utilization", "0.35")


@pytest.mark.parametrize("version", ["0.6.3", "0.8.5", "0.11.0", "0.19.0", "0.28.0", "0.34.0"])
def test_estimate_says_no_cache_blocks(cli, version):
    data = json.loads(cli("estimate", "--model", M, *OVERRUN, "--vllm-version", version, "-o", "json").stdout)
    assert data["start"] == "no_cache_blocks", data
    assert not data["kv_allocation_oom"] and data["kv_cache_tokens"] is None, data
    # the card was never short: everything vLLM held fits it
    assert data["peak_gib"] < data["total_gib"], data


@pytest.mark.parametrize("version", ["0.11.0", "0.34.0"])
def test_check_says_no_cache_blocks(cli, tmp_path, version):
    manifest = deployment(tmp_path, ["--max-model-len", "8192", "--gpu-memory-utilization", "0.35"],
                          image=f"vllm/vllm-openai:v{version}", model=M)
    checked = cli("check", "-f", manifest).stdout
    start = next(line for line in checked.splitlines() if "start [error]" in line)
    assert "no_cache_blocks" in start and "kv_cache_allocation_oom" not in start, checked
