"""render → parse round trip: every format era gives back the numbers and the failure it was given."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.log_formats import parse_version
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log, render_startup_log

_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."

# One version per format era boundary (see log_formats.TEMPLATES).
VERSIONS = ["0.6.3", "0.6.4", "0.6.6", "0.7.0", "0.7.3", "0.8.0", "0.8.3", "0.8.5", "0.9.0", "0.9.1", "0.10.2",
            "0.11.0", "0.11.1", "0.13.0", "0.14.0", "0.18.0", "0.19.0", "0.22.0", "0.26.0", "0.27.0", "0.28.0",
            "0.29.0", "0.30.0", "0.32.0", "0.34.0"]
BASE = dict(model="meta-llama/Llama-3.1-8B-Instruct", weights_gib=7.51, kv_cache_gib=63.76,
            kv_cache_tokens=1044688, gpu_blocks=65293, max_concurrency=127.53, max_model_len=8192,
            cudagraph_gib=0.76, total_gpu_gib=79.19, gpu_memory_utilization=0.95, activation_gib=1.89,
            non_torch_gib=2.07)


def _failures(version: str) -> list[Failure]:
    v = parse_version(version)
    out = [Failure.NONE, Failure.NO_CACHE_BLOCKS, Failure.MAX_LEN_EXCEEDS_KV, Failure.OOM_LOADING_WEIGHTS,
           Failure.OOM_UNDER_LOAD]
    if (0, 9, 1) <= v < (0, 34, 0):  # 0.34's extensible KV cache skips the check (v1/worker/utils.py@0.34.0)
        out.append(Failure.FREE_MEMORY_BELOW_UTILIZATION)
    if (0, 8, 0) <= v < (0, 34, 0):
        out.append(Failure.SAMPLER_WARMUP_OOM)
    return out


CASES = [(ver, tp, f) for ver in VERSIONS for tp in (1, 2) for f in _failures(ver)]


@pytest.mark.parametrize(("version", "tp", "failure"), CASES, ids=[f"{v}-tp{t}-{f.value}" for v, t, f in CASES])
def test_round_trip(version, tp, failure):
    detail = {"needed_gib": 95.64, "available_gib": 63.76, "suggested_max_model_len": 5632, "free_gib": 60.87,
              "requested_gib": 75.23, "tried_to_allocate_gib": 1.74, "num_dummy_requests": 1024}
    text = render_startup_log(version, tp_size=tp, failure=failure, failure_detail=detail, **BASE)
    r = parse_startup_log(text)
    v = parse_version(version)
    v1 = v >= (0, 8, 0)
    assert (r.failure, r.vllm_version, r.engine, r.model, r.tp_size, r.max_model_len) == (
        failure, version, "v1" if v1 else "v0", BASE["model"], tp, 8192)
    assert r.gpu_memory_utilization == 0.95
    assert (r.server_was_up, r.truncated) == (failure in (Failure.NONE, Failure.OOM_UNDER_LOAD), False)
    if failure in (Failure.FREE_MEMORY_BELOW_UTILIZATION,):
        assert r.failure_detail["free_gib"] == 60.87 and r.failure_detail["requested_gib"] == 75.23
        assert r.total_gpu_gib == 79.19 and r.weights_gib is None
        return
    if failure is Failure.OOM_LOADING_WEIGHTS:
        assert r.weights_gib is None and r.failure_detail["tried_to_allocate_gib"] == 1.74
        assert r.failure_detail["phase"] == "loading_weights"
        return
    assert r.weights_gib == 7.51
    if failure is Failure.MAX_LEN_EXCEEDS_KV:
        if v1:
            assert (r.failure_detail["needed_gib"], r.failure_detail["available_gib"]) == (95.64, 63.76)
            assert r.failure_detail.get("suggested_max_model_len") == (5632 if v >= (0, 9, 1) else None)
        else:
            assert r.failure_detail["kv_cache_tokens"] == 65293 * 16
        return
    if failure is Failure.NO_CACHE_BLOCKS:
        assert r.failure_detail == {}
        # The advice gained a CPU-backend note at 0.22.0 (v1/core/kv_cache_utils.py@0.22.0) and became 0.34's
        # extensible-KV-cache hint (v1/core/kv_cache_planning.py@0.34.0); this test pinned the older tail for all.
        advice = ("Try increasing `gpu_memory_utilization` when initializing the engine" +
                  (" (this flag also controls CPU memory reservation on the CPU backend, despite its name)."
                   if v >= (0, 22, 0) else "."))
        if v >= (0, 34, 0):
            advice = "The KV cache gets what is left after the model and its activations within"
        assert "ValueError: No available memory for the cache blocks. " + advice in r.evidence[-1]
        assert r.evidence[-1].endswith(_DOCS) == (v >= (0, 13, 0))
        return
    # The KV-cache figures each era prints.
    printed_kv_gib = (v >= (0, 6, 4) and not v1) or v >= (0, 9, 1)
    assert r.kv_cache_gib == (63.76 if printed_kv_gib else None)
    # 0.34 logs the committed blocks ("Extended KV cache to N blocks", v1/worker/extensible_kv_cache.py@0.34.0).
    assert r.gpu_blocks == (65293 if v < (0, 8, 0) or v >= (0, 34, 0) else None)
    assert r.kv_cache_tokens == (1044688 if v1 else None)
    assert (r.max_concurrency, r.concurrency_max_len) == (127.53, 8192)
    assert r.cudagraph_gib == (0.76 if v >= (0, 6, 4) else None)
    if (0, 6, 5) <= v < (0, 8, 0):
        assert (r.activation_gib, r.non_torch_gib, r.total_gpu_gib) == (1.89, 2.07, 79.19)
    if failure is Failure.SAMPLER_WARMUP_OOM:
        assert r.failure_detail == {"num_dummy_requests": 1024}
    if failure is Failure.OOM_UNDER_LOAD:
        assert r.server_was_up and r.failure_detail["phase"] == "serving"
    if failure is Failure.NONE:
        assert r.server_was_up and not r.truncated


@pytest.mark.parametrize("version", ["0.10.2", "0.19.0", "0.34.0"])
def test_colour_and_prefixes(version):
    text = render_startup_log(version, tp_size=2, color=True, **BASE)
    assert "\x1b[" in text
    assert ("(Worker_TP1 pid=" in text) and ("(APIServer pid=1)" in text)
    r = parse_startup_log(text)
    assert (r.kv_cache_tokens, r.weights_gib, r.failure) == (1044688, 7.51, Failure.NONE)


def test_old_v1_worker_prefix_and_v0_worker_prefix():
    assert "(VllmWorker rank=1 pid=" in render_startup_log("0.8.5", tp_size=2, **BASE)
    v0 = render_startup_log("0.7.3", tp_size=2, **BASE)
    assert "(VllmWorkerProcess pid=" in v0 and "[worker.py" not in v0 and "# cuda blocks: 65293" in v0


def test_exact_era_wording():
    assert "Loading model weights took 7.5100 GB" in render_startup_log("0.6.6", **BASE)
    assert "Model loading took 7.51 GiB memory and" in render_startup_log("0.19.0", **BASE)
    combined = "GPU KV cache size: 1,044,688 tokens, Maximum concurrency for 8,192 tokens per request: 127.53x"
    assert combined in render_startup_log("0.30.0", **BASE)
    cut = render_startup_log("0.8.5", failure=Failure.MAX_LEN_EXCEEDS_KV, **BASE)
    assert "(63.76 GiB). Based on the available memory,  Try increasing" in cut


def test_host_oom_killed_log_is_cut_while_loading():
    text = render_startup_log("0.19.0", failure=Failure.HOST_OOM_KILLED, **BASE)
    r = parse_startup_log(text)
    assert (r.failure, r.truncated, r.weights_gib) == (Failure.UNKNOWN, True, None)
