"""The rehearsal pod dies where vLLM does on a RoPE config it cannot use (``vllm.rope_dispatch``, ``hf_overrides``),
and `estimate` says so for the same start: an unknown ``rope_type`` raises in ``get_rope`` while the model is built
(rotary_embedding.py@0.10.0 l.1965: "Unknown RoPE scaling type foo"); a 0.11.0 ``--hf-overrides`` rope_scaling without
a type fails in ``get_config`` ("rope_scaling should have a 'rope_type' key", transformers_utils/config.py@0.11.0).
Before, the pod printed the tools' own "cannot predict" words for the first and served the second."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client

from conftest import run_cli
from fixtures.served_pods import run, served
from vllm_remedy.sim.seed import ship_model

MODEL = "test/llama-rope-foo"
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
          "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 8192, "vocab_size": 32000,
          "max_position_embeddings": 8192, "torch_dtype": "bfloat16", "rope_scaling": {"rope_type": "foo",
                                                                                       "factor": 2.0}}
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    ship_model({"id": MODEL, "config": CONFIG}, "test world")
    yield from served(tmp_path_factory.mktemp("kube"))


def test_an_unknown_rope_type_dies_building_the_model(api, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--max-model-len", "4096",
                  "--vllm-version", "0.10.0")
    assert got.returncode == 2 and "raises 'Unknown RoPE scaling type foo'" in got.stderr, got.stderr
    log, code = run(api, "rope-foo", "vllm/vllm-openai:v0.10.0", ["vllm", "serve"], [MODEL, "--max-model-len", "4096"])
    assert code == 1 and "ValueError: Unknown RoPE scaling type foo" in log and "cannot predict" not in log, log[-1500:]


def test_a_0_11_rope_override_without_a_type_dies_loading_the_config(api):
    override = json.dumps({"rope_scaling": {"factor": 2.0}})
    got = run_cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--max-model-len", "16384",
                  "--vllm-version", "0.11.0", "--hf-overrides", override, "-o", "json")
    assert json.loads(got.stdout)["outcome"] == "config_refused", got.stdout + got.stderr
    log, code = run(api, "rope-untyped", "vllm/vllm-openai:v0.11.0", ["vllm", "serve"],
                    [LLAMA, "--max-model-len", "16384", "--hf-overrides", override])
    assert code == 1 and "rope_scaling should have a 'rope_type' key" in log, log[-1500:]
