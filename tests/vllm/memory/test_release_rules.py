"""The memory rules of vLLM 0.27-0.34 read from each release's source (versions.py's facts, applied in terms/core):
Model Runner V2's graph estimate inside the budget (0.29), the null block held back in the max-length check (0.29),
MRv2's full sampler pass (0.33) and encoder profile (0.27), and 0.34's KV cache sized after warmup. Figures are
computed by hand from the formulas the docstrings cite; none is a fit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, estimate, terms
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.core import kv_after_warmup
from vllm_remedy.vllm.memory.settings import resolve
from vllm_remedy.vllm.outcomes import Outcome

QWEN_1_5B = catalog.model("Qwen/Qwen2.5-1.5B-Instruct")  # 28 layers, 2 KV heads x 128, vocab 151,936, hidden 1,536
QWEN3_8B = catalog.model("Qwen/Qwen3-8B")  # 36 layers
T4 = catalog.gpu("Tesla-T4")  # 14.58 GiB, capability 7.5: no FlashInfer sampler
L4 = catalog.gpu("NVIDIA-L4")  # capability 8.9
H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")  # 79.19 GiB, CUDA context 0.51
WARM = {"compile-cache-warm": "true"}  # no cold-compile autotuning phase; MRv2's forward is below the sampler here
CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"


def run(model, gpu, version, inputs=None, **flags):
    return estimate(model, gpu, EngineSettings.from_flags({"dtype": "float16", **flags}, version, inputs or {}))


# a. MRv2's CUDA-graph estimate inside the budget from 0.29.0 (gpu/cudagraph_utils.py@0.29.0).

def test_mrv2_graph_estimate_is_subtracted_from_the_budget_from_0_29():
    """28 layers x 0.0125 GiB = 0.35 GiB, inside the budget; through 0.28 the 0.0175 GiB-per-layer pool (0.49 GiB) sat
    outside it, so the KV cache was the budget less weights, activation and non-torch memory only."""
    flags = {"gpu-memory-utilization": "0.85", "max-model-len": "4096"}
    for version, graphs, in_budget in (("0.28.0", 0.49, False), ("0.29.0", 0.35, True), ("0.30.0", 0.35, True)):
        e = run(QWEN_1_5B, T4, version, WARM, **flags)
        assert e.cudagraph_gib == pytest.approx(graphs)
        budget = T4.total_gib * 0.85 - e.weights_gib - e.activation_gib - e.non_torch_gib
        assert e.kv_cache_gib == pytest.approx(budget - (graphs if in_budget else 0.0))


def test_mrv2_graph_estimate_is_zero_with_enforce_eager():
    e = run(QWEN_1_5B, T4, "0.30.0", WARM, **{"gpu-memory-utilization": "0.85", "enforce-eager": "true"})
    assert e.cudagraph_gib == 0.0
    assert e.kv_cache_gib == pytest.approx(T4.total_gib * 0.85 - e.weights_gib - e.activation_gib - e.non_torch_gib)


def test_the_t4_0_30_log_is_a_warm_compile_and_its_peak_activation_includes_the_graph_estimate():
    """The log's 0.46 GiB "peak activation" is 0.12 of profile headroom + the 0.34 GiB graph estimate (gpu_worker.py
    @0.27.0); with the compile cache warm (its "Directly load AOT compilation" line) the model charges the profile's
    forward, which a warm cache still runs (3 x (8,960 + 1,536) values x 2,048 tokens x 2 B = 0.1201 GiB, above the
    sampler's fp16 logits: terms.MRV2_DTYPE_LOGITS_SINCE), and 0.35 GiB of graphs: 324,304 tokens, -0.1 %. (It
    charged the sampler with a float32 copy, 0.2232 GiB, -1.3 %, until 0.30.0's sampler was read.)"""
    case = yaml.safe_load((CASES / "t4-v0.30.0-qwen2.5-1.5b-4k-u0.85.yaml").read_text())
    assert case["compile_cache"] == "warm"
    e = estimate_case(case)
    assert e.activation_gib == pytest.approx(3 * (8960 + 1536) * 2048 * 2 / GIB)
    assert e.cudagraph_gib == pytest.approx(0.35)
    assert e.kv_cache_tokens == 324_304


# b. The null block held back in the one-request check from 0.29.0 (kv_cache_utils.py@0.29.0).

MAX_LEN_FLAGS = {"gpu-memory-utilization": "0.288", "enforce-eager": "true"}


def test_a_request_filling_every_block_is_refused_from_0_29():
    """Eager, so graphs take nothing at either release: 0.288 x 14.58 GiB less 2.976 weights, 0.120 activation (the
    forward) and 0.27 non-torch leaves 1,949 blocks of 458,752 B (28 layers x 16 tokens x 1,024 B): 31,184 tokens. A
    31,184-token request needs all 1,949 blocks: it fits the budget (0.28), not the budget less the null block (0.29).
    (0.295 gave the same blocks while the sampler's float32 copy was charged.)"""
    for version in ("0.28.0", "0.29.0"):
        e = run(QWEN_1_5B, T4, version, WARM, **MAX_LEN_FLAGS, **{"max-model-len": "4096"})
        assert (e.gpu_blocks, e.kv_cache_tokens) == (1949, 31_184)
    full = {**MAX_LEN_FLAGS, "max-model-len": "31184"}
    assert run(QWEN_1_5B, T4, "0.28.0", WARM, **full).outcome is Outcome.FITS
    refused = run(QWEN_1_5B, T4, "0.29.0", WARM, **full)
    assert refused.outcome is Outcome.MAX_LEN_EXCEEDS_KV
    assert refused.suggested_max_model_len == 31_168  # 1,948 blocks x 16: the search plans against usable blocks
    assert run(QWEN_1_5B, T4, "0.29.0", WARM, **{**MAX_LEN_FLAGS, "max-model-len": "31168"}).outcome is Outcome.FITS


def test_auto_fit_leaves_out_the_null_block_from_0_29():
    auto = {**MAX_LEN_FLAGS, "max-model-len": "-1"}
    assert run(QWEN_1_5B, T4, "0.28.0", WARM, **auto).max_model_len == 31_184
    assert run(QWEN_1_5B, T4, "0.29.0", WARM, **auto).max_model_len == 31_168


# c. MRv2's full sampler pass in the profile from 0.33.0 (v1/worker/gpu/model_runner.py@0.33.0 _dummy_sampler_run).

HIDDEN_STATES = 2048 * 1536 * 2  # mnbt x hidden x fp16, held through the sampler


def test_before_0_33_the_mrv2_sampler_phase_is_the_fp16_logits_under_the_forward():
    """0.32.0's default pass keeps the logits in fp16 (no float32 copy for the dummy requests, which need no logits
    processing: MRV2_DTYPE_LOGITS_SINCE), 256 x 151,936 x 2 B + the hidden states = 0.078 GiB, under the profile's
    forward, 3 x (8,960 + 1,536) x 2,048 x 2 B = 0.120 GiB."""
    e = run(QWEN_1_5B, T4, "0.32.0", WARM, **{"max-model-len": "4096"})
    assert (256 * 151_936 * 2 + HIDDEN_STATES) / GIB < e.activation_gib == pytest.approx(3 * 10_496 * 2048 * 2 / GIB)


@pytest.mark.parametrize(("version", "gpu", "inputs", "per_logit"), [
    ("0.33.0", T4, {}, 14.5),  # + the warm-up pass: V1's non-greedy sampler per logit (no FlashInfer below 8.0)
    ("0.33.0", L4, {"flashinfer": "true"}, 2 + 3 * 4),  # FlashInfer's buffers where it runs
])
def test_the_mrv2_profile_pays_for_the_full_sampler_from_0_33(version, gpu, inputs, per_logit):
    e = run(QWEN_1_5B, gpu, version, {**WARM, **inputs}, **{"max-model-len": "4096"})
    assert e.activation_gib == pytest.approx((256 * 151_936 * per_logit + HIDDEN_STATES) / GIB)


# d. MRv2's encoder profile for multimodal models from 0.27.0 (v1/worker/gpu/model_runner.py@0.27.0 profile_run).

def test_mrv2_profiles_the_vision_encoder_from_0_27():
    """Two 1,024-token images fill the 2,048-token encoder budget: 2 x 4,096 patches x 3,420 x 2 B x 2 values =
    0.1044 GiB on top of the sampler phase at 0.27; nothing at 0.26 (its profile_run has no encoder step)."""
    vision = replace(QWEN_1_5B, image_tokens=1024, image_patches=4096, vision_intermediate=3420)
    encoder = 2 * 4096 * 3420 * 2 * 2 / GIB
    for version, extra in (("0.26.0", 0.0), ("0.27.0", encoder)):
        text, mm = (run(m, T4, version, WARM, **{"max-model-len": "4096"}) for m in (QWEN_1_5B, vision))
        assert resolve(vision, T4, EngineSettings.from_flags({}, version)).runner_v2
        assert mm.activation_gib - text.activation_gib == pytest.approx(extra)


# e. 0.34.0 sizes the KV cache after warmup and graph capture (v1/worker/extensible_kv_cache.py@0.34.0).

@pytest.mark.parametrize(("requested", "transient", "kv"), [
    (80.0, 2.0, 56.0),  # margin 0.75 x 2 = 1.5: min(80 - 20, 80 - 0.5 - 20 - 1.5) - 2
    (80.0, 1.0, 57.5),  # margin floor 1 GiB: min(60, 58.5) - 1
    (72.0, 2.0, 50.0),  # u = 0.9 caps it: min(72 - 20, 58) - 2
])
def test_kv_after_warmup_is_measure_kv_cache_bytes(requested, transient, kv):
    assert kv_after_warmup(80.0, requested, 20.0, transient, 0.5) == pytest.approx(kv)


def test_0_34_sizes_qwen3_8b_on_an_h100_after_warmup():
    """Unset utilization is 1.0; used = weights + 0.27 non-torch + the 32 MiB cuBLAS workspace (consumed memory,
    ``cublas_pin.consumed_workspace_gib``) + 36 x 0.0175 GiB of captured graphs (no estimate); the free memory less
    the CUDA context (0.51) and a margin of 0.75 x the transient binds."""
    e = estimate(QWEN3_8B, H100, EngineSettings.from_flags({"max-model-len": "32768"}, "0.34.0"))
    assert e.cudagraph_gib == pytest.approx(0.63) and e.non_torch_gib == pytest.approx(0.27 + 32 / 1024)
    used = e.weights_gib + 0.27 + 32 / 1024 + 0.63
    margin = max(1.0, 0.75 * e.activation_gib)
    assert e.kv_cache_gib == pytest.approx(79.19 - 0.51 - used - margin - e.activation_gib)
    assert e.outcome is Outcome.FITS and not e.graph_capture_oom
    capped = estimate(QWEN3_8B, H100, EngineSettings.from_flags(
        {"max-model-len": "32768", "gpu-memory-utilization": "0.9"}, "0.34.0"))
    assert capped.kv_cache_gib == pytest.approx(79.19 * 0.9 - used - e.activation_gib)


def test_0_34_starts_beside_other_processes_with_what_they_leave():
    """No free-memory check with the extensible cache: 30 GiB held elsewhere (0.33 refuses at 0.92) only shrink it."""
    inputs = {"other-process-gib": "30"}
    old = estimate(QWEN3_8B, H100, EngineSettings.from_flags({"max-model-len": "32768"}, "0.33.0", inputs))
    assert old.outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION
    e = estimate(QWEN3_8B, H100, EngineSettings.from_flags({"max-model-len": "32768"}, "0.34.0", inputs))
    used = e.weights_gib + 0.27 + 32 / 1024 + 0.63  # non-torch, the cuBLAS workspace, graphs
    margin = max(1.0, 0.75 * e.activation_gib)
    assert e.outcome is Outcome.FITS
    assert e.kv_cache_gib == pytest.approx(79.19 - 30.51 - used - margin - e.activation_gib)


# f. MRV2_FORWARD_VALUES_PER_TOKEN: no log constrains it, so it is V0's source-read count.

def test_the_mrv2_forward_count_is_not_fitted(monkeypatch):
    """Its former fit cases ran 2,048 batch tokens: any count up to ~11.9 gives the same estimate there."""
    assert terms.MRV2_FORWARD_VALUES_PER_TOKEN == terms.V0_FORWARD_VALUES_PER_TOKEN == 3
    names = [p for p in sorted(CASES.glob("*.yaml")) if "MRV2_FORWARD_VALUES_PER_TOKEN" in
             (yaml.safe_load(p.read_text()).get("fit") or [])]
    cases = [yaml.safe_load(p.read_text()) for p in names]
    assert len(cases) == 3
    tokens = []
    for count in (0.0, 3.0, 11.0):
        monkeypatch.setattr(terms, "MRV2_FORWARD_VALUES_PER_TOKEN", count)
        tokens.append([estimate_case(c).kv_cache_tokens for c in cases])
    assert tokens[0] == tokens[1] == tokens[2]
