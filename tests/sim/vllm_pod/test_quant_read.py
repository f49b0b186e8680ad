"""The rehearsal pod reads a checkpoint's quantization as ``estimate`` does: an MLP its ``modules_to_not_convert``
leaves in bf16 (``quant_exclusions``), a scheme under ``compression_config`` (``quant_source``), and a ModelOpt FP8 KV
scheme that turns ``--kv-cache-dtype auto`` into fp8_e4m3 from 0.14.0 (``kv_auto``), which its engine config line
prints as vLLM's does (``cache_config.cache_dtype``, config/vllm.py@0.30.0 l.2628)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.startup_log import parse_startup_log

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
         "num_key_value_heads": 8, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
         "rope_theta": 500000.0, "tie_word_embeddings": False}
W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
         "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                       "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                   "strategy": "group", "group_size": 128}}}}
MODELS = {
    "acme/llama-awq-mlp16": {**LLAMA, "quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm",
        "modules_to_not_convert": ["mlp"]}},
    "acme/llama-w4a16-compression": {**LLAMA, "compression_config": W4A16},
    "acme/llama-fp8-kv": {**LLAMA, "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8",
                                                           "kv_cache_quant_algo": "FP8"}},
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)  # logs carry estimate()'s numbers
    install(c)
    c.store.create("nodes", make_node({"name": "l40s-1", "gpu": {"product": "NVIDIA-L40S", "count": 4}}, "t"))
    c.apply_seed({"models": [{"id": k, "config": copy.deepcopy(v)} for k, v in MODELS.items()]})
    c.start()
    for i, model in enumerate(MODELS):
        c.store.create("pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"q{i}", "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.30.0", "command": ["vllm", "serve"],
                                     "args": [model, "--max-model-len", "16384"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    yield c
    c.stop()


def _log(c: Cluster, name: str) -> str:
    def ready() -> bool:
        try:
            return "GPU KV cache size" in c.read_log("llm", name)
        except Exception:  # no container yet
            return False
    assert c.wait_for(ready, 10)
    return c.read_log("llm", name)


@pytest.mark.parametrize("index", range(len(MODELS)))
def test_the_pod_sizes_the_checkpoint_as_estimate_does(cluster, index):
    model = list(MODELS)[index]
    report = parse_startup_log(_log(cluster, f"q{index}"))
    spec = catalog.ModelSpec.from_hf_config(MODELS[model], model)
    est = estimate(spec, catalog.gpu("NVIDIA-L40S"), EngineSettings.from_flags({"max-model-len": "16384"}, "0.30.0"))
    assert report.kv_cache_tokens == est.kv_cache_tokens


def test_an_unquantized_mlp_and_a_compression_config_are_weighed_as_vllm_loads_them(cluster):
    awq = parse_startup_log(_log(cluster, "q0"))
    compressed = parse_startup_log(_log(cluster, "q1"))
    assert awq.weights_gib is not None and 13.0 < awq.weights_gib < 13.4, awq.weights_gib  # MLP in bf16
    assert compressed.weights_gib is not None and compressed.weights_gib < 6.0, compressed.weights_gib  # not 15 GiB


def test_the_engine_line_prints_the_fp8_cache_auto_resolved_to(cluster):
    text = _log(cluster, "q2")
    assert "kv_cache_dtype=fp8_e4m3" in text and "kv_cache_dtype='auto'" not in text.split("with config:")[1], text
