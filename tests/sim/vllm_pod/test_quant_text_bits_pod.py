"""A rehearsal pod given a checkpoint whose ``quantization_config.bits`` is the JSON string "4" ends as vLLM does:
the config class divides by it (``32 // weight_bits``, auto_gptq.py@0.22.0, auto_awq.py@0.24.0) and raises a
TypeError (``vllm.quant_support._text_bits``, read by the pod from its own argv and model). Before, the pod printed
the tools' "cannot predict" phrase as if vLLM had raised it. An act-order GPTQ checkpoint on 0.30.0 is refused by the
same class's first check (it served before)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import ship_model

CONFIG = Path(__file__).resolve().parents[2] / "data" / "configs" / "Qwen2.5-7B-Instruct-AWQ.json"
FLOOR_DIV = "TypeError: unsupported operand type(s) for //: 'int' and 'str'"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    config = json.loads(CONFIG.read_text())
    ship_model({"id": "test/awq-text-bits",
                "config": {**config, "quantization_config": {**config["quantization_config"], "bits": "4"}}},
               "test world")
    ship_model({"id": "test/gptq-text-bits",
                "config": {**config, "quantization_config": {"quant_method": "gptq", "bits": "4", "group_size": 128,
                                                             "desc_act": False, "sym": True}}}, "test world")
    ship_model({"id": "test/gptq-act-order",
                "config": {**config, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                                             "desc_act": True, "sym": True}}}, "test world")
    with l40s_pod_cluster(4) as c:  # one card for each crash-looping pod
        yield c


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


@pytest.mark.parametrize(("name", "model", "image", "error"), [
    ("awq24", "test/awq-text-bits", "v0.24.0", FLOOR_DIV),
    ("gptq22", "test/gptq-text-bits", "v0.22.0", FLOOR_DIV),
    ("awq11", "test/awq-text-bits", "v0.11.0",  # awq.py: "4" != 4, the plain class's own refusal
     "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got 4 bits."),
    ("actorder30", "test/gptq-act-order", "v0.30.0",  # utils/gptq_utils.py@0.30.0 normalize_and_validate_gptq_desc_act
     "ValueError: GPTQ group activation ordering (desc_act=True) is no longer supported. Use a checkpoint with static "
     "activation ordering or desc_act=False."),
])
def test_the_pod_ends_as_vllm_does(cluster, name, model, image, error):
    spec = {"name": "vllm", "image": f"vllm/vllm-openai:{image}", "command": ["vllm", "serve"],
            "args": [model, "--max-model-len", "8192"], "ports": [{"containerPort": 8000}],
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    cluster.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
                                  "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                           "containers": [spec]}})
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, name).get("state")), 8), \
        _status(cluster, name)
    text = cluster.read_log("llm", name, previous=True)
    assert error in text and "cannot predict" not in text and "KV cache" not in text, text[-1500:]
