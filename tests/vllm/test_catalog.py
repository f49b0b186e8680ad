from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog, hf_config, quant_config


@pytest.mark.parametrize(
    ("label", "product", "total"),
    [
        ("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3", 79.19),
        ("NVIDIA-H100-80GB-HBM3-SHARED", "NVIDIA-H100-80GB-HBM3", 79.19),
        ("nvidia-h100-80gb", "NVIDIA-H100-80GB-HBM3", 79.19),  # GKE
        ("h100", "NVIDIA-H100-80GB-HBM3", 79.19),  # Karpenter
        ("NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB", 39.38),
        ("a100", "NVIDIA-A100-SXM4-40GB", 39.38),  # ambiguous on AWS: the smaller part
        ("nvidia-tesla-t4", "Tesla-T4", 14.58),
        ("NVIDIA-L40S", "NVIDIA-L40S", 44.42),
        ("a10g", "NVIDIA-A10G", 21.99),
        ("NVIDIA-GeForce-RTX-3090", "NVIDIA-GeForce-RTX-3090", 23.58),
    ],
)
def test_gpu_labels(label, product, total):
    spec = catalog.gpu(label)
    assert (spec.product, spec.total_gib) == (product, total)


def test_gpu_fp8_and_capability():
    assert catalog.gpu("NVIDIA-L4").fp8 is True
    assert catalog.gpu("NVIDIA-A100-SXM4-80GB").fp8 is False
    assert catalog.gpu("NVIDIA-H200").compute_capability == "9.0"


def test_mig_slice_is_a_fraction_of_the_card():
    spec = catalog.gpu("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb")
    assert spec.product == "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb"
    assert spec.total_gib == 37.2
    assert spec.compute_capability == "8.0"


def test_unknown_gpu_says_what_to_pass():
    with pytest.raises(UserError, match=r"^unknown GPU label NVIDIA-Z9000; pass --gpu-memory-gib$"):
        catalog.gpu("NVIDIA-Z9000")


@pytest.mark.parametrize(
    ("model_id", "quant", "bits", "layers"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", None, 16, 32),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", None, 16, 32),
        ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "fp8", 8, 32),
        ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "awq", 4, 80),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "gptq", 4, 28),
        ("RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8", "compressed-tensors", 8, 28),
        ("/models/qwen2.5-72b-instruct/", None, 16, 80),
        ("google/gemma-2-9b-it", None, 16, 42),
    ],
)
def test_model_ids(model_id, quant, bits, layers):
    spec = catalog.model(model_id)
    assert (spec.quantization, spec.weight_bits, spec.num_layers, spec.name) == (quant, bits, layers, model_id)


def test_unknown_model_says_what_to_pass():
    with pytest.raises(UserError, match=r"^unknown model acme/wonder-7b; pass --model-config with its config.json$"):
        catalog.model("acme/wonder-7b")


def test_catalog_facts_read_as_vllm_does():
    llama = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
    assert (llama.max_model_len, llama.head_dim, llama.num_kv_heads) == (131072, 128, 8)  # llama3 rope: no factor
    gemma = catalog.model("google/gemma-2-9b-it")
    assert (gemma.head_dim, gemma.max_model_len, gemma.sliding_window) == (256, 8192, 4096)
    qwen = catalog.model("Qwen/Qwen2.5-7B-Instruct")
    assert (qwen.sliding_window, qwen.max_model_len) == (None, 32768)  # use_sliding_window: false
    assert catalog.model("microsoft/Phi-3-mini-128k-instruct").max_model_len == 131072  # longrope: no factor


def test_from_hf_config_yarn_multimodal_and_quantization():
    config = {
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "text_config": {
            "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
            "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 32768,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        },
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
        # Qwen2-VL-7B's tower (without a vision_config the model is refused: test_cannot_predict.py).
        "vision_config": {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "mlp_ratio": 4, "patch_size": 14,
                          "spatial_merge_size": 2, "temporal_patch_size": 2},
    }
    spec = catalog.ModelSpec.from_hf_config(config, "x/config.json")
    assert (spec.max_model_len, spec.head_dim, spec.quantization, spec.weight_bits) == (131072, 128, "awq", 4)
    assert spec.architecture == "Qwen2VLForConditionalGeneration"
    assert round(spec.params_b - spec.vision_params_b, 2) == 7.62  # from shapes; Qwen2.5-7B publishes 7.62B


def test_hf_config_rules():
    assert hf_config.derived_max_model_len({"max_position_embeddings": 4096, "seq_length": 2048}) == 2048
    assert hf_config.derived_max_model_len({}) == 2048
    assert hf_config.derived_max_model_len(
        {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}}) == 8192
    assert hf_config.derived_max_model_len(
        {"max_position_embeddings": 131072, "rope_scaling": {"type": "su", "long_factor": [1.0]}}) == 131072
    assert hf_config.head_dim({"head_dim": 256}, 3584, 16) == 256
    assert hf_config.head_dim({}, 4096, 32) == 128
    assert quant_config.weight_bits({"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        "g0": {"weights": {"num_bits": 8}}}}}) == 8


def test_from_hf_config_rejects_bad_config():
    with pytest.raises(UserError, match=r"^cannot predict this model: config.json names no architecture"):
        catalog.ModelSpec.from_hf_config({"hidden_size": 8}, "cfg.json")
    # a class whose defaults the project does not hold (LlamaConfig's would fill the layers: vllm.config_defaults)
    with pytest.raises(UserError, match=r"^cannot predict Starcoder2ForCausalLM: num_hidden_layers / n_layer / "
                                        r"num_layers missing"):
        catalog.ModelSpec.from_hf_config({"architectures": ["Starcoder2ForCausalLM"], "hidden_size": 8}, "cfg.json")
    with pytest.raises(UserError, match=r"^cfg.json: expected a JSON object"):
        catalog.ModelSpec.from_hf_config([], "cfg.json")  # type: ignore[arg-type]
