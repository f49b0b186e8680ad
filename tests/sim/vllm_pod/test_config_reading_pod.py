"""The rehearsal pod reads a shipped config.json the way the tools do (hostile review 12: #1, #7, #12): a stray
``text_config`` on a Llama is vLLM's refusal, a float32 checkpoint on a T4 runs in float16 through 0.9.0, and
MiniCPM3's cache is K/V per head (its 32k context does not fit an L4)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

LLAMA_1B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
            "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
            "vocab_size": 128256, "max_position_embeddings": 8192, "tie_word_embeddings": True}
STRAY = {**LLAMA_1B, "torch_dtype": "bfloat16",
         "text_config": {"hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000,
                         "intermediate_size": 2048}}
F32 = {**LLAMA_1B, "torch_dtype": "float32"}
MINICPM3 = {"architectures": ["MiniCPM3ForCausalLM"], "model_type": "minicpm3", "hidden_size": 2560,
            "num_attention_heads": 40, "num_key_value_heads": 40, "num_hidden_layers": 62, "intermediate_size": 6400,
            "vocab_size": 73448, "max_position_embeddings": 32768, "q_lora_rank": 768, "kv_lora_rank": 256,
            "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64, "torch_dtype": "bfloat16"}
MODELS = {"acme/llama-stray-text": STRAY, "acme/llama-f32": F32, "acme/minicpm3": MINICPM3}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)
    install(c)
    c.store.create("nodes", make_node({"name": "t4-1", "gpu": {"product": "Tesla-T4", "count": 1}}, "t"))
    c.store.create("nodes", make_node({"name": "l4-1", "gpu": {"product": "NVIDIA-L4", "count": 1}}, "t"))
    c.apply_seed({"models": [{"id": k, "config": v} for k, v in MODELS.items()]})
    c.start()
    yield c
    c.stop()


def pod(name: str, model: str, gpu: str, image: str, *args: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": gpu},
                     "containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"],
                                     "args": [model, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def logged(c: Cluster, name: str, text: str) -> bool:
    try:
        return text in c.read_log("llm", name)
    except Exception:  # no container yet
        return False


def test_a_stray_text_config_crash_loops_with_vllms_value_error(cluster):
    cluster.store.create("pods", pod("stray", "acme/llama-stray-text", "NVIDIA-L4", "vllm/vllm-openai:v0.30.0"))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status(cluster, "stray").get("state")), 8), \
        status(cluster, "stray")
    text = cluster.read_log("llm", "stray", previous=True)
    assert "ValueError: The text_config extracted from the model config does not have `num_attention_heads`" in text


def test_a_float32_checkpoint_on_a_t4_serves_in_float16_on_0_8_5(cluster):
    cluster.store.create("pods", pod("f32", "acme/llama-f32", "Tesla-T4", "vllm/vllm-openai:v0.8.5",
                                     "--max-model-len", "2048"))
    assert cluster.wait_for(lambda: logged(cluster, "f32", "Application startup complete"), 8), status(cluster, "f32")
    text = cluster.read_log("llm", "f32")
    assert classify(parse_startup_log(text)) is Failure.NONE
    assert "dtype=torch.float16" in text


def test_minicpm3_at_32k_does_not_fit_an_l4(cluster):
    cluster.store.create("pods", pod("cpm", "acme/minicpm3", "NVIDIA-L4", "vllm/vllm-openai:v0.30.0"))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status(cluster, "cpm").get("state")), 8), \
        status(cluster, "cpm")
    report = parse_startup_log(cluster.read_log("llm", "cpm", previous=True))
    assert classify(report) is Failure.MAX_LEN_EXCEEDS_KV


def test_a_bfloat16_gemma2_on_a_t4_falls_back_to_float32_from_0_9_1(cluster):
    # _resolve_auto_dtype keeps only the card's dtypes _is_valid_dtype allows: gemma2 refuses float16, the T4 lacks
    # bfloat16, so float32 is preferred and warned about (config/model.py@0.34.0)
    cluster.store.create("pods", pod("g2", "google/gemma-2-2b-it", "Tesla-T4", "vllm/vllm-openai:v0.34.0",
                                     "--max-model-len", "2048"))
    assert cluster.wait_for(lambda: logged(cluster, "g2", "dtype=torch."), 8), status(cluster, "g2")
    text = cluster.read_log("llm", "g2")
    assert "Falling back to torch.float32 for compatibility." in text and "dtype=torch.float32" in text


def test_half_on_gemma2_crash_loops_with_check_valid_dtypes_error(cluster):
    cluster.store.create("pods", pod("g2h", "google/gemma-2-2b-it", "NVIDIA-L4", "vllm/vllm-openai:v0.30.0",
                                     "--max-model-len", "2048", "--dtype", "half"))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status(cluster, "g2h").get("state")), 8), \
        status(cluster, "g2h")
    text = cluster.read_log("llm", "g2h", previous=True)
    assert "ValueError: The model type 'gemma2' does not support float16." in text
