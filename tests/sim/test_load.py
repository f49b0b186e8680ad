"""Serving vLLM pods under load: /metrics with each release's names, KV usage and preemptions from the load
model, and the CUDA OOM under load that runbook step 5 is about (plus its fix, a smaller prefill chunk)."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_remedy.errors import UserError
from vllm_remedy.sim import load as loadmodel
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import LOAD, install, metrics, timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.sim.vllm_pod.node_card import node_gpu
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
LONG_PROMPTS = "requests=4, prompt-tokens=12000, max-prompt-tokens=16000, prompt-logprobs=0.1"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)  # KV usage is compared with estimate() exactly
    install(c)
    c.store.create("nodes", make_node({"name": "l40s-1", "gpu": {"product": "NVIDIA-L40S", "count": 2}}, "t"))
    c.start()
    yield c
    c.stop()


def deployment(args: list[str], replicas: int = 1, image: str = "vllm/vllm-openai:v0.8.5") -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "llama-8b", "namespace": "llm", "labels": {"app": "llama-8b"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "llama-8b"}},
                     "template": {"metadata": {"labels": {"app": "llama-8b"}}, "spec": {
                         "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                         "containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"],
                                         "args": [LLAMA, *args], "ports": [{"containerPort": 8000}],
                                         "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def pods(c: Cluster) -> list[dict]:
    return c.store.list("pods", "llm")[0]


def status(p: dict) -> dict:
    return ((p.get("status") or {}).get("containerStatuses") or [{}])[0]


def all_ready(c: Cluster, n: int) -> bool:
    found = pods(c)
    return len(found) == n and all(status(p).get("ready") for p in found) and c.rolled_out("llm", "llama-8b")


def set_load(c: Cluster, value: str) -> None:
    c.store.mutate("deployments.apps", "llm", "llama-8b",
                   lambda d: d["metadata"].setdefault("annotations", {}).update({LOAD: value}))


def scrape(c: Cluster, pod: str, version: str = "0.0.4") -> dict[str, tuple[dict[str, str], float]]:
    """Parse Prometheus text strictly: every sample declared by HELP and TYPE before it, one sample each."""
    code, ctype, body = c.proxy("llm", pod, 8000, "/metrics")
    assert (code, ctype) == (200, f"text/plain; version={version}; charset=utf-8")
    declared: dict[str, str] = {}
    out: dict[str, tuple[dict[str, str], float]] = {}
    lines = body.decode().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# HELP "):
            assert lines[i + 1].startswith(f"# TYPE {line.split()[2]} ")
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert kind in ("gauge", "counter")
            declared[name] = kind
        else:
            m = re.fullmatch(r'([a-zA-Z_:][\w:]*)\{((?:\w+="[^"]*",?)*)\} (\S+)', line)
            assert m, line
            assert m.group(1) in declared and m.group(1) not in out
            out[m.group(1)] = (dict(re.findall(r'(\w+)="([^"]*)"', m.group(2))), float(m.group(3)))
    return out


def test_long_prompts_with_prompt_logprobs_oom_a_running_pod(cluster):
    cluster.store.create("deployments.apps", deployment(["--max-model-len", "16384",
                                                         "--max-num-batched-tokens", "16384"]))
    assert cluster.wait_for(lambda: all_ready(cluster, 1), 8)
    name = pods(cluster)[0]["metadata"]["name"]
    set_load(cluster, LONG_PROMPTS)
    assert cluster.wait_for(lambda: status(cluster.store.get("pods", "llm", name)).get("restartCount", 0) >= 1, 8)
    text = cluster.read_log("llm", name, previous=True)
    report = parse_startup_log(text)
    assert classify(report, exit_code=1, reason="Error") is Failure.OOM_UNDER_LOAD
    assert report.server_was_up and report.failure_detail["phase"] == "serving"
    # The failing allocation is the step's logits: 16000 tokens x 128256 vocab x 8 B; free = GPU - startup peak.
    est = estimate(catalog.model(LLAMA), catalog.gpu("NVIDIA-L40S"),
                   EngineSettings.from_flags({"max-model-len": "16384", "max-num-batched-tokens": "16384"}, "0.8.5"))
    assert report.failure_detail["tried_to_allocate_gib"] == round(16000 * 128256 * 8 / 1024**3, 2) == 15.29
    assert f"of which {est.total_gib - est.peak_gib:.2f} GiB is free" in text
    last = status(cluster.store.get("pods", "llm", name))["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (1, "Error")


def test_runbook_fix_a_smaller_prefill_chunk_survives_the_same_load(cluster):
    cluster.store.create("deployments.apps", deployment(["--max-model-len", "16384",
                                                         "--max-num-batched-tokens", "2048"]))
    assert cluster.wait_for(lambda: all_ready(cluster, 1), 8)
    name = pods(cluster)[0]["metadata"]["name"]
    set_load(cluster, LONG_PROMPTS)
    time.sleep(0.5)  # 300 simulated seconds: ten load checks
    cs = status(cluster.store.get("pods", "llm", name))
    assert (cs["restartCount"], cs["ready"]) == (0, True)
    assert scrape(cluster, name)["vllm:num_requests_running"][1] == 4.0


def test_metrics_reflect_load_split_across_ready_replicas_and_preempt_when_kv_runs_out(cluster):
    cluster.store.create("deployments.apps", deployment(["--max-model-len", "16384"], replicas=2))
    assert cluster.wait_for(lambda: all_ready(cluster, 2), 8)
    assert cluster.wait_for(lambda: (cluster.store.get("deployments.apps", "llm", "llama-8b")["status"]
                                     .get("readyReplicas")) == 2, 5)
    name = pods(cluster)[0]["metadata"]["name"]
    idle = scrape(cluster, name)
    labels = {"model_name": LLAMA, "engine": "0"}
    assert idle == {"vllm:num_requests_running": (labels, 0.0), "vllm:num_requests_waiting": (labels, 0.0),
                    "vllm:gpu_cache_usage_perc": (labels, 0.0), "vllm:num_preemptions_total": (labels, 0.0)}
    set_load(cluster, "requests=20, prompt-tokens=3000, output-tokens=400")
    m = scrape(cluster, name)  # 10 requests per pod x (3000 + 400/2) tokens of a 190,704-token cache
    assert (m["vllm:num_requests_running"][1], m["vllm:num_requests_waiting"][1]) == (10.0, 0.0)
    assert m["vllm:gpu_cache_usage_perc"][1] == 10 * 3200 / 190704
    set_load(cluster, "requests=200, prompt-tokens=3000, output-tokens=400")
    first = scrape(cluster, name)  # 100 per pod, 59 fit in the cache
    assert (first["vllm:num_requests_running"][1], first["vllm:num_requests_waiting"][1]) == (59.0, 41.0)
    assert first["vllm:gpu_cache_usage_perc"][1] == 59 * 3200 / 190704
    time.sleep(0.1)
    second = scrape(cluster, name)
    assert second["vllm:num_preemptions_total"][1] > first["vllm:num_preemptions_total"][1] + 41 * 0.5 * 30


def test_cluster_set_load_is_used_when_no_annotation_gives_requests(cluster):
    cluster.store.create("deployments.apps", deployment(["--max-model-len", "16384"], image="vllm/vllm-openai:v0.11.0"))
    assert cluster.wait_for(lambda: all_ready(cluster, 1), 8)
    name = pods(cluster)[0]["metadata"]["name"]
    cluster.set_load("llm", "llama-8b", 7)
    m = scrape(cluster, name)
    assert m["vllm:num_requests_running"][1] == 7.0
    assert "vllm:kv_cache_usage_perc" in m and "vllm:gpu_cache_usage_perc" not in m


def test_health_refuses_until_the_server_is_up(cluster):
    cluster.store.create("deployments.apps", deployment(["--max-model-len", "16384"]))
    assert cluster.wait_for(lambda: pods(cluster) and "running" in str(status(pods(cluster)[0]).get("state")), 5)
    name = pods(cluster)[0]["metadata"]["name"]
    code, _, body = cluster.proxy("llm", name, 8000, "/health")
    assert code == 503 and b"connection refused" in body
    assert cluster.wait_for(lambda: all_ready(cluster, 1), 8)
    assert cluster.proxy("llm", name, 8000, "/health")[:2] == (200, "text/plain; charset=utf-8")
    code, _, body = cluster.proxy("llm", name, 8000, "/v1/models")
    assert code == 200 and b'"max_model_len": 16384' in body


@pytest.mark.parametrize(("version", "names", "labels"), [
    ("0.6.6", ["vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_hit_rate"], ["model_name"]),
    ("0.8.0", ["vllm:gpu_cache_usage_perc"], ["model_name"]),
    ("0.8.5", ["vllm:gpu_cache_usage_perc"], ["model_name", "engine"]),
    ("0.10.2", ["vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"], ["model_name", "engine"]),
    ("0.11.0", ["vllm:kv_cache_usage_perc"], ["model_name", "engine"]),
    ("0.21.0", ["vllm:kv_cache_usage_perc"], ["model_name", "engine"]),
])
def test_metric_names_follow_the_release(version, names, labels):
    v = tuple(int(p) for p in version.split("."))
    engine = "v1" if v >= (0, 8, 0) else "v0"
    text = metrics.exposition(v, engine, "m", loadmodel.LoadState(3, 1, 0.25, 0), 12.7, 0.5)
    found = re.findall(r"^(vllm:\w+)\{", text, re.M)
    assert found == ["vllm:num_requests_running", "vllm:num_requests_waiting", *names, "vllm:num_preemptions_total"]
    assert re.findall(r'(\w+)="', text.splitlines()[2]) == labels
    assert "vllm:num_preemptions_total{" in text and text.rstrip().endswith(" 12.0")


def launch_of(args: list[str], product: str = "NVIDIA-L40S") -> Launch:
    c = {"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "args": ["--model", LLAMA, *args],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": product, "count": 1}}, "t")
    result = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(result, Launch)
    return result


def test_enforce_eager_skips_graph_capture_and_its_memory():
    started = datetime(2026, 1, 1, 9, 0, 0)
    graphs = timeline.plan_start(launch_of(["--max-model-len", "16384"]), started)
    eager_launch = launch_of(["--max-model-len", "16384", "--enforce-eager"])
    eager = timeline.plan_start(eager_launch, started)
    assert any("Graph capturing finished in 12 secs, took 0.96 GiB" in line.text for line in graphs.lines)
    assert not any("Graph capturing" in line.text for line in eager.lines)
    assert graphs.ready_after - eager.ready_after == pytest.approx(timeline.GRAPH_SECONDS)
    assert eager_launch.estimate.peak_gib == pytest.approx(graphs_peak := 40.942 - 0.964) and graphs_peak < 40.942
    loaded = next(line for line in graphs.lines if "Model loading took" in line.text)
    assert loaded.offset == pytest.approx(timeline.load_seconds(15.057040548324583), abs=1e-3)
    assert "INFO 01-01 09:01:20 " in loaded.text and "and 72.228162 seconds" in loaded.text


def test_unknown_gpu_uses_the_labelled_memory_and_known_aliases_resolve():
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-Z100-96GB", "memoryMiB": 97887, "count": 1}}, "t")
    gpu = node_gpu(node)
    assert gpu is not None and (gpu.product, gpu.total_gib, gpu.memory_mib) == ("NVIDIA-Z100-96GB", 94.99, 97887)
    gke = {"metadata": {"labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}}}
    assert node_gpu(gke) == catalog.gpu("NVIDIA-L4")
    assert node_gpu({"metadata": {"labels": {"nvidia.com/gpu.product": "Mystery-GPU"}}}) is None


def test_parse_load_accepts_both_forms_and_names_the_key_on_bad_input():
    assert loadmodel.parse_load("12") == loadmodel.LoadSpec(requests=12.0)
    spec = loadmodel.parse_load("requests=4, prompt_tokens=12000; max-prompt-tokens=16000,prompt-logprobs=0.1")
    assert (spec.requests, spec.prompt_tokens, spec.longest_prompt, spec.prompt_logprobs) == (4.0, 12000, 16000, 0.1)
    with pytest.raises(UserError, match=r"^where: 'speed=3' is not key=value with a key among extra-gib, "):
        loadmodel.parse_load("speed=3", "where")
    with pytest.raises(UserError, match=r"^where: prompt-logprobs=2 must be a share between 0 and 1$"):
        loadmodel.parse_load("prompt-logprobs=2", "where")
    with pytest.raises(UserError, match=r"^where: requests='many' is not a number$"):
        loadmodel.parse_load("requests=many", "where")


BUDGET = loadmodel.EngineBudget(kv_cache_tokens=190704, max_num_seqs=256, max_num_batched_tokens=2048,
                                max_model_len=16384, vocab_size=128256, peak_gib=40.942, total_gib=44.42)


@given(share=st.floats(0, 2000), prompt=st.integers(1, 40000), output=st.integers(0, 4000))
def test_load_state_conserves_requests_and_never_overfills(share, prompt, output):
    s = loadmodel.state(BUDGET, loadmodel.LoadSpec(prompt_tokens=prompt, output_tokens=output), share)
    assert s.running + s.waiting == math.ceil(share - 1e-9)  # a fractional share is one more request
    assert 0 <= s.kv_usage <= 1 and s.running <= BUDGET.max_num_seqs
    per = min(16384, prompt + output // 2)
    assert s.running * per <= BUDGET.kv_cache_tokens
    assert (s.excess > 0) == (min(s.running + s.waiting, 256) * per > BUDGET.kv_cache_tokens)
