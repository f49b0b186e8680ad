"""Rehearsal pods with LoRA or speculative decoding start as vLLM would (review 4, M5), sized by the simulator's own
arithmetic (``adapters``), never refused in the tools' name: LoRA's adapter stacks are weights vLLM allocates in
``load_model``, so the pod logs a smaller KV cache; an ngram proposer changes nothing; a draft model the world
cannot resolve fails as vLLM fails to fetch it; a plain draft model is vLLM 0.11's NotImplementedError, and from 0.16
a start whose draft adds weights and KV layers."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Outcome

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
NODE = {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}
# Llama-3.1-8B, one slot of rank 16 (vLLM's defaults), 0.11 (256 extra-vocab rows): per layer qkv 16x3x4096 +
# (4096+2x1024)x16, o 16x4096 + 4096x16, gate_up 16x2x4096 + 2x14336x16, down 16x14336 + 4096x16; embedding
# (128256+256)x16 + 4096x16 + 256x4096; lm_head 16x4096 + 128256x16 + 256x4096 (128256 is a multiple of 256)
PER_LAYER = 16 * 3 * 4096 + 6144 * 16 + 2 * 16 * 4096 + 16 * 2 * 4096 + 2 * 14336 * 16 + 16 * 14336 + 4096 * 16
EMBED_AND_HEAD = (128512 * 16 + 4096 * 16 + 256 * 4096) + (16 * 4096 + 128256 * 16 + 256 * 4096)
DEFAULT_LORA_BYTES = 2 * (32 * PER_LAYER + EMBED_AND_HEAD)


def container(args: list[str], image: str = "vllm/vllm-openai:v0.11.0") -> dict:
    return {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": args,
            "ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def launch(extra: list[str], tag: str = "v0.11.0") -> Launch | Refusal:
    c = container([LLAMA, "--max-model-len", "16384", *extra], f"vllm/vllm-openai:{tag}")
    return plan(find_server({"containers": [c]}), c, NODE)


def started(extra: list[str], tag: str = "v0.11.0") -> Launch:
    got = launch(extra, tag)
    assert isinstance(got, Launch), got
    return got


@pytest.mark.parametrize("tag", ["v0.11.0", "v0.34.0"])
def test_a_lora_pod_starts_with_its_adapter_stacks_out_of_the_kv_cache(tag):
    plain, lora = started([], tag).estimate, started(["--enable-lora"], tag).estimate
    assert lora.outcome is Outcome.FITS
    grown = (lora.weights_gib - plain.weights_gib) * GIB
    if tag == "v0.11.0":  # the stacks as counted by hand, plus the punica wrapper's index vectors (under 1 MiB)
        assert DEFAULT_LORA_BYTES <= grown <= DEFAULT_LORA_BYTES + 2**20
    assert grown > 80 * 2**20
    assert lora.kv_cache_tokens < plain.kv_cache_tokens
    assert plain.kv_cache_gib - lora.kv_cache_gib == pytest.approx(lora.weights_gib - plain.weights_gib, abs=0.02)


def test_the_stacks_scale_with_slots_and_rank():
    from vllm_remedy.sim.vllm_pod import adapters  # here, so the other tests run (and fail) on a tree without it

    slots = adapters.LoraSlots(4, 64)
    one = started(["--enable-lora"])
    assert adapters.lora_bytes(one.model, one.resolved, slots, (0, 11, 0)) > 15 * DEFAULT_LORA_BYTES
    huge = started(["--enable-lora", "--max-loras", "32", "--max-lora-rank", "256"]).estimate
    assert huge.outcome is Outcome.OOM_LOADING_WEIGHTS  # 512x the default stacks: ~48 GiB, more than an L40S


@pytest.mark.parametrize("extra", [["--enable-lora", "--no-enable-lora"], ["--max-lora-rank", "64", "--max-loras", "4"],
                                   ["--speculative-config.method", "ngram",
                                    "--speculative-config.num_speculative_tokens", "3"],
                                   ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}']],
                         ids=" ".join)
def test_flags_that_load_nothing_start_as_without(extra):
    assert started(extra).estimate == started([]).estimate


def test_a_draft_the_world_cannot_resolve_fails_as_vllm_fetching_it():
    got = launch(["--speculative-config", '{"model": "acme/no-such-draft", "num_speculative_tokens": 3}'], "v0.34.0")
    assert isinstance(got, Refusal)
    assert got.error.startswith("ValueError: Invalid repository ID or local directory specified: 'acme/no-such-draft'")
    assert "vllm-remedy" not in got.error


def test_a_plain_draft_model_is_vllm_0_11s_not_implemented():
    got = launch(["--speculative-config", f'{{"model": "{DRAFT}", "num_speculative_tokens": 3}}'])
    assert isinstance(got, Refusal)
    assert got.error.startswith("NotImplementedError: Speculative decoding with draft model is not supported yet")


@pytest.mark.parametrize("extra", [["--speculative-config", f'{{"model": "{DRAFT}", "num_speculative_tokens": 3}}'],
                                   ["--spec-model", DRAFT, "--spec-tokens", "3"],
                                   ["--speculative-config.model", DRAFT]], ids=" ".join)
def test_a_draft_model_adds_its_weights_and_kv_from_0_16(extra):
    plain, spec = started([], "v0.34.0").estimate, started(extra, "v0.34.0").estimate
    assert 2.0 < spec.weights_gib - plain.weights_gib < 3.0  # Llama-3.2-1B: 1.24 B parameters in bfloat16
    # its 16 layers of 8x64 KV a token are 8 of the target's 8x128: 40 layers share the cache instead of 32
    assert spec.kv_cache_tokens < plain.kv_cache_tokens * 32 / 40


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(1) as c:
        yield c


def test_a_lora_pod_runs_in_the_rehearsal_and_logs_a_smaller_cache(cluster):
    extra = ["--enable-lora", "--max-loras", "4", "--max-lora-rank", "64"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lora", "namespace": "llm"},
           "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                    "containers": [container([LLAMA, "--max-model-len", "16384", *extra])]}}
    cluster.store.create("pods", pod)

    def ready() -> bool:
        statuses = (cluster.store.get("pods", "llm", "lora").get("status") or {}).get("containerStatuses") or []
        return any(s.get("ready") for s in statuses)

    assert cluster.wait_for(ready, 8), cluster.read_log("llm", "lora")
    log = cluster.read_log("llm", "lora")
    assert "vllm-remedy" not in log and "Traceback" not in log
    logged = float(re.search(r"Available KV cache memory: ([\d.]+) GiB", log).group(1))
    # this world starts pods exactly as sized (``EXACT``): 4 slots of rank 64 are 16x the default stacks, 1.4 GiB
    assert logged == pytest.approx(started(extra).estimate.kv_cache_gib, abs=0.01)
    assert logged < started([]).estimate.kv_cache_gib - 1.3
