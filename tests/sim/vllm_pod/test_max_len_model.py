"""Rehearsal pods with a --max-model-len above the model's maximum crash as vLLM does, at config time, unless their
env sets VLLM_ALLOW_LONG_MAX_MODEL_LEN; and the arguments / config lines print the flags vLLM prints."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.sim.vllm_pod.runtime import own_gib
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"  # max_position_embeddings 32768
NODE = {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}
ALLOW = [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"}]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(1) as c:
        yield c


def container(args: list[str], image: str = "vllm/vllm-openai:v0.11.0", env: list | None = None) -> dict:
    return {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": args, "env": env or [],
            "ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def pod(name: str, args: list[str], env: list | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [container(args, env=env)]}}


def status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def launch(args: list[str], image: str = "vllm/vllm-openai:v0.11.0", env: list | None = None) -> Launch:
    c = container(args, image, env)
    got = plan(find_server({"containers": [c]}), c, NODE)
    assert isinstance(got, Launch)
    return got


def test_a_pod_asking_more_than_the_model_crash_loops_with_vllms_config_error(cluster):
    cluster.store.create("pods", pod("long", [QWEN7, "--max-model-len", "65536"]))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status(cluster, "long").get("state")), 8), \
        status(cluster, "long")
    text = cluster.read_log("llm", "long", previous=True)
    report = parse_startup_log(text)
    assert classify(report) is Failure.MAX_LEN_EXCEEDS_MODEL
    assert report.failure_detail["derived_max_model_len"] == 32768 and report.failure_detail["max_model_len"] == 65536
    assert "Starting to load model" not in text and "Value error, User-specified max_model_len (65536)" in text


def test_the_env_var_lets_the_same_pod_serve_with_vllms_warning(cluster):
    cluster.store.create("pods", pod("allowed", [QWEN7, "--max-model-len", "65536"], env=ALLOW))
    assert cluster.wait_for(lambda: status(cluster, "allowed").get("ready") is True, 8), status(cluster, "allowed")
    text = cluster.read_log("llm", "allowed")
    report = parse_startup_log(text)
    assert classify(report) is Failure.NONE and report.max_model_len == 65536
    assert any("WARNING" in line and "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution" in line
               for line in text.splitlines())


def test_the_refusal_ends_the_container_at_config_time_before_any_gpu_memory():
    got = launch([QWEN7, "--max-model-len", "65536"], "vllm/vllm-openai:v0.8.5")
    start = timeline.plan_start(got, datetime(2026, 1, 1))
    assert start.exit is not None and (start.exit.after, start.exit.code) == (timeline.CONFIG_SECONDS, 1)
    assert start.exit.log[-1].endswith("set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    assert "ValueError: User-specified max_model_len (65536) is greater than the derived max_model_len " \
           "(max_position_embeddings=32768 or model_max_length=None" in start.exit.log[-1]
    assert own_gib(got) == 0.0


# --- the arguments and config lines (task: flags the renderer left out) --------------------------------------------

# batched tokens at least max-model-len: V0 (0.7.3; 0.8.5 with an fp8 KV cache off Hopper, the V1 oracle's fallback)
# refuses fewer without chunked prefill (SchedulerConfig._verify_args, config.py@0.7.3)
FLAGS = [QWEN7, "--max-model-len", "8192", "--dtype", "half", "--kv-cache-dtype", "fp8",
         "--max-num-batched-tokens", "16384", "--revision", "a09a35458c702b33eeacc393d103063234e8bc28"]


def _lines(image: str, args: list[str]) -> tuple[str, str]:
    got = launch(args, image)
    text = timeline.render(got, Failure.NONE, datetime(2026, 1, 1))
    args_line = next(line for line in text.splitlines() if "non-default args" in line or "args: Namespace" in line)
    config = next(line for line in text.splitlines() if "with config:" in line)
    return args_line, config


def test_non_default_args_list_dtype_kv_cache_dtype_and_batched_tokens_in_the_parsers_order():
    args_line, _ = _lines("vllm/vllm-openai:v0.11.0", FLAGS)
    assert args_line.endswith(
        f"non-default args: {{'model_tag': '{QWEN7}', 'model': '{QWEN7}', 'dtype': 'half', "
        "'revision': 'a09a35458c702b33eeacc393d103063234e8bc28', 'max_model_len': 8192, 'kv_cache_dtype': 'fp8', "
        "'max_num_batched_tokens': 16384}")


def test_the_older_namespace_carries_them_too():
    args_line, _ = _lines("vllm/vllm-openai:v0.8.5", FLAGS)
    for part in ("revision='a09a35458c702b33eeacc393d103063234e8bc28', dtype='half', max_model_len=8192",
                 "kv_cache_dtype='fp8'", "max_num_batched_tokens=16384"):
        assert part in args_line, args_line


def test_unset_flags_stay_out_of_the_arguments_line():
    args_line, config = _lines("vllm/vllm-openai:v0.11.0", [QWEN7, "--max-model-len", "8192"])
    assert "dtype" not in args_line and "max_num_batched_tokens" not in args_line and "revision" not in args_line
    assert "revision=None," in config and "dtype=torch.bfloat16," in config and "kv_cache_dtype=auto," in config


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.7.3", "vllm/vllm-openai:v0.11.0"])
def test_the_config_line_prints_the_revision_and_the_dtypes_the_flags_set(image):
    _, config = _lines(image, FLAGS)
    assert "revision=a09a35458c702b33eeacc393d103063234e8bc28," in config  # vLLM prints it unquoted
    assert "dtype=torch.float16," in config and "kv_cache_dtype=fp8," in config
