"""The memory-profiling forward runs after the weights load and before any KV check, whatever the utilization: a start
whose weights, profile activations, non-torch memory, CUDA context and other processes exceed the card dies there with
a raw CUDA OOM (``profile_oom``), not at the "No available memory for the cache blocks" check (``no_cache_blocks``)."""

from __future__ import annotations

import json

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import estimate
from vllm_remedy.vllm.memory.settings import EngineSettings
from vllm_remedy.vllm.outcomes import Outcome, has_cache

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
# The reviewer's case: an L4 with 5.9 GiB held by other processes, utilization 0.7.
CROWDED = ["--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.19.0", "--gpu-memory-utilization", "0.7",
           "--other-gib", "5.9", "--max-model-len", "8192"]


def _est(version: str, flags: dict[str, str], other: float = 0.0, gpu: str = "NVIDIA-L4"):
    settings = EngineSettings.from_flags(flags, version, {"other-process-gib": str(other)})
    return estimate(catalog.model(LLAMA), catalog.gpu(gpu), settings)


def _profile_peak(est) -> float:
    """What the card holds during the profile, less the CUDA context and other processes."""
    return est.weights_gib + est.activation_gib + est.non_torch_gib


@pytest.mark.parametrize("version", ["0.6.6", "0.11.0", "0.19.0", "0.28.0"])
def test_other_processes_leave_no_room_for_the_profile(version):
    est = _est(version, {"gpu-memory-utilization": "0.7", "max-model-len": "8192"}, other=5.9)
    assert est.outcome is Outcome.PROFILE_OOM and est.start == "profile_oom"
    assert not has_cache(est.outcome)
    assert est.peak_gib > est.total_gib  # where it died: weights + the profile's peak + context + others
    assert est.peak_gib > 5.9 + _profile_peak(est)  # and the CUDA context


def test_raising_utilization_does_not_help_but_a_smaller_profile_batch_does():
    huge = {"gpu-memory-utilization": "0.9", "max-model-len": "8192", "max-num-batched-tokens": "65536"}
    assert _est("0.19.0", huge).outcome is Outcome.PROFILE_OOM
    assert _est("0.19.0", {**huge, "gpu-memory-utilization": "0.95"}).outcome is Outcome.PROFILE_OOM
    assert _est("0.19.0", {**huge, "max-num-batched-tokens": "2048"}).outcome is Outcome.FITS


def test_no_cache_blocks_peak_includes_the_profile_that_ran_before_the_check():
    est = _est("0.19.0", {"gpu-memory-utilization": "0.7", "max-model-len": "8192"}, other=5.0)
    assert est.outcome is Outcome.NO_CACHE_BLOCKS
    assert est.peak_gib > 5.0 + _profile_peak(est)  # and the context
    assert est.peak_gib <= est.total_gib


def test_estimate_cli_names_it(cli):
    got = cli("estimate", *CROWDED)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0].split() == ["outcome", "profile_oom"], got.stdout
    assert "peak device memory  22.59 of 21.96 GiB" in got.stdout
    data = json.loads(cli("estimate", *CROWDED, "-o", "json").stdout)
    assert data["outcome"] == data["start"] == "profile_oom" and data["kv_cache_gib"] is None
