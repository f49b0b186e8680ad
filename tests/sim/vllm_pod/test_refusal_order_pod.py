"""A rehearsal pod failing two config-time checks prints the words vLLM prints first (``sim.vllm_pod.config_order``,
the pod's own reading, apart from the tools'): the model config (length, then ``--quantization`` against the
checkpoint), VLLM_USE_V1 (0.8-0.10's oracle), the scheduler's batch, the heads against TP, the quantization for the
card, 0.11.0's assert on VLLM_USE_V1=0, then the executor and the weights; the world size against the GPUs is
ParallelConfig's from 0.12.0 (after the model config, before the batch), the executor's before. Before, the pod put
the env and the quantization before the length, the TP size before the batch and the quantization before both, and
the world size before all (cases A-D, G-I, J2, L, M, O-R moved); two pods crash-loop with the first refusal in their
log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node, ship_model
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.vllm.cmdline import find_server

QWEN7, AWQ = "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct-AWQ"  # 28 heads, 4 KV heads, 32768 positions
CONFIG = Path(__file__).resolve().parents[2] / "data" / "configs" / "Qwen2.5-7B-Instruct-AWQ.json"
L40S, V100 = "NVIDIA-L40S", "Tesla-V100-SXM2-32GB"
BATCH = ["--max-model-len", "16384", "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"]
SHORT, LONG = ["--max-model-len", "8192", "--dtype", "half"], ["--max-model-len", "65536", "--dtype", "half"]
GPTQ = ["--quantization", "gptq"]

BATCH_WORDS = "ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (16384)."
HEADS_WORDS = "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (3)."
MISMATCH_WORDS = ("ValueError: Quantization method specified in the model config (awq) does not match the "
                  "quantization method specified in the `quantization` argument (gptq).")
CAPABILITY_WORDS = "ValueError: The quantization method awq is not supported for the current GPU. Minimum capability"
ORACLE_WORDS = "NotImplementedError: VLLM_USE_V1=1 is not supported with Compute Capability < 8.0."
LENGTH_WORDS = "User-specified max_model_len (65536) is greater than the derived max_model_len"

# (model, card, tag, args, env, GPUs, the words of vLLM's first refusal)
PAIRS = {
    "A heads+batch": (QWEN7, L40S, "v0.8.5", [*BATCH, "-tp", "3"], {"VLLM_USE_V1": "0"}, 3, BATCH_WORDS),
    "B kv split+batch": (QWEN7, L40S, "v0.8.5", [*BATCH, "-tp", "7"], {"VLLM_USE_V1": "0"}, 7, BATCH_WORDS),
    "C capability+batch": (AWQ, V100, "v0.8.5", [*BATCH, "--dtype", "half"], {}, 1, BATCH_WORDS),
    "D mismatch+oracle": (AWQ, V100, "v0.8.5", [*SHORT, *GPTQ], {"VLLM_USE_V1": "1"}, 1, MISMATCH_WORDS),
    "E mismatch+heads": (AWQ, L40S, "v0.11.0", [*SHORT, *GPTQ, "-tp", "3"], {}, 3, MISMATCH_WORDS),
    "F capability+kv split": (AWQ, V100, "v0.11.0", [*SHORT, "-tp", "7"], {}, 7, CAPABILITY_WORDS),
    "G heads+capability": (AWQ, V100, "v0.11.0", [*SHORT, "-tp", "3"], {}, 3, HEADS_WORDS),
    "H heads+0.11.0's assert": (QWEN7, L40S, "v0.11.0", [*SHORT, "-tp", "3"], {"VLLM_USE_V1": "0"}, 3, HEADS_WORDS),
    "I capability+0.11.0's assert": (AWQ, V100, "v0.11.0", SHORT, {"VLLM_USE_V1": "0"}, 1, CAPABILITY_WORDS),
    "J int() text+length: 0.11.0's ModelConfig reads it first": (QWEN7, L40S, "v0.11.0", LONG, {"VLLM_USE_V1": "true"},
                                                                 1, "ValueError: invalid literal for int() with base "
                                                                    "10: 'true'"),
    "J2 length+int() text: 0.8.5 reads it after the model config": (QWEN7, L40S, "v0.8.5", LONG,
                                                                    {"VLLM_USE_V1": "true"}, 1, LENGTH_WORDS),
    "K oracle+heads": (QWEN7, V100, "v0.8.5", [*SHORT, "-tp", "3"], {"VLLM_USE_V1": "1"}, 3, ORACLE_WORDS),
    "L length+mismatch": (AWQ, L40S, "v0.11.0", [*LONG, *GPTQ], {}, 1, LENGTH_WORDS),
    "M length+heads": (QWEN7, L40S, "v0.11.0", [*LONG, "-tp", "3"], {}, 3, LENGTH_WORDS),
    "N oracle+batch": (QWEN7, V100, "v0.8.5", [*BATCH, "--dtype", "half"], {"VLLM_USE_V1": "1"}, 1, ORACLE_WORDS),
    "O length+oracle": (QWEN7, V100, "v0.8.5", LONG, {"VLLM_USE_V1": "1"}, 1, LENGTH_WORDS),
    "P length+capability": (AWQ, V100, "v0.11.0", LONG, {}, 1, LENGTH_WORDS),
    "Q world size+capability: 0.20.0's ParallelConfig first": (AWQ, V100, "v0.20.0", [*SHORT, "-tp", "2"], {}, 1,
                                                               "Value error, World size (2) is larger than the number "
                                                               "of available GPUs (1) in this node."),
    "R heads+world size: 0.11.0's executor after the config": (QWEN7, L40S, "v0.11.0", [*SHORT, "-tp", "3"], {}, 1,
                                                               HEADS_WORDS),
}


@pytest.fixture(autouse=True)
def _awq_on_the_hub() -> None:
    # the catalog answers only for its exact repositories: the world's Hub serves the AWQ checkpoint's config
    ship_model({"id": AWQ, "config": json.loads(CONFIG.read_text())}, "test world")


def container(model: str, tag: str, args: list[str], env: dict[str, str], gpus: int) -> dict:
    return {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"], "args": [model, *args],
            "env": [{"name": k, "value": v} for k, v in env.items()], "ports": [{"containerPort": 8000}],
            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}


def last_words(model: str, product: str, tag: str, args: list[str], env: dict[str, str], gpus: int) -> str:
    """The exception the pod's vLLM ends with: a refusal's, or the length's as the start's log prints it."""
    c = container(model, tag, args, env, gpus)
    got = plan(find_server({"containers": [c]}), c, {"metadata": {"labels": {"nvidia.com/gpu.product": product}}})
    if isinstance(got, Launch):
        start = timeline.plan_start(got, datetime(2026, 1, 1))
        assert start.exit is not None, got.estimate.outcome
        return "\n".join(start.exit.log[-3:])  # pydantic's error ends with its help line
    return got.error


@pytest.mark.parametrize(("model", "product", "tag", "args", "env", "gpus", "words"), PAIRS.values(), ids=PAIRS)
def test_the_pod_ends_with_the_refusal_vllm_runs_first(model, product, tag, args, env, gpus, words):
    assert words in last_words(model, product, tag, args, env, gpus)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    v100 = make_node({"name": "v100-1", "gpu": {"product": V100, "count": 4}}, "t")
    with l40s_pod_cluster(4, ("nodes", v100)) as c:
        yield c


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


@pytest.mark.parametrize("case", ["A heads+batch", "G heads+capability"])
def test_the_crash_looping_pods_log_holds_the_first_refusal(cluster, case):
    model, product, tag, args, env, gpus, words = PAIRS[case]
    name = case.split()[0].lower()
    cluster.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
                                  "spec": {"nodeSelector": {"nvidia.com/gpu.product": product},
                                           "containers": [container(model, tag, args, env, gpus)]}})
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, name).get("state")), 8), \
        _status(cluster, name)
    text = cluster.read_log("llm", name, previous=True)
    assert words in text and "KV cache" not in text, text[-1500:]
