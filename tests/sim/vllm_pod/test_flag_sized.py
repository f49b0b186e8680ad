"""Rehearsal pods size a flag-sized KV cache as vLLM does (``flag_sized``), in their own arithmetic: an estimate that
ignored the flag does not change what the pod does; the measured error (``reality``) does not move such a cache; an
oversized cache dies in a CUDA OOM at allocation (LoRA pods: ``test_adapters``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.vllm_pod import flag_sized, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.sim.vllm_pod.reality import EXACT, Reality
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure, Outcome
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"  # 128 KiB of KV a token: 1 GiB is 8,192 tokens
NODE = {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}


def container(args: list[str], image: str = "vllm/vllm-openai:v0.11.0") -> dict:
    return {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": args,
            "ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def launch(extra: list[str], image: str = "vllm/vllm-openai:v0.11.0") -> Launch | Refusal:
    c = container([LLAMA, "--max-model-len", "16384", *extra], image)
    return plan(find_server({"containers": [c]}), c, NODE)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(1) as c:
        yield c


def test_a_1g_cache_pod_crash_loops_on_vllms_one_request_check(cluster):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kv1g", "namespace": "llm"},
           "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                    "containers": [container([LLAMA, "--max-model-len", "16384", "--kv-cache-memory-bytes", "1G"])]}}
    cluster.store.create("pods", pod)

    def crashed() -> bool:
        statuses = (cluster.store.get("pods", "llm", "kv1g").get("status") or {}).get("containerStatuses") or []
        return any("CrashLoopBackOff" in str(s.get("state")) for s in statuses)

    assert cluster.wait_for(crashed, 8)
    report = parse_startup_log(cluster.read_log("llm", "kv1g", previous=True))
    assert classify(report) is Failure.MAX_LEN_EXCEEDS_KV


def test_the_pod_sizes_the_cache_from_the_flag_even_when_the_estimate_ignored_it():
    got = launch(["--kv-cache-memory-bytes", "4G"])
    assert isinstance(got, Launch)
    ignored = estimate(got.model, got.gpu, replace(got.settings, kv_cache_memory_bytes=None))
    assert ignored.kv_cache_tokens > 100_000
    sized = flag_sized.size(replace(got, estimate=ignored)).estimate
    assert (sized.outcome, sized.kv_cache_tokens, sized.gpu_blocks) == (Outcome.FITS, 32768, 2048)


def test_the_measured_error_does_not_move_a_flag_sized_cache():
    got = launch(["--kv-cache-memory-bytes", "4G"])
    assert isinstance(got, Launch)
    for seed in range(5):
        assert flag_sized.size(Reality(seed=seed).apply(got)).estimate.kv_cache_tokens == 32768


@pytest.mark.parametrize(("image", "outcome"), [("v0.11.0", Outcome.FITS), ("v0.21.0", Outcome.MAX_LEN_EXCEEDS_KV),
                                                ("v0.8.5", Outcome.FITS)])
def test_the_override_is_checked_where_that_release_checks_it(image, outcome):
    got = launch(["--num-gpu-blocks-override", "100"], f"vllm/vllm-openai:{image}")
    assert isinstance(got, Launch)
    sized = flag_sized.size(EXACT.apply(got)).estimate
    assert (sized.outcome, sized.kv_cache_tokens) == (outcome, 1600)


def test_an_oversized_cache_dies_allocating_it():
    got = launch(["--kv-cache-memory-bytes", "40G"])
    assert isinstance(got, Launch)
    start = timeline.plan_start(flag_sized.size(EXACT.apply(got)), datetime(2026, 1, 1))
    assert start.exit is not None and start.exit.code == 1
    assert "initialize_kv_cache" in "\n".join(start.exit.log)
    assert "torch.OutOfMemoryError: CUDA out of memory" in start.exit.log[-1]


def test_the_settings_the_pod_reads_carry_the_flag():
    assert EngineSettings.from_flags({"kv-cache-memory": "1G"}, "0.11.0").kv_cache_memory_bytes == 2**30


@pytest.mark.parametrize(("image", "size"), [("v0.11.0", "27G"), ("v0.21.0", str(int(27.7 * 2**30)))])
def test_graphs_that_do_not_fit_after_a_flag_sized_cache_die_in_capture(image, size):
    """The cache fits the L40S, the graphs captured after it do not: the estimator says cudagraph_capture_oom and the
    pod dies there, not at the cache, also from 0.20 where the utilization budget would have counted the graphs."""
    got = launch(["--kv-cache-memory-bytes", size], f"vllm/vllm-openai:{image}")
    assert isinstance(got, Launch) and got.estimate.start == "cudagraph_capture_oom"
    start = timeline.plan_start(flag_sized.size(EXACT.apply(got)), datetime(2026, 1, 1))
    assert start.exit is not None and "capture" in "\n".join(start.exit.log)
    assert "initialize_kv_cache" not in "\n".join(start.exit.log)
