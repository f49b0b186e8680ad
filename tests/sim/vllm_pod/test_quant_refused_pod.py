"""A rehearsal pod refuses the quantization vLLM's config refuses (``vllm.quant_support``), from its own argv and
model, and ``diagnose`` reads its log back as ``config_refused`` naming the quantization: an AWQ checkpoint on a V100
(AWQ's minimum capability 7.5) and ``--quantization gptq`` on an AWQ checkpoint. Before, both served."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node, ship_model

AWQ = "Qwen/Qwen2.5-7B-Instruct-AWQ"
CONFIG = Path(__file__).resolve().parents[2] / "data" / "configs" / "Qwen2.5-7B-Instruct-AWQ.json"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    v100 = make_node({"name": "v100-1", "gpu": {"product": "Tesla-V100-SXM2-32GB", "count": 2}}, "t")
    # the catalog answers only for its exact repositories: the world's Hub serves the AWQ checkpoint's config
    ship_model({"id": AWQ, "config": json.loads(CONFIG.read_text())}, "test world")
    with l40s_pod_cluster(2, ("nodes", v100)) as c:
        yield c


def pod(name: str, product: str, args: list[str]) -> dict:
    spec = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
            "args": [AWQ, "--max-model-len", "8192", *args], "ports": [{"containerPort": 8000}],
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": product}, "containers": [spec]}}


def _log(c: Cluster, name: str) -> str:
    try:
        return c.read_log("llm", name)
    except Exception:  # no container yet
        return ""


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


@pytest.mark.parametrize(("name", "product", "args", "error"), [
    ("v100", "Tesla-V100-SXM2-32GB", ["--dtype", "half"],
     "ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75. "
     "Current capability: 70."),
    ("mismatch", "NVIDIA-L40S", ["--quantization", "gptq"],
     "ValueError: Quantization method specified in the model config (awq) does not match the quantization method "
     "specified in the `quantization` argument (gptq)."),
])
def test_the_pod_refuses_and_diagnose_reads_it(cluster, cli, tmp_path, name, product, args, error):
    cluster.store.create("pods", pod(name, product, args))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, name).get("state")), 8), \
        _status(cluster, name)
    text = cluster.read_log("llm", name, previous=True)
    assert error in text and "KV cache" not in text, text[-1500:]
    log = tmp_path / f"{name}.log"
    log.write_text(text)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["setting"]) == ("config_refused", "quantization"), data


def test_a_supported_card_serves(cluster):
    cluster.store.create("pods", pod("ok", "NVIDIA-L40S", []))
    assert cluster.wait_for(lambda: _status(cluster, "ok").get("ready") is True, 8), _status(cluster, "ok")


def test_a_pod_with_a_config_file_still_starts(cluster):
    """The pod reads no --config file (as before): the tools' "cannot predict" is theirs, not a refusal of vLLM's."""
    body = pod("cfg", "NVIDIA-L40S", ["--config", "/etc/vllm/config.yaml"])
    cluster.store.create("pods", body)
    assert cluster.wait_for(lambda: _status(cluster, "cfg").get("ready") is True, 8), _status(cluster, "cfg")


def test_a_quantization_config_without_its_method_is_not_played_and_says_why(cluster):
    """From 0.11.0 vLLM reads an empty quant_method as none and loads packed tensors unquantized, which the tools
    cannot predict (``quant_support``). The pod once stayed in ContainerCreating (the kubelet's launch raised), then
    crash-looped on that "cannot predict" sentence printed as vLLM's ValueError; now the container runs (never passing
    a readiness probe) and says in the rehearsal's own record why it does not play the start (``unmodelled_start``)."""
    config = json.loads(CONFIG.read_text())
    config["quantization_config"] = {k: v for k, v in config["quantization_config"].items() if k != "quant_method"}
    ship_model({"id": "test/no-quant-method", "config": config}, "test world")
    body = pod("noqm", "NVIDIA-L40S", [])
    body["spec"]["containers"][0]["args"][0] = "test/no-quant-method"
    cluster.store.create("pods", body)
    assert cluster.wait_for(lambda: "[vllm-remedy rehearsal]" in _log(cluster, "noqm"), 8), _status(cluster, "noqm")
    text = cluster.read_log("llm", "noqm")
    assert "quant_method" in text and "KV cache" not in text and "ValueError" not in text, text[-1500:]
    assert cluster.wait_for(lambda: "running" in _status(cluster, "noqm").get("state", {}), 8), _status(cluster, "noqm")
    cluster.clock.sleep(60)  # simulated: a crash would have restarted it by now
    status = _status(cluster, "noqm")
    assert "running" in status["state"] and not status.get("restartCount"), status  # no probe here: Ready as it runs
