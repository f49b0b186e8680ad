"""0.34's extensible KV cache in a perturbed world: vLLM sizes the cache from memory measured after warmup and graph
capture, so the model's error changes the KV size the pod logs, never the card's peak (no OOM in initialize_kv_cache),
while the failures real 0.34 has (a max-model-len the measured cache cannot hold) still happen."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.sim.vllm_pod.reality import Reality, perturb
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.startup_log import parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
LONG = [LLAMA, "--max-model-len", "131072", "--max-num-seqs", "8"]  # utilization unset: 1.0 at 0.34
IMAGE = "vllm/vllm-openai:v0.34.0"


def container(args: list[str]) -> dict:
    return {"name": "vllm", "image": IMAGE, "command": ["vllm", "serve"], "args": args,
            "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def launch(args: list[str] = LONG) -> Launch:
    c = container(args)
    got = plan(find_server({"containers": [c]}), c, make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S"}}, "t"))
    assert isinstance(got, Launch), got
    return got


def _figures(text: str) -> tuple[float, float]:
    """(GiB free after warmup, GiB of the extended cache) as the pod's log states them."""
    free = re.search(r"Memory after warmup: ([\d.]+) GiB free", text)
    extended = re.search(r"Extended KV cache to \d+ blocks \(([\d.]+) GiB\)", text)
    assert free and extended, text
    return float(free.group(1)), float(extended.group(1))


@pytest.mark.parametrize("seed", range(8))
def test_a_modelling_error_moves_the_logged_kv_cache_not_the_peak(seed):
    predicted = launch()
    assert predicted.resolved.util == 1.0 and predicted.estimate.fits
    real = Reality(seed=seed).apply(predicted)
    error, _ = Reality(seed=seed).residual(predicted)
    assert error != 0.0
    assert real.estimate.fits and real.estimate.peak_gib == predicted.estimate.peak_gib <= real.gpu.total_gib
    run = timeline.plan_start(real, datetime(2026, 12, 5))
    assert run.exit is None, run.exit and run.exit.log[-1]
    text = "\n".join(line.text for line in run.lines)
    free, kv = _figures(text)
    assert kv == pytest.approx(real.estimate.kv_cache_gib, abs=0.01)
    if error > 0:  # the model over-predicted: the card really gives less
        assert real.estimate.kv_cache_tokens < predicted.estimate.kv_cache_tokens
    # what the log says was free after warmup less the cache is the same kept margin in every world
    exact_free, exact_kv = _figures("\n".join(x.text for x in timeline.plan_start(
        Reality("exact").apply(predicted), datetime(2026, 12, 5)).lines))
    assert free - kv == pytest.approx(exact_free - exact_kv, abs=0.02)
    assert parse_startup_log(text).kv_cache_tokens == real.estimate.kv_cache_tokens


def test_a_thin_fit_still_fails_max_len_exceeds_kv_after_warmup():
    budget = [LLAMA, "--gpu-memory-utilization", "0.6", "--max-num-seqs", "8"]
    tokens = launch([*budget, "--max-model-len", "16384"]).estimate.kv_cache_tokens
    thin = launch([*budget, "--max-model-len", str(tokens - 1024)])
    assert thin.estimate.fits and thin.resolved.rules.kv_sized_after_warmup
    real = perturb(thin, 0.05)
    assert real.outcome is Outcome.MAX_LEN_EXCEEDS_KV and real.kv_cache_tokens < tokens - 1024
    assert real.peak_gib <= thin.gpu.total_gib


@pytest.fixture
def world() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=Reality(seed=0))
    c.store.create("nodes", make_node({"name": "l40s", "gpu": {"product": "NVIDIA-L40S"}}, "t"))
    c.start()
    yield c
    c.stop()


def test_the_long_context_pod_serves_on_the_rehearsal_cluster(world):
    """The runbook shape at 0.34 with the utilization unset used to crash-loop in initialize_kv_cache."""
    world.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "llm"},
                                "spec": {"containers": [container(LONG)]}})

    def ready() -> bool:
        statuses = (world.store.get("pods", "llm", "p").get("status") or {}).get("containerStatuses") or []
        return bool(statuses and statuses[0].get("ready"))
    assert world.wait_for(ready, 8)
    text = world.read_log("llm", "p")
    assert "OutOfMemoryError" not in text
    assert parse_startup_log(text).kv_cache_tokens == Reality(seed=0).apply(launch()).estimate.kv_cache_tokens
