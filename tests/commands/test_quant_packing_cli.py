"""A checkpoint's packing vLLM has no kernel for, a malformed ``quantization_config``, and keys config.json leaves
out, through the real ``estimate`` / ``check`` / ``diagnose`` CLIs (``vllm.quant_support.packing_refusal``,
``vllm.quant_config.section``, ``vllm.config_defaults``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

DEFAULT_POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"
# meta-llama/Llama-3.1-8B-Instruct's shapes (the catalog's entry)
LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
    "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}}
AWQ8 = {"quant_method": "awq", "bits": 8, "group_size": 128, "zero_point": True, "version": "gemm"}
AWQ4 = {**AWQ8, "bits": 4}


def gptq(bits: int, sym: bool = True) -> dict[str, Any]:
    return {"quant_method": "gptq", "bits": bits, "group_size": 128, "desc_act": False, "sym": sym}


def _config(tmp_path: Path, name: str, **changes: Any) -> Path:
    config = {k: v for k, v in {**LLAMA, **changes}.items() if v is not ...}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return path


def _estimate(cli: Any, path: Path, version: str, gpu: str = "NVIDIA-L40S", *extra: str) -> dict[str, Any]:
    got = cli("estimate", "--model-config", str(path), "--gpu", gpu, "--max-model-len", "16384", "--vllm-version",
              version, *extra, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


ONLY_4BIT_AWQ = "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got 8 bits."
AUTO_AWQ_8 = ("ValueError: Unsupported num_bits = 8. Supported: 4. For 8-bit AWQ, use Marlin backend by setting "
              "backend='awq:marlin' or backend='marlin'.")
GPTQ_BITS = "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported for GPTQ, but got 5 bits."


@pytest.mark.parametrize(("qc", "version", "gpu", "said"), [
    (AWQ8, "0.8.5", "NVIDIA-L40S", None),  # awq_marlin takes uint8 with zero points through 0.8.5 on 8.0+
    (AWQ8, "0.8.5", "Tesla-T4", ONLY_4BIT_AWQ),  # below 8.0 Marlin is out: the plain AWQ kernel refuses 8 bits
    (AWQ8, "0.11.0", "NVIDIA-L40S", ONLY_4BIT_AWQ),  # from 0.9.0 Marlin lists uint4 only: falls back, refused
    (AWQ8, "0.34.0", "NVIDIA-L40S", AUTO_AWQ_8),
    (AWQ4, "0.34.0", "NVIDIA-L40S", None),
    (gptq(5), "0.11.0", "NVIDIA-L40S", GPTQ_BITS),
    (gptq(3), "0.20.0", "NVIDIA-L40S", None),  # the plain GPTQ kernel runs 2/3-bit
    (gptq(3), "0.22.0", "NVIDIA-L40S", "ValueError: Unsupported quantization config: bits=3, sym=True"),
    (gptq(4, sym=False), "0.20.0", "NVIDIA-L40S", None),  # Marlin refuses asymmetric; plain GPTQ runs it
    (gptq(4, sym=False), "0.34.0", "NVIDIA-L40S", "ValueError: Unsupported quantization config: bits=4, sym=False"),
    (gptq(4), "0.34.0", "NVIDIA-L40S", None),
])
def test_estimate_refuses_a_packing_vllm_has_no_kernel_for(cli, tmp_path, qc, version, gpu, said):
    data = _estimate(cli, _config(tmp_path, "q", quantization_config=qc), version, gpu)
    if said is None:
        assert data["outcome"] != "config_refused", data
        assert data["weights_gib"] < 10, data  # packed, not 16-bit
    else:
        assert (data["outcome"], data["refusal"]) == ("config_refused", said), data


def test_check_refuses_an_8_bit_awq_checkpoint(cli, tmp_path):
    dep = yaml.safe_load((Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" /
                          "good-rev14.yaml").read_text())
    pod = dep["spec"]["template"]["spec"]
    pod["containers"][0]["image"] = "vllm/vllm-openai:v0.34.0"
    pod["containers"][0]["args"] = ["acme/llama-8b-awq8", "--max-model-len", "16384"]
    pod["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    manifest = tmp_path / "dep.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    policy = tmp_path / "policy.yaml"
    config = _config(tmp_path, "awq8", quantization_config=AWQ8)
    policy.write_text(f"extends: {DEFAULT_POLICY}\nmodel_config: {{path: {config}, model: acme/llama-8b-awq8}}\n")
    got = cli("check", "-f", str(manifest), "--policy", str(policy))
    assert got.returncode == 1, got.stdout + got.stderr
    assert "predicted config_refused" in got.stdout and AUTO_AWQ_8 in got.stdout, got.stdout


@pytest.mark.parametrize(("qc", "kind"), [("fp8", "string ('fp8')"), ([{"quant_method": "awq"}], "array")])
def test_a_quantization_config_that_is_no_object_cannot_be_predicted(cli, tmp_path, qc, kind):
    got = cli("estimate", "--model-config", str(_config(tmp_path, "bad", quantization_config=qc)), "--gpu",
              "NVIDIA-L40S", "--vllm-version", "0.30.0")
    assert got.returncode == 2, got.stdout
    assert got.stderr.startswith(f"vllm-remedy: error: cannot predict LlamaForCausalLM: quantization_config is a JSON "
                                 f"{kind}"), got.stderr
    assert "AttributeError" in got.stderr and got.stdout == ""


def test_a_quantization_config_without_quant_method(cli, tmp_path):
    path = _config(tmp_path, "noqm", quantization_config={"bits": 4, "group_size": 128})
    data = _estimate(cli, path, "0.10.2")
    assert data["outcome"] == "config_refused", data
    assert data["refusal"].startswith("ValueError: Unknown quantization method: . Must be one of [..."), data
    got = cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--vllm-version", "0.11.0")
    assert got.returncode == 2 and "quantization_config names no quant_method" in got.stderr, got.stderr


@pytest.mark.parametrize(("line", "setting"), [
    (ONLY_4BIT_AWQ, "quantization"), (AUTO_AWQ_8, "quantization"), (GPTQ_BITS, "quantization"),
    ("ValueError: Unsupported quantization config: bits=4, sym=False", "quantization"),
])
def test_diagnose_classifies_the_packing_refusal(cli, tmp_path, line, setting):
    log = tmp_path / "vllm.log"
    log.write_text("INFO 12-06 01:00:00 [__init__.py:216] Automatically detected platform cuda.\n"
                   "Traceback (most recent call last):\n"
                   '  File "/usr/local/lib/python3.12/dist-packages/vllm/config/vllm.py", line 900, in '
                   "_get_quantization_config\n"
                   "    raise ValueError(\n"
                   f"{line}\n")
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["setting"]) == ("config_refused", setting), data


# Keys config.json leaves out take transformers' class default (vllm.config_defaults), as in vLLM.
def test_a_missing_length_key_is_llamaconfigs_2048(cli, tmp_path):
    data = _estimate(cli, _config(tmp_path, "nompe", max_position_embeddings=..., rope_scaling=...), "0.30.0")
    assert (data["outcome"], data["model_max_len"], data["model_max_len_key"]) == (
        "max_len_exceeds_model", 2048, "max_position_embeddings"), data


def test_missing_expert_keys_take_the_class_defaults(cli, tmp_path):
    mixtral = {**{k: v for k, v in LLAMA.items() if k != "rope_scaling"}, "architectures": ["MixtralForCausalLM"],
               "model_type": "mixtral", "vocab_size": 32000, "max_position_embeddings": 32768, "num_experts_per_tok": 2}
    path = tmp_path / "mixtral.json"
    path.write_text(json.dumps(mixtral))  # no num_local_experts: MixtralConfig's 8 (Mixtral-8x7B, ~87 GiB)
    data = _estimate(cli, path, "0.30.0", "NVIDIA-H100-80GB-HBM3")
    assert data["outcome"] == "oom_loading_weights" and data["weights_gib"] > 80, data
    qwen3_moe = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
                 "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                 "intermediate_size": 6144, "vocab_size": 151936, "max_position_embeddings": 40960,
                 "num_experts_per_tok": 8, "torch_dtype": "bfloat16"}  # Qwen3-30B-A3B without num_experts / moe width
    path.write_text(json.dumps(qwen3_moe))  # Qwen3MoeConfig: 128 experts of 768 (the full config: 56.97 GiB)
    assert _estimate(cli, path, "0.30.0", "NVIDIA-H100-80GB-HBM3")["weights_gib"] == 56.97


def test_bits_that_are_not_an_integer_cannot_be_predicted(cli, tmp_path):
    got = cli("estimate", "--model-config", str(_config(tmp_path, "s", quantization_config={**AWQ4, "bits": 4.0})),
              "--gpu", "NVIDIA-L40S", "--vllm-version", "0.30.0")
    # a JSON float: 32 // 4.0 divides and 4.0 == 4 is in the TYPE_MAP, the float fails later (not read); a text
    # is refused by the config class (test_quant_text_bits)
    assert got.returncode == 2 and "quantization_config (awq) bits 4.0 is not an integer" in got.stderr, got.stderr


def test_a_default_that_differs_between_transformers_versions_is_not_guessed(cli, tmp_path):
    gemma2 = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "num_hidden_layers": 42,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336,
              "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096,
              "torch_dtype": "bfloat16"}  # gemma-2-9b without hidden_size
    path = tmp_path / "gemma2.json"
    path.write_text(json.dumps(gemma2))
    got = cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--vllm-version", "0.30.0")
    assert got.returncode == 2, got.stdout
    assert got.stderr.startswith("vllm-remedy: error: cannot predict Gemma2ForCausalLM: hidden_size missing "
                                 "(transformers' Gemma2Config default differs between versions: 3072 in 4.46.3, "
                                 "2304 in 4.57.1"), got.stderr
