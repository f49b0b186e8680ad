from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog, versions
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory.settings import MODEL_INPUTS, tp_split_problem
from vllm_remedy.vllm.outcomes import Outcome

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")
L4 = catalog.gpu("NVIDIA-L4")


def run(model=LLAMA, gpu=H100, version="0.19.0", **flags: str):
    """Estimate with vLLM flags as keywords; the model's own inputs (other_process_gib, ...) go apart, as callers do."""
    named = {k.replace("_", "-"): v for k, v in flags.items()}
    inputs = {k: v for k, v in named.items() if k in MODEL_INPUTS}
    return estimate(model, gpu, EngineSettings.from_flags({k: v for k, v in named.items() if k not in inputs}, version,
                                                          inputs))


def test_llama_8b_h100_v0_19_exact():
    est = run(max_model_len="8192", gpu_memory_utilization="0.95")
    assert est.outcome is Outcome.FITS
    assert (est.kv_cache_tokens, est.gpu_blocks, est.max_model_len) == (474816, 29676, 8192)
    assert est.to_json() == {
        "outcome": "fits", "weights_gib": 15.06, "activation_gib": 1.94, "non_torch_gib": 0.27,
        "cudagraph_gib": 0.96, "kv_cache_gib": 57.96, "kv_cache_tokens": 474816, "gpu_blocks": 29676,
        "max_concurrency": 57.96, "max_model_len": 8192, "peak_gib": 76.7, "total_gib": 79.19,
        "needed_kv_gib": None, "suggested_max_model_len": None, "graph_capture_oom": False, "kv_allocation_oom": False,
        "start": "fits",
    }


def test_fp8_kv_doubles_tokens_not_memory():
    base = run(max_model_len="8192")
    fp8 = run(max_model_len="8192", kv_cache_dtype="fp8")
    assert fp8.kv_cache_gib == base.kv_cache_gib
    assert fp8.kv_cache_tokens == 2 * base.kv_cache_tokens


def test_max_len_exceeds_kv_reports_what_vllm_prints():
    est = run(gpu=L4, version="0.9.2")  # default 131072 on a 22 GiB card
    assert est.outcome is Outcome.MAX_LEN_EXCEEDS_KV
    assert est.needed_kv_gib == 16.0  # 131072 tokens x 128 KiB
    # 21.96 x 0.9 - 15.06 weights - 1.27 activation (256 x 128256 logits sorted at 38 B each, + forward)
    # - 0.13 non-torch (V1 before 0.18) = 3.31 GiB / 2 MiB per block = 1692 blocks
    assert est.gpu_blocks == 1692
    assert est.suggested_max_model_len == est.kv_cache_tokens == 27072


def test_auto_max_len_takes_the_largest_that_fits():
    """0.14.0 is the first release that takes it (human_readable_int_or_auto, ``Field(ge=-1)``): 0.12.0 and 0.13.0
    parse --max-model-len with human_readable_int, which refuses "auto" (engine/arg_utils.py at each)."""
    for older in ("0.11.0", "0.13.0"):
        with pytest.raises(UserError, match=rf"^max-model-len: auto needs vLLM 0.14.0 or newer .*; vLLM {older} "
                                            "refuses it$"):
            run(gpu=L4, version=older, max_model_len="auto")
    est = run(gpu=L4, version="0.14.0", max_model_len="auto")
    assert est.outcome is Outcome.FITS
    assert est.max_model_len == est.kv_cache_tokens == 27072


def test_no_cache_blocks_when_weights_fill_the_budget():
    est = run(gpu=L4, gpu_memory_utilization="0.7", max_model_len="4096")
    assert est.outcome is Outcome.NO_CACHE_BLOCKS
    assert (est.kv_cache_tokens, est.gpu_blocks) == (0, 0)
    assert est.kv_cache_gib < 0


def test_oom_loading_weights_for_70b_bf16_on_one_gpu():
    est = run(model=catalog.model("meta-llama/Llama-3.3-70B-Instruct"), version="0.8.5", max_model_len="8192")
    assert est.outcome is Outcome.OOM_LOADING_WEIGHTS
    assert round(est.weights_gib, 2) == 131.52


def test_free_memory_check_only_from_0_9_1():
    busy = {"other_process_gib": "10", "max_model_len": "8192"}
    assert run(version="0.9.2", **busy).outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION
    old = run(version="0.8.5", **busy)  # absolute budget: the other process just shrinks the KV cache
    assert old.outcome is Outcome.FITS
    assert old.kv_cache_gib < run(version="0.8.5", max_model_len="8192").kv_cache_gib - 9.9


def test_cudagraph_estimate_inside_budget_from_0_20():
    # utilization set: 0.20.0 also moved the unset default to 0.92 (config/cache.py@0.20.0)
    old, new = (run(version=v, max_model_len="8192", gpu_memory_utilization="0.9") for v in ("0.19.0", "0.20.0"))
    # a dense full-attention model gets vLLM's own estimate too (profile_cudagraph_memory has no MoE branch): 32 layers
    # x 0.004 GiB, not the 0.19 pool (0.5 + 0.0145 x 32 = 0.96 GiB), which the 0.19.0 start captures outside its budget
    assert round(old.kv_cache_gib - new.kv_cache_gib, 2) == round(new.cudagraph_gib, 2) == 0.13
    assert round(old.cudagraph_gib, 2) == 0.96
    assert run(version="0.20.0", max_model_len="8192", enforce_eager="true").cudagraph_gib == 0.0


def test_moe_budget_holds_vllms_graph_estimate_not_the_dense_pool():
    """From 0.20 the V1 budget holds vLLM's estimate (first capture + growth per further size), 0.11-0.14 GiB for
    a 48-layer MoE in the logs; the 0.19 dense pool term (1.2 GiB) stays for the capture after the KV cache."""
    moe = catalog.model("Qwen/Qwen3-30B-A3B")
    old, new = run(moe, version="0.19.0", max_model_len="8192"), run(moe, version="0.22.1", max_model_len="8192")
    assert round(old.cudagraph_gib, 3) == round(0.5 + 0.0145 * 48, 3)
    assert round(new.cudagraph_gib, 3) == 0.192
    assert run(moe, version="0.22.1", max_model_len="8192", enforce_eager="true").cudagraph_gib == 0.0
    # a sliding-window MoE (gpt-oss: half its layers) keeps the pool term: its graphs take about 1 GiB on an H100
    gpt_oss = dataclasses.replace(moe, sliding_window=128, sliding_layers=24)
    assert round(run(gpt_oss, version="0.22.1", max_model_len="8192").cudagraph_gib, 3) == round(0.5 + 0.0145 * 48, 3)


def test_version_defaults():
    r = resolve(LLAMA, H100, EngineSettings(version="0.19.0"))
    assert (r.mnbt, r.max_num_seqs, r.chunked_prefill) == (8192, 1024, True)
    a100 = catalog.gpu("NVIDIA-A100-SXM4-80GB")
    # 0.8.3-0.8.4 pick the big defaults by device name (H100/H200 only); 0.8.5 by >= 70 GiB; 0.9.0+ excludes A100.
    assert (resolve(LLAMA, a100, EngineSettings(version="0.9.2")).mnbt,
            resolve(LLAMA, a100, EngineSettings(version="0.8.5")).mnbt,
            resolve(LLAMA, H100, EngineSettings(version="0.8.4")).mnbt,
            resolve(LLAMA, catalog.gpu("NVIDIA-L40S"), EngineSettings(version="0.8.4")).max_num_seqs) == (
        2048, 8192, 8192, 256)
    v0 = resolve(LLAMA, H100, EngineSettings(version="0.6.4", max_model_len=20000))
    assert (v0.rules.engine, v0.mnbt, v0.chunked_prefill) == ("V0", 20000, False)
    v0_long = resolve(LLAMA, H100, EngineSettings(version="0.6.6"))
    assert (v0_long.mnbt, v0_long.chunked_prefill) == (2048, True)


@pytest.mark.parametrize(
    ("image", "version"),
    [("vllm/vllm-openai:v0.8.5", "0.8.5"), ("vllm/vllm-openai:v0.8.5.post1", "0.8.5.post1"),
     ("docker.io/vllm/vllm-openai:0.10.1", "0.10.1"), ("vllm/vllm-openai:latest", None),
     ("vllm/vllm-openai", None), ("registry:5000/vllm", None), ("vllm/vllm-openai@sha256:abc", None)],
)
def test_version_from_image(image, version):
    assert versions.version_from_image(image) == version


def test_engine_per_version():
    assert [versions.rules(v).engine for v in ("0.6.3", "0.7.3", "0.8.0", None)] == ["V0", "V0", "V1", "V1"]
    assert [versions.rules(v).budget for v in ("0.6.4", "0.6.5", "0.9.0", "0.9.1")] == [
        "absolute", "increase", "absolute", "increase"]
    assert versions.rules("latest").known is False


def test_from_flags_parses_canonical_flags():
    s = EngineSettings.from_flags(
        {"max-model-len": "16384", "enforce-eager": "true", "tensor_parallel_size": "2", "max-num-seqs": "64",
         "gpu-memory-utilization": "0.85", "kv-cache-dtype": "fp8", "no-enable-chunked-prefill": "", "port": "8000"},
        "0.8.5")
    assert s == EngineSettings(version="0.8.5", tp=2, gpu_memory_utilization=0.85, max_model_len=16384,
                               max_num_seqs=64, kv_cache_dtype="fp8", enforce_eager=True, enable_chunked_prefill=False)


@pytest.mark.parametrize(
    ("flags", "message"),
    [({"gpu-memory-utilization": "1.5"}, "gpu-memory-utilization: 1.5 is out of range; expected 0 < U <= 1"),
     ({"gpu-memory-utilization": "0"}, "gpu-memory-utilization: 0.0 is out of range; expected 0 < U <= 1"),
     ({"max-model-len": "-1024"}, "max-model-len: -1024 must be a positive integer (or auto)"),
     ({"max-num-seqs": "lots"}, "max-num-seqs: 'lots' is not an integer"),
     ({"enforce-eager": "maybe"}, "enforce-eager: 'maybe' is not true/false")],
)
def test_from_flags_rejects_bad_values(flags, message):
    with pytest.raises(UserError) as err:
        EngineSettings.from_flags(flags, None)
    assert str(err.value) == message


def test_tp_must_divide_attention_heads():
    assert run(tensor_parallel_size="3").outcome is Outcome.CONFIG_REFUSED  # vLLM refuses it: a predicted refusal
    assert tp_split_problem(LLAMA, 3) == (
        "tensor-parallel-size: 3 does not divide the model's 32 attention heads; vLLM: ValueError: Total number of "
        "attention heads (32) must be divisible by tensor parallel size (3).")


def test_tp_must_split_kv_heads_and_the_mlp_evenly():
    """A reviewer's TP 5 on Qwen2.5-14B (40 heads, 8 KV heads) was sized with one KV head per rank and 'fit'; vLLM
    refuses it while building the layers. TP 16 on 8 KV heads replicates them (valid); 13,824 / 16 is exact too."""
    qwen14 = catalog.model("Qwen/Qwen2.5-14B-Instruct")
    for tp in (5, 10, 20):
        assert (tp_split_problem(qwen14, tp) or "").startswith(f"tensor-parallel-size: {tp} splits the model's 8 KV "
                                                                "heads unevenly")
        assert run(qwen14, tensor_parallel_size=str(tp)).outcome is Outcome.CONFIG_REFUSED
    assert run(LLAMA, tensor_parallel_size="8", max_model_len="8192").fits
    odd = dataclasses.replace(LLAMA, intermediate_size=14337)
    assert (tp_split_problem(odd, 2) or "").startswith("tensor-parallel-size: 2 does not divide the model's "
                                                       "intermediate size")
    assert run(odd, tensor_parallel_size="2").outcome is Outcome.CONFIG_REFUSED


@settings(max_examples=60, deadline=None)
@given(util=st.floats(0.5, 0.99), extra=st.floats(0.001, 0.05), version=st.sampled_from(["0.6.4", "0.7.3", "0.8.5",
                                                                                          "0.9.2", "0.19.0"]))
def test_more_utilization_never_less_kv(util, extra, version):
    low = run(version=version, gpu_memory_utilization=str(util), max_model_len="8192")
    high = run(version=version, gpu_memory_utilization=str(min(1.0, util + extra)), max_model_len="8192")
    assert high.kv_cache_tokens >= low.kv_cache_tokens


@settings(max_examples=60, deadline=None)
@given(seqs=st.integers(1, 1024), version=st.sampled_from(["0.7.3", "0.8.5", "0.19.0"]))
def test_fewer_seqs_never_less_kv(seqs, version):
    more = run(version=version, max_num_seqs=str(seqs + 64), max_model_len="8192")
    fewer = run(version=version, max_num_seqs=str(seqs), max_model_len="8192")
    assert fewer.kv_cache_tokens >= more.kv_cache_tokens


def test_unset_utilization_is_the_releases_default():
    """0.27.1 defaults --gpu-memory-utilization to 0.92 (vllm/config/cache.py:68); earlier releases to 0.9. An explicit
    flag always wins."""
    assert EngineSettings.from_flags({}, "0.19.1").gpu_memory_utilization == 0.9
    assert EngineSettings.from_flags({}, "0.27.1").gpu_memory_utilization == 0.92
    assert EngineSettings.from_flags({"gpu-memory-utilization": "0.9"}, "0.27.1").gpu_memory_utilization == 0.9
    assert run(version="0.27.1", max_model_len="8192").kv_cache_tokens > run(
        version="0.27.1", max_model_len="8192", gpu_memory_utilization="0.9").kv_cache_tokens


def test_pre_ampere_gpus_run_v0_on_0_8_and_0_9():
    """0.8-0.9 fall back to V0 below compute capability 8.0 ("Compute Capability < 8.0 is not supported by the V1
    Engine"): V0's "increase" budget, no free-memory check. Ampere and newer keep V1."""
    t4 = catalog.gpu("Tesla-T4")
    assert resolve(LLAMA, t4, EngineSettings(version="0.8.2")).rules.engine == "V0"
    assert resolve(LLAMA, t4, EngineSettings(version="0.8.2")).rules.budget == "increase"
    assert resolve(LLAMA, L4, EngineSettings(version="0.8.2")).rules.engine == "V1"
    assert resolve(LLAMA, t4, EngineSettings(version="0.19.0")).rules.engine == "V1"


def test_v0_profile_sorts_the_vocab_for_its_top_k_dummy_sampling():
    """V0's profile_run samples 256 dummy sequences with top_k = vocab - 1: a full sort of 256 x vocab logits
    (~38 B each), larger than a short prefill's activation."""
    est = run(version="0.7.3", gpu=L4, max_model_len="2048")
    assert est.activation_gib > 256 * LLAMA.vocab_size * 30 / 2**30
