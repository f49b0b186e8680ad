"""Quantization keys read from the release vLLM's sources read them, through the real CLI (hostile review 14):

- fp8 ``modules_to_not_convert`` stands in for an empty ``ignored_layers`` from 0.10.1 (``Fp8Config.from_config``,
  fp8.py@0.10.1 l.128-131; absent @0.10.0), not from 0.11.0: a 7B's 28 down_proj kept 16-bit are +1.77 GiB there;
- GPTQ ``dynamic`` before 0.7.3 and AWQ ``modules_to_not_convert`` before 0.6.4 are ignored by vLLM, which packs the
  layers the checkpoint stores 16-bit and fails to load them: "cannot predict", not an all-4-bit "fits";
- ModelOpt's ``quant_algo`` in lower case is refused by 0.6.1-0.13.0's classes in their words (``QUANT_ALGOS`` matched
  as written, modelopt.py@0.10.0 l.130-135, @0.13.0 l.284-290; upper-cased from 0.14.0 l.283-284)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

QWEN7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
          "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
          "vocab_size": 152064, "max_position_embeddings": 32768, "torch_dtype": "bfloat16",
          "tie_word_embeddings": False, "rope_theta": 1000000.0}
LLAMA70B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
            "intermediate_size": 28672, "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
            "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
            "tie_word_embeddings": False, "rope_theta": 500000.0}
DOWN = ["lm_head", *(f"model.layers.{i}.mlp.down_proj" for i in range(28))]
CONFIGS = {
    "fp8_mtnc": {**QWEN7B, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                                   "modules_to_not_convert": DOWN}},
    "fp8_ignored": {**QWEN7B, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                                      "ignored_layers": DOWN}},
    "gptq_dyn": {**QWEN7B, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                                   "desc_act": False, "sym": True,
                                                   "dynamic": {r"-:model\.layers\.(1?[0-9])\..*": {}}}},
    "awq_skip": {**QWEN7B, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
                                                   "zero_point": True, "version": "gemm",
                                                   "modules_to_not_convert": ["model.layers.0.", "model.layers.1."]}},
    "awq_head": {**QWEN7B, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
                                                   "zero_point": True, "version": "gemm",
                                                   "modules_to_not_convert": ["lm_head"]}},
    "modelopt_lower": {**LLAMA70B, "quantization_config": {"quant_method": "modelopt", "quant_algo": "fp8",
                                                           "ignore": ["lm_head"]}},
    "modelopt_lower_nested": {**LLAMA70B, "quantization_config": {
        "quant_method": "modelopt", "quantization": {"quant_algo": "fp8", "exclude_modules": ["lm_head"]}}},
}


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("quantreads")
    out = {}
    for name, config in CONFIGS.items():
        out[name] = tmp / f"{name}.json"
        out[name].write_text(json.dumps(config))
    return out


L40S = ("--gpu", "NVIDIA-L40S")
H100_TP2 = ("--gpu", "NVIDIA-H100-80GB-HBM3", "--tp", "2")


def _run(path: Path, version: str, *flags: str):
    return run_cli("estimate", "--model-config", str(path), "--max-model-len", "8192", "--vllm-version", version,
                   *flags)


def _estimate(path: Path, version: str, card: tuple[str, ...] = L40S) -> dict:
    got = _run(path, version, *card, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    body = json.loads(got.stdout)
    return body.get("result", body)


@pytest.mark.parametrize("version", ["0.10.1", "0.10.2"])
def test_fp8_modules_to_not_convert_is_read_from_0_10_1(configs, version):
    """Was 8.21 GiB (down_proj at 8 bits) on 0.10.1 / 0.10.2; the same list under ``ignored_layers`` is 9.98."""
    mtnc = _estimate(configs["fp8_mtnc"], version)["weights_gib"]
    assert mtnc == _estimate(configs["fp8_ignored"], version)["weights_gib"], mtnc
    assert mtnc - _estimate(configs["fp8_mtnc"], "0.10.0")["weights_gib"] > 1.7, mtnc


@pytest.mark.parametrize("name, version, key", [("gptq_dyn", "0.7.2", "dynamic"), ("gptq_dyn", "0.6.6", "dynamic"),
                                                ("awq_skip", "0.6.3", "modules_to_not_convert"),
                                                ("awq_skip", "0.6.0", "modules_to_not_convert")])
def test_a_skip_list_the_release_ignores_is_cannot_predict(configs, name, version, key):
    got = _run(configs[name], version, *L40S)
    assert got.returncode != 0 and "cannot predict" in got.stderr, got.stdout + got.stderr
    assert f"ignores quantization_config.{key}" in got.stderr, got.stderr


def test_the_first_release_that_reads_the_list_sizes_it(configs):
    """GPTQModel's rule keeps layers 0-19 16-bit from 0.7.3 (11.71 GiB); AWQ's first two layers from 0.6.4."""
    assert _estimate(configs["gptq_dyn"], "0.7.3")["weights_gib"] > 11
    assert _estimate(configs["awq_skip"], "0.6.4")["weights_gib"] > 5.6


def test_an_lm_head_entry_changes_nothing_on_an_older_release(configs):
    assert _estimate(configs["awq_head"], "0.6.3")["outcome"] == "fits"


@pytest.mark.parametrize("name, version", [("modelopt_lower", "0.10.0"), ("modelopt_lower", "0.11.0"),
                                           ("modelopt_lower", "0.13.0"), ("modelopt_lower_nested", "0.9.2"),
                                           ("modelopt_lower_nested", "0.11.0")])
def test_a_lower_case_modelopt_algo_is_refused_before_0_14(configs, name, version):
    est = _estimate(configs[name], version, H100_TP2)
    assert est["outcome"] == "config_refused", est
    assert "ModelOpt currently only supports: ['FP8', 'NVFP4'] quantizations in vLLM" in json.dumps(est), est


def test_a_lower_case_modelopt_algo_is_read_from_0_14(configs):
    est = _estimate(configs["modelopt_lower"], "0.14.0", H100_TP2)
    assert est["outcome"] == "fits" and est["weights_gib"] < 35, est
