"""Model Runner V2 (vLLM 0.25+ for dense models, 0.29+ for all): its profile, its graphs outside the budget, and the
batch-token defaults of the releases that run it. The figures the constants were fitted on are the calibration
cases' (tests/data/calibration, role `fit`); these tests pin the rules, not the fit."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.settings import resolve
from vllm_remedy.vllm.versions import rules

QWEN3_8B = catalog.model("Qwen/Qwen3-8B")
QWEN_AWQ = catalog.model("Qwen/Qwen2.5-7B-Instruct-AWQ")
QWEN3_MOE = catalog.model("Qwen/Qwen3-30B-A3B")
RTX4090 = catalog.gpu("NVIDIA-GeForce-RTX-4090")
H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")
A100 = catalog.gpu("NVIDIA-A100-SXM4-80GB")
B200 = catalog.gpu("NVIDIA-B200")
# The term tests below were written at 8,192 batch tokens; `vllm serve` defaults to 2,048 on an RTX 4090, so it is set.
FLAGS = {"max-model-len": "8192", "gpu-memory-utilization": "0.9", "max-num-batched-tokens": "8192"}


@pytest.mark.parametrize(("version", "gpu", "expected"), [
    ("0.11.0", RTX4090, (2048, 256)),  # the 0.10/0.11 A100 and L4 logs print 2048
    ("0.27.1", RTX4090, (2048, 256)),  # serve's default below 70 GiB (the 8192 an RTX 4090 log prints is LLM()'s)
    ("0.27.1", H100, (8192, 1024)),
    ("0.28.0", H100, (8192, 1024)),  # 16384 only from 160 GiB (engine/arg_utils.py@0.28.0)
    ("0.28.0", B200, (16384, 1024)),
    ("0.28.0", A100, (2048, 256)),  # A100s stay out of the big class (vllm#17885)
])
def test_serve_batch_token_defaults_follow_the_release(version, gpu, expected):
    assert rules(version).scheduler_defaults(gpu.total_gib, gpu.product) == expected


LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
LLAMA_AWQ = LLAMA.quantized("awq", 4)


@pytest.mark.parametrize(("version", "model", "v2"), [
    ("0.21.0", QWEN3_8B, False), ("0.22.1", LLAMA, False), ("0.23.0", LLAMA, True), ("0.23.0", QWEN3_8B, True),
    ("0.23.0", LLAMA_AWQ, False), ("0.24.0", LLAMA_AWQ, True), ("0.24.0", QWEN_AWQ, False),
    ("0.25.0", QWEN_AWQ, True), ("0.27.1", QWEN3_8B, True),
    ("0.28.0", QWEN3_MOE, False), ("0.29.0", QWEN3_MOE, True), ("0.30.0", QWEN3_MOE, True),
])
def test_runner_v2_is_the_default_by_family_then_for_dense_models_then_all(version, model, v2):
    """Llama/Mistral/Qwen3 dense at 0.23 (quantized at 0.24), every dense model at 0.25, every model at 0.29."""
    assert resolve(model, H100, EngineSettings.from_flags(FLAGS, version)).runner_v2 is v2


def test_runner_v2_budget_has_no_graph_estimate():
    """MRv2's profile_cudagraph_memory returns 0: the KV cache is the budget less weights, activation and non-torch
    memory, and the graphs (still sized) are captured after it."""
    est = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(FLAGS, "0.27.1"))
    budget = RTX4090.total_gib * 0.9 - est.weights_gib - est.activation_gib - est.non_torch_gib
    assert est.kv_cache_gib == pytest.approx(budget)
    assert est.cudagraph_gib > 0
    v1 = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(FLAGS, "0.21.0"))  # V1 runner: graphs inside
    assert v1.kv_cache_gib == pytest.approx(RTX4090.total_gib * 0.9 - v1.weights_gib - v1.activation_gib
                                            - v1.non_torch_gib - v1.cudagraph_gib)


def test_runner_v2_graphs_that_do_not_fit_the_card_are_a_capture_oom_and_eager_avoids_it():
    """Qwen3-8B on an RTX 4090, 0.27.1, utilization 0.98 and 512 sequences: the profile's activation (1.22 GiB) is freed
    before the KV cache (utils/mem_utils.py@0.27.1), but the 0.63 GiB of graphs and then ``warmup_kernels``' sampler
    over 512 requests (v1/worker/gpu/warmup.py@0.26.0) need more than that and the 0.10 GiB the budget left: a capture
    OOM (peak 23.91 of 23.55 GiB). At the default 256 sequences the same start fits (peak 23.45); eager captures
    nothing, and its warm-up alone fits the freed room."""
    crowded = {**FLAGS, "gpu-memory-utilization": "0.98", "max-num-seqs": "512"}  # passes the free-memory check
    est = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(crowded, "0.27.1"))
    assert est.fits and est.graph_capture_oom and est.peak_gib > est.total_gib
    eager = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags({**crowded, "enforce-eager": "true"}, "0.27.1"))
    assert eager.fits and not eager.graph_capture_oom
    roomy = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(FLAGS, "0.27.1"))
    assert roomy.fits and not roomy.graph_capture_oom


def test_cold_compile_cache_is_assumed_and_profiles_heavier_than_warm():
    cold = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(FLAGS, "0.27.1"))
    warm = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(FLAGS, "0.27.1", {"compile-cache-warm": "true"}))
    assert cold.activation_gib > warm.activation_gib + 0.4
    assert warm.kv_cache_tokens > cold.kv_cache_tokens
    # Warm drops only the autotuner's embedding copy: profile_run always runs the dummy forward, and a warm cache calls
    # the loaded artifact on it (v1/worker/gpu/model_runner.py, compilation/decorators.py @0.28.0). At 8,192 batch
    # tokens that forward, 3 x (12,288 + 4,096) values x 2 B per token, is above the sampler phase. (This test assumed
    # a warm cache skipped the forward, a rule set when serve's batch-token default was misread as 8,192.)
    assert warm.activation_gib == pytest.approx(8192 * 3 * (12_288 + 4096) * 2 / GIB)
    # At serve's 2,048 the forward (0.1875 GiB; the warm 0.27.1 log peaked at 0.19) is still above the sampler phase,
    # 256 rows of 151,936 logits kept in bf16 (no float32 copy for the dummy requests from 0.26: sampler.py) and the
    # hidden states.
    serve = {**FLAGS, "max-num-batched-tokens": "2048"}
    warm_2k = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(serve, "0.27.1", {"compile-cache-warm": "true"}))
    assert warm_2k.activation_gib == pytest.approx(2048 * 3 * (12_288 + 4096) * 2 / GIB)
    assert warm_2k.activation_gib > (256 * 151_936 * 2 + 2048 * 4096 * 2) / GIB
    with pytest.raises(UserError, match="compile-cache-warm"):
        EngineSettings.from_flags({}, "0.27.1", {"compile-cache-warm": "maybe"})
    # typed into a container's args it is no vLLM flag: vLLM refuses it, and so does the model
    with pytest.raises(UserError, match=r"^unrecognized arguments: --compile-cache-warm$"):
        EngineSettings.from_flags({"compile-cache-warm": "true"}, "0.27.1")


def test_a_cold_compile_peaks_at_the_autotuners_copy_of_the_embedding():
    """Cold: the 64-padded vocabulary x hidden table plus the lookup's output over mnbt tokens (Qwen3-8B: 151,936 x
    4,096 x 2 B = 1.16 GiB, its cold log peaked at 1.18). --enforce-eager (no compile) or a warm cache (no autotuning;
    the loaded graph still runs the profile's forward): the forward at 3 values per token of (I/TP + H) (V0's count,
    not fitted), or the sampler phase when that is larger."""
    def activation(model: catalog.ModelSpec, **extra: str) -> float:
        inputs = {k: v for k, v in extra.items() if k == "compile-cache-warm"}
        flags = {**FLAGS, **{k: v for k, v in extra.items() if k not in inputs}}
        return estimate(model, RTX4090, EngineSettings.from_flags(flags, "0.27.1", inputs)).activation_gib

    table = (151936 + 8192) * 4096 * 2 / GIB
    assert activation(QWEN3_8B) == pytest.approx(table)
    forward = 8192 * 3 * (QWEN3_8B.intermediate_size + QWEN3_8B.hidden_size) * 2 / GIB
    eager = activation(QWEN3_8B, **{"enforce-eager": "true"})
    assert eager == pytest.approx(forward) and eager < table
    assert activation(QWEN3_8B, **{"compile-cache-warm": "true"}) == pytest.approx(forward)  # warm runs it too
    awq_forward = 8192 * 3 * (QWEN_AWQ.intermediate_size + QWEN_AWQ.hidden_size) * 2 / GIB
    assert activation(QWEN_AWQ, **{"enforce-eager": "true"}) == pytest.approx(awq_forward)
    assert activation(QWEN_AWQ) == pytest.approx((152064 + 8192) * 3584 * 2 / GIB)


def test_the_cold_compile_peak_applies_to_the_v1_runner_from_0_12():
    """A cold 0.11.0 L4 log shows no autotune copy, a cold 0.17.1 T4 log does; in between it is charged (less KV)."""
    t4 = catalog.gpu("Tesla-T4")
    flags = {"max-model-len": "2048", "dtype": "half", "quantization": "awq_marlin", "max-num-seqs": "16"}

    def activation(version: str, **extra: str) -> float:
        inputs = {k: v for k, v in extra.items() if k == "compile-cache-warm"}
        return estimate(QWEN_AWQ, t4, EngineSettings.from_flags(flags, version, inputs)).activation_gib

    cold = {v: activation(v) for v in ("0.11.2", "0.12.0", "0.17.1")}
    assert cold["0.11.2"] == pytest.approx(activation("0.11.2", **{"compile-cache-warm": "true"}))
    assert cold["0.11.2"] < 0.5 and activation("0.17.1", **{"compile-cache-warm": "true"}) < 0.5
    assert cold["0.12.0"] == cold["0.17.1"] == pytest.approx((152064 + 2048) * 3584 * 2 / GIB)


@pytest.mark.parametrize(("version", "default"), [("0.19.1", 0.9), ("0.20.0", 0.92), ("0.22.0", 0.92),
                                                  ("0.22.1", 0.92), ("0.27.1", 0.92)])
def test_unset_utilization_is_the_release_default(version, default):
    """0.19.1 logs print 0.9; config/cache.py@0.20.0 defaults to 0.92 (a 0.22.1 log prints "The current
    --gpu-memory-utilization=0.9200" with the flag unset)."""
    assert rules(version).default_gpu_memory_utilization == default
    assert EngineSettings.from_flags({}, version).gpu_memory_utilization == default


def test_an_unknown_version_gets_the_newest_release_rules_and_says_how_they_were_made():
    """`:latest` most likely runs the newest release: its rules (Model Runner V2 and all), labelled as extrapolated."""
    r = rules(None)
    assert r.version == (0, 34, 0) and not r.known
    assert r.label == "unknown (rules of the newest release, 0.34.0)"
    crowded = {**FLAGS, "gpu-memory-utilization": "0.98"}
    unknown = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(crowded, None))
    newest = estimate(QWEN3_8B, RTX4090, EngineSettings.from_flags(crowded, "0.34.0"))
    # 0.34 sizes the KV cache after capturing the graphs, so a crowded start cannot die in capture after it.
    assert not unknown.graph_capture_oom and unknown == newest


@pytest.mark.parametrize(("version", "label"), [("0.5.0", "0.5.0 (rules: extrapolated from 0.5.5)"),
                                                ("0.0.1", "0.0.1 (rules: extrapolated from 0.5.5)"),
                                                ("0.6.4", "0.6.4"), ("0.21.0", "0.21.0"),
                                                ("0.25.0", "0.25.0"), ("0.33.0", "0.33.0"),
                                                ("0.34.0", "0.34.0"),
                                                ("0.35.0", "0.35.0 (rules: extrapolated from 0.34.0)")])
def test_a_release_older_than_any_modelled_says_its_rules_are_extrapolated(version, label):
    """A reviewer's 0.5.0 printed as a bare, 'modelled' version: older releases get 0.5.5's rules, and say so."""
    assert rules(version).label == label
    assert rules(version).extrapolated is (label != version)
