"""The rehearsal pod judges a ModelOpt checkpoint as ``estimate`` does: below the class's minimum capability it stops
in vLLM's words ("modelopt" 89 through 0.26.0: config/vllm.py@0.25.0 ``_get_quantization_config``, ``modelopt_class``),
and a ModelOpt KV scheme kept only in ``text_config`` leaves ``--kv-cache-dtype auto`` as it is (vLLM reads the
scheme from the top-level config: utils/torch_utils.py@0.30.0 l.516-520). On main the A100 pod started and the
Gemma 3 pod printed an fp8_e4m3 cache."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
FP8 = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
         "num_key_value_heads": 8, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
         "rope_theta": 500000.0, "tie_word_embeddings": False, "quantization_config": FP8}
GEMMA3 = json.loads((CONFIGS / "gemma-3-27b-it.json").read_text())
GEMMA3["text_config"] = {**GEMMA3["text_config"], "quantization_config": FP8}
MODELS = {"acme/llama-modelopt-fp8": LLAMA, "acme/gemma3-modelopt-text": GEMMA3}
PODS = (("a100", "NVIDIA-A100-SXM4-80GB", "v0.25.0", "acme/llama-modelopt-fp8"),
        ("l40s", "NVIDIA-L40S", "v0.30.0", "acme/gemma3-modelopt-text"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
    install(c)
    for name, product, _, _ in PODS:
        c.store.create("nodes", make_node({"name": f"{name}-1", "gpu": {"product": product, "count": 1}}, "t"))
    c.apply_seed({"models": [{"id": k, "config": copy.deepcopy(v)} for k, v in MODELS.items()]})
    c.start()
    for name, product, tag, model in PODS:
        c.store.create("pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": product},
                     "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
                                     "args": [model, "--max-model-len", "8192"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    yield c
    c.stop()


def _log(c: Cluster, name: str, marker: str) -> str:
    def ready() -> bool:
        try:
            return marker in c.read_log("llm", name)
        except Exception:  # no container yet
            return False
    c.wait_for(ready, 15)
    return c.read_log("llm", name)


def test_an_a100_pod_stops_below_modelopts_capability(cluster):
    text = _log(cluster, "a100", "Minimum capability")
    assert ("The quantization method modelopt is not supported for the current GPU. Minimum capability: 89. "
            "Current capability: 80.") in text, text[-2000:]
    assert "GPU KV cache size" not in text


def test_a_text_config_kv_scheme_leaves_the_cache_as_typed(cluster):
    text = _log(cluster, "l40s", "GPU KV cache size")
    assert "with config:" in text, text[-2000:]
    assert "fp8_e4m3" not in text.split("with config:")[1], text
