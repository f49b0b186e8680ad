"""The rehearsal pod's own scheduler-config check (``sim.vllm_pod.scheduler``): it reads --enable-chunked-prefill from
the pod's argv as each release's argparse stores it and applies the release's defaults itself, then refuses a batch
below the length with vLLM's own traceback; ``diagnose`` reads it back as ``config_refused``. V1 from 0.11.1 keeps
``--no-enable-chunked-prefill`` (config/scheduler.py@0.11.1 ``verify_max_model_len``); 0.10.2's V1 ignores it
(engine/arg_utils.py@0.10.2 ``_set_default_args_v1``); V0 leaves a sliding-window model unchunked above 32K
(engine/arg_utils.py@0.6.5). A grid checks that the pod and the memory model, read independently, agree."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.vllm_pod import scheduler
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.versions import parse_version

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"
PHI3_128K = "microsoft/Phi-3-mini-128k-instruct"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
L40S = catalog.gpu("NVIDIA-L40S")


def _spec(model: str, args: list[str], image: str) -> dict:
    return {"containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": [model, *args]}]}


@pytest.mark.parametrize(("args", "typed"), [
    ([], None),
    (["--enable-chunked-prefill"], True),
    (["--enable-chunked-prefill", "false"], False),
    (["--enable-chunked-prefill=False"], False),
    (["--enable-chunked-prefill=false", "--enable-chunked-prefill", "TRUE"], True),
])
def test_store_boolean_spellings_before_0_8_5(args, typed):
    assert scheduler.typed_chunked(find_server(_spec(QWEN7, args, "vllm/vllm-openai:v0.6.5")), (0, 6, 5)) is typed


@pytest.mark.parametrize(("args", "typed"), [
    (["--no-enable-chunked-prefill"], False),
    (["--enable-chunked-prefill", "--no-enable-chunked-prefill"], False),
    (["--no-enable-chunked-prefill", "--enable-chunked-prefill"], True),
    (["--enable-chunked-prefill", "false"], True),  # takes no value: "false" is a word of its own
])
def test_boolean_optional_spellings_from_0_8_5(args, typed):
    assert scheduler.typed_chunked(find_server(_spec(QWEN7, args, "vllm/vllm-openai:v0.19.0")), (0, 19, 0)) is typed


GRID_FLAGS = [
    ["--max-model-len", "16384", "--max-num-batched-tokens", "4096"],
    ["--max-model-len", "16384", "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"],
    ["--max-model-len", "16384", "--max-num-batched-tokens", "16384", "--no-enable-chunked-prefill"],
    ["--max-model-len", "16384", "--no-enable-chunked-prefill"],
    ["--max-model-len", "65536", "--max-num-batched-tokens", "4096"],
    ["--max-model-len", "65536", "--max-num-batched-tokens", "4096", "--disable-sliding-window"],
    ["--max-model-len", "65536", "--max-num-batched-tokens", "4096", "--enable-prefix-caching"],
]


@pytest.mark.parametrize("model", [QWEN7, PHI3_128K, LLAMA])
@pytest.mark.parametrize("tag", ["v0.6.0", "v0.6.1", "v0.6.5", "v0.10.2", "v0.11.1", "v0.19.0", "v0.34.0"])
@pytest.mark.parametrize("args", GRID_FLAGS, ids=lambda a: " ".join(a))
def test_the_pod_and_the_memory_model_agree(model, tag, args):
    version = tag.removeprefix("v")
    if "--no-enable-chunked-prefill" in args and parse_version(version) < (0, 8, 5):
        args = [a if a != "--no-enable-chunked-prefill" else "--enable-chunked-prefill=false" for a in args]
    cmd = find_server(_spec(model, args, f"vllm/vllm-openai:{tag}"))
    spec = catalog.model(model)
    if int(cmd.flags["max-model-len"]) > spec.max_model_len:
        pytest.skip("the model config refuses the length first")
    settings = EngineSettings.from_flags(cmd.flags, version)
    res = resolve(spec, L40S, settings)
    tools = estimate(spec, L40S, settings).outcome is Outcome.CONFIG_REFUSED
    pod = scheduler.refusal(cmd, cmd.flags, spec, res.rules.engine, parse_version(version))
    assert (pod is not None) is tools, (pod, res.chunked_prefill, res.mnbt)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(4) as c:
        yield c


def _pod(name: str, model: str, args: list[str], tag: str) -> dict:
    spec = _spec(model, args, f"vllm/vllm-openai:{tag}")
    spec["containers"][0].update(ports=[{"containerPort": 8000}], resources={"limits": {"nvidia.com/gpu": "1"}})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, **spec}}


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


@pytest.mark.parametrize(("name", "model", "args", "tag", "frame", "error"), [
    pytest.param("v1", QWEN7, ["--max-model-len", "16384", "--max-num-batched-tokens", "4096",
                               "--no-enable-chunked-prefill"], "v0.19.0",
                 'arg_utils.py", line 1649, in create_engine_config', "1 validation error for SchedulerConfig",
                 id="v1-0.19.0-no-chunked-prefill"),
    pytest.param("phi", PHI3_128K, ["--max-model-len", "65536", "--max-num-batched-tokens", "4096"], "v0.6.5",
                 'config.py", line 1374, in _verify_args', "ValueError: max_num_batched_tokens (4096)",
                 id="v0-0.6.5-sliding-window-above-32k"),
])
def test_the_refusal_renders_and_diagnoses(cluster, cli, tmp_path, name, model, args, tag, frame, error):
    cluster.store.create("pods", _pod(name, model, args, tag))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, name).get("state")), 8)
    text = cluster.read_log("llm", name, previous=True)
    assert frame in text and error in text, text
    log = tmp_path / f"{name}.log"
    log.write_text(text)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["failure"] == "config_refused", data["failure"]
    assert data["failure_detail"]["max_num_batched_tokens"] == 4096, data["failure_detail"]


def test_v1_before_0_11_1_ignores_the_flag_and_starts(cluster):
    args = ["--max-model-len", "16384", "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"]
    cluster.store.create("pods", _pod("old", QWEN7, args, "v0.10.2"))
    assert cluster.wait_for(lambda: _status(cluster, "old").get("ready") is True, 8), _status(cluster, "old")
