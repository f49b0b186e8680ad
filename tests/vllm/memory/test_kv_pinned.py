"""--kv-cache-memory-bytes and --num-gpu-blocks-override size the KV cache as vLLM does (``memory.pinned``), and
LoRA / speculative decoding make the estimate unknown (``memory.unmodelled``).

Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 128 KiB a token, so 1 GiB is 8,192 tokens and a
16,384-token request needs 2 GiB.
"""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.outcomes import Outcome

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L40S = catalog.gpu("NVIDIA-L40S")


def run(version: str, **flags: str):
    named = {"max-model-len": "16384", **{k.replace("_", "-"): v for k, v in flags.items()}}
    return estimate(LLAMA, L40S, EngineSettings.from_flags(named, version))


def test_the_bytes_replace_the_budget_and_one_request_must_fit():
    plain = run("0.11.0")
    assert plain.outcome is Outcome.FITS and plain.kv_cache_tokens > 100_000
    small = run("0.11.0", kv_cache_memory_bytes="1G")  # 2**30 bytes: half of one 16k request
    assert small.outcome is Outcome.MAX_LEN_EXCEEDS_KV
    assert (small.kv_cache_tokens, small.gpu_blocks, small.kv_cache_gib) == (8192, 512, 1.0)
    assert small.needed_kv_gib == pytest.approx(2.0)
    fits = run("0.11.0", kv_cache_memory_bytes="4G")
    assert fits.outcome is Outcome.FITS and fits.kv_cache_tokens == 32768 and fits.max_concurrency == 2.0
    assert run("0.11.0", kv_cache_memory_bytes=str(4 * 2**30)).kv_cache_tokens == 32768


def test_the_utilization_no_longer_moves_the_cache():
    a = run("0.11.0", kv_cache_memory_bytes="4G", gpu_memory_utilization="0.5")
    b = run("0.11.0", kv_cache_memory_bytes="4G", gpu_memory_utilization="0.95")
    assert a.kv_cache_tokens == b.kv_cache_tokens == 32768


def test_a_cache_larger_than_the_card_leaves_is_allocated_and_dies():
    """Nothing in vLLM compares the bytes with the card: the peak crosses it (a CUDA OOM at the KV allocation)."""
    est = run("0.11.0", kv_cache_memory_bytes="40G")
    assert est.outcome is Outcome.FITS  # every vLLM check passes
    assert est.peak_gib > est.total_gib
    assert est.peak_gib > est.weights_gib + est.activation_gib + est.non_torch_gib + 40.0 + est.cudagraph_gib
    assert est.peak_gib - est.cudagraph_gib > est.total_gib  # not a graph-capture OOM: the cache itself


def test_the_free_memory_check_still_runs_on_the_utilization():
    est = estimate(LLAMA, L40S, EngineSettings.from_flags(
        {"max-model-len": "16384", "kv-cache-memory-bytes": "4G"}, "0.11.0", {"other-process-gib": "10"}))
    assert est.outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION


def test_before_0_10_2_vllm_refuses_the_flag_at_parsing():
    with pytest.raises(UserError, match=r"vLLM 0\.10\.1 has no such flag \(added in 0\.10\.2\)"):
        run("0.10.1", kv_cache_memory_bytes="1G")
    with pytest.raises(UserError, match=r"refuses '1\.5G' at argument parsing"):
        run("0.11.0", kv_cache_memory_bytes="1.5G")


def test_0_34_turns_the_extensible_cache_off_with_either_flag():
    est = run("0.34.0", kv_cache_memory_bytes="4G")
    assert est.kv_cache_tokens == 32768 and est.outcome is Outcome.FITS
    crowded = estimate(LLAMA, L40S, EngineSettings.from_flags(
        {"max-model-len": "16384", "num-gpu-blocks-override": "2000"}, "0.34.0", {"other-process-gib": "10"}))
    assert crowded.outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION  # 0.92 of the card, checked again


def test_the_override_replaces_the_count_and_v1_checks_it_from_0_21():
    before = run("0.11.0", num_gpu_blocks_override="100")  # the check ran on the profiled budget
    assert before.outcome is Outcome.FITS and (before.gpu_blocks, before.kv_cache_tokens) == (100, 1600)
    assert before.max_concurrency == pytest.approx(100 / 1024)
    assert before.kv_cache_gib == pytest.approx(100 * 2 / 1024)  # allocated: 100 blocks of 2 MiB, not the budget
    after = run("0.21.0", num_gpu_blocks_override="100")
    assert after.outcome is Outcome.MAX_LEN_EXCEEDS_KV and after.kv_cache_tokens == 1600
    assert run("0.21.0", num_gpu_blocks_override="1100").outcome is Outcome.FITS


def test_v0_checks_the_overridden_count():
    assert run("0.7.2", num_gpu_blocks_override="100").outcome is Outcome.MAX_LEN_EXCEEDS_KV
    fits = run("0.7.2", num_gpu_blocks_override="1100")
    assert fits.outcome is Outcome.FITS and fits.kv_cache_tokens == 17600
    assert run("0.7.2", num_gpu_blocks_override="0").outcome is Outcome.NO_CACHE_BLOCKS


@pytest.mark.parametrize(("flags", "named"), [
    ({"enable-lora": "", "max-loras": "32", "max-lora-rank": "256"},
     "--enable-lora (--max-loras 32, --max-lora-rank 256)"),
    ({"speculative-config": '{"model": "meta-llama/Llama-3.1-70B-Instruct", "num_speculative_tokens": 5}'},
     "--speculative-config"),
    ({"speculative-model": "facebook/opt-125m", "num-speculative-tokens": "5"}, "--speculative-model"),
])
def test_lora_and_speculative_decoding_cannot_be_predicted(flags, named):
    settings = EngineSettings.from_flags({"max-model-len": "16384", **flags}, "0.11.0")
    with pytest.raises(CannotPredict) as caught:
        estimate(LLAMA, L40S, settings)
    assert str(caught.value).startswith(f"cannot predict {named}: ")


def test_lora_options_without_enable_lora_change_nothing():
    assert run("0.11.0", max_loras="32").kv_cache_tokens == run("0.11.0").kv_cache_tokens
    assert run("0.11.0", enable_lora="false").kv_cache_tokens == run("0.11.0").kv_cache_tokens


def test_a_start_refused_before_any_adapter_exists_is_still_predicted():
    """The free-memory check runs in ``init_device``, before weights or adapters: LoRA cannot change that outcome."""
    est = estimate(LLAMA, L40S, EngineSettings.from_flags(
        {"max-model-len": "16384", "enable-lora": "true"}, "0.11.0", {"other-process-gib": "10"}))
    assert est.outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION


def test_zero_bytes_is_unset_and_a_sliver_fails_the_one_request_check():
    """``if kv_cache_memory_bytes := ...``: 0 leaves the budget to size the cache; a positive amount under one block
    passes the "no memory" test (<= 0 only) and fails the one-request check; a negative one is "no memory"."""
    assert run("0.11.0", kv_cache_memory_bytes="0").kv_cache_tokens == run("0.11.0").kv_cache_tokens
    assert run("0.11.0", kv_cache_memory_bytes="1000").outcome is Outcome.MAX_LEN_EXCEEDS_KV
    assert run("0.11.0", kv_cache_memory_bytes="-5").outcome is Outcome.NO_CACHE_BLOCKS
