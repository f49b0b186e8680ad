"""Each version fact of vLLM 0.20-0.34 pinned to the release whose source changed it (versions.py cites file@version).

Read from the PyPI sdists of every release 0.21.0-0.34.0 (and 0.19.1/0.20.0 for the utilization default). A fact
that had been taken from a log or from release notes and was wrong by the source is pinned at its source release:
the 0.92 default at 0.20.0 (not 0.22.1), the FlashInfer sampler back by default at 0.21.0, `vllm serve`'s 2,048
batch tokens below 70 GiB in every release (the 8,192 of an RTX 4090 log is `LLM()`'s), 16,384 only from 160 GiB.
"""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.runner_v2 import runner_v2_by_default
from vllm_remedy.vllm.version_labels import NEWEST_MODELLED, NEWEST_RELEASE
from vllm_remedy.vllm.versions import rules, rules_on_device

H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")
H200 = catalog.gpu("NVIDIA-H200")
B200 = catalog.gpu("NVIDIA-B200")
A100 = catalog.gpu("NVIDIA-A100-SXM4-80GB")
RTX4090 = catalog.gpu("NVIDIA-GeForce-RTX-4090")
L4 = catalog.gpu("NVIDIA-L4")


def test_every_release_to_0_34_is_known_and_modelled():
    """0.34 sizes the KV cache after warmup (the extensible KV cache), which core.kv_after_warmup computes."""
    assert (NEWEST_RELEASE, NEWEST_MODELLED) == ((0, 34, 0), (0, 34, 0))
    assert rules(None).label == "unknown (rules of the newest release, 0.34.0)"
    assert rules("0.35.0").label == "0.35.0 (rules: extrapolated from 0.34.0)"
    assert [rules(v).label for v in ("0.21.0", "0.25.1", "0.27.1", "0.33.0", "0.34.0")] == [
        "0.21.0", "0.25.1", "0.27.1", "0.33.0", "0.34.0"]


@pytest.mark.parametrize(("version", "default"), [("0.19.1", 0.9), ("0.20.0", 0.92), ("0.21.0", 0.92),
                                                  ("0.22.0", 0.92), ("0.33.0", 0.92), ("0.34.0", 1.0)])
def test_unset_utilization_defaults_to_0_92_from_0_20(version: str, default: float):
    """config/cache.py@0.20.0 `Field(default=0.92, ...)`, 0.9 at 0.19.1. 0.34 resolves an unset value to 1.0 with the
    extensible KV cache (``resolved_gpu_memory_utilization``, config/cache.py@0.34.0), on by default on CUDA."""
    assert rules(version).default_gpu_memory_utilization == default


@pytest.mark.parametrize(("version", "by_default"), [("0.10.1.1", True), ("0.11.1", False), ("0.20.2", False),
                                                     ("0.21.0", True), ("0.28.0", True), ("0.33.0", True)])
def test_flashinfer_sampler_is_opt_in_from_0_11_1_and_default_again_from_0_21(version: str, by_default: bool):
    """envs.py@0.21.0 defaults VLLM_USE_FLASHINFER_SAMPLER to True (unset meant off at 0.20.0)."""
    assert rules(version).flashinfer_sampler_by_default is by_default


@pytest.mark.parametrize(("version", "capability", "by_default"), [
    ("0.21.0", (7, 5), True), ("0.23.0", (7, 5), True), ("0.24.0", (7, 5), False),  # Turing dropped at 0.24
    ("0.24.0", (8, 0), True), ("0.30.0", (12, 0), True), ("0.30.0", (7, 0), False), ("0.30.0", None, True),
])
def test_the_default_flashinfer_sampler_needs_a_card_flashinfer_supports(version, capability, by_default):
    """FlashInferBackend.supports_compute_capability: 7.5-12.1, 8.0-12.1 from 0.24.0; outside it vLLM falls back."""
    assert rules_on_device(version, capability).flashinfer_sampler_by_default is by_default


@pytest.mark.parametrize(("version", "arch", "moe", "quantized", "v2"), [
    ("0.21.0", "Qwen3ForCausalLM", False, False, False),  # only with VLLM_USE_V2_MODEL_RUNNER=1
    ("0.22.0", "Qwen3ForCausalLM", False, False, True),
    ("0.22.0", "Qwen3ForCausalLM", False, True, False),
    ("0.22.1", "LlamaForCausalLM", False, False, False),
    ("0.23.0", "LlamaForCausalLM", False, False, True),
    ("0.23.0", "MistralForCausalLM", False, False, True),
    ("0.23.0", "LlamaForCausalLM", False, True, False),
    ("0.23.0", "Qwen2ForCausalLM", False, False, False),
    ("0.24.0", "LlamaForCausalLM", False, True, True),
    ("0.24.0", "Qwen2MoeForCausalLM", True, False, True),  # listed MoE architectures join at 0.24
    ("0.23.0", "Qwen2MoeForCausalLM", True, False, False),
    ("0.24.0", "Qwen3MoeForCausalLM", True, False, False),
    ("0.24.0", "Qwen2ForCausalLM", False, False, False),
    ("0.25.0", "Qwen2ForCausalLM", False, True, True),  # every model that is not MoE
    ("0.25.0", "Qwen3MoeForCausalLM", True, False, False),
    ("0.25.0", "InklingForCausalLM", True, False, False),
    ("0.26.0", "InklingForCausalLM", True, False, True),
    ("0.26.0", "KimiK3ForConditionalGeneration", True, False, False),
    ("0.27.0", "KimiK3ForConditionalGeneration", True, False, True),
    ("0.27.1", "DeepseekV4ForCausalLM", True, False, False),
    ("0.28.0", "DeepseekV4ForCausalLM", True, False, True),
    ("0.28.0", "MixtralForCausalLM", True, False, False),
    ("0.29.0", "MixtralForCausalLM", True, False, True),  # every model
    ("0.34.0", "Qwen3MoeForCausalLM", True, True, True),  # the V1 runner is gone
])
def test_model_runner_v2_default_by_release(version, arch, moe, quantized, v2):
    """DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES and _is_default_v2_model_runner_model, config/vllm.py at each release."""
    assert runner_v2_by_default(rules(version), arch, is_moe=moe, quantized=quantized) is v2


def test_model_runner_v2_never_runs_the_v0_engine():
    assert not runner_v2_by_default(rules("0.7.3"), "Qwen3ForCausalLM", is_moe=False, quantized=False)


@pytest.mark.parametrize(("version", "gpu", "expected"), [
    ("0.21.0", RTX4090, (2048, 256)), ("0.27.1", RTX4090, (2048, 256)), ("0.34.0", L4, (2048, 256)),
    ("0.30.0", A100, (2048, 256)),  # A100s stay in the small class (vllm#17885)
    ("0.27.1", H100, (8192, 1024)), ("0.27.1", B200, (8192, 1024)),
    ("0.28.0", H100, (8192, 1024)), ("0.28.0", H200, (8192, 1024)), ("0.28.0", B200, (16384, 1024)),
    ("0.34.0", B200, (16384, 1024)),
])
def test_serve_batch_defaults_by_card_class(version, gpu, expected):
    """EngineArgs.get_batch_defaults for UsageContext.OPENAI_API_SERVER (engine/arg_utils.py; 160 GiB tier 0.28.0)."""
    assert rules(version).scheduler_defaults(gpu.total_gib, gpu.product, gpu.capability) == expected


def test_a_gb10_leaves_the_big_class_at_0_33():
    """GB10 (DGX Spark, capability 12.1) has 70+ GiB but the small tier's defaults from 0.33.0 (arg_utils.py@0.33.0)."""
    assert rules("0.32.0").scheduler_defaults(119.7, "NVIDIA-GB10", (12, 1)) == (8192, 1024)
    assert rules("0.33.0").scheduler_defaults(119.7, "NVIDIA-GB10", (12, 1)) == (2048, 256)


@pytest.mark.parametrize(("field", "since", "before"), [
    ("cudagraph_in_budget", "0.20.0", "0.19.1"),  # envs.py: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS "1" at 0.20.0
    ("runner_v2_graphs_in_budget", "0.29.0", "0.28.0"),  # MRv2 profile_cudagraph_memory stops returning 0
    ("max_len_check_reserves_null_block", "0.29.0", "0.28.0"),  # check_enough_kv_cache_memory less one block
    ("runner_v2_full_sampler_profile", "0.33.0", "0.32.0"),  # the second, warmup-parameter sampler pass
    ("kv_sized_after_warmup", "0.34.0", "0.33.0"),  # the extensible KV cache by default on CUDA
])
def test_budget_facts_change_at_their_release(field: str, since: str, before: str):
    assert getattr(rules(since), field) and not getattr(rules(before), field)
    assert getattr(rules("0.34.0"), field)


def test_the_free_memory_check_is_skipped_with_the_extensible_kv_cache():
    """request_memory (v1/worker/utils.py@0.34.0) raises only when the extensible KV cache is off."""
    assert rules("0.33.0").free_memory_check and not rules("0.34.0").free_memory_check
