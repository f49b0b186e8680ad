"""Quantization read as vLLM reads it, through the real CLI: layers a checkpoint leaves unquantized
(``quant_exclusions``: AWQ ``modules_to_not_convert``, GPTQ ``dynamic``, compressed-tensors ``ignore``, fp8
``ignored_layers``), ``compression_config`` when ``quantization_config`` is absent (``quant_source``), and
``--kv-cache-dtype auto`` on a ModelOpt checkpoint with an FP8 KV scheme (``kv_auto``), in ``estimate`` and ``check``.

The model is Llama-3.1-8B's shape (its published config.json's sizes); its MLP is 5.64B parameters, 10.5 GiB at
bf16, so an MLP left unquantized moves the weights from about 5.4 to 13.2 GiB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures import pyinfra_run
from fixtures.check_batch import l40s_deployment
from fixtures.drift_world import inventory, policy

rehearsal = pyinfra_run.rehearsal

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
         "num_key_value_heads": 8, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
         "rope_theta": 500000.0, "tie_word_embeddings": False}
W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized",
         "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                       "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                   "strategy": "group", "group_size": 128}}},
         "ignore": ["lm_head"]}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}
MODELOPT = {"quant_method": "modelopt", "quant_algo": "FP8", "producer": {"name": "modelopt", "version": "0.29"}}
CT_FP8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
          "config_groups": {"group_0": {"targets": ["Linear"],
                                        "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                                    "strategy": "channel", "dynamic": False},
                                        "input_activations": {"num_bits": 8, "type": "float", "symmetric": True,
                                                              "strategy": "token", "dynamic": True}}}}
ALL_DOWN = [f"model.layers.{i}.mlp.down_proj" for i in range(32)]
CONFIGS = {
    "awq_mlp": {**LLAMA, "quantization_config": {**AWQ, "modules_to_not_convert": ["mlp"]}},
    "gptq_mlp": {**LLAMA, "quantization_config": {**GPTQ, "dynamic": {"-:.*mlp.*": {}}}},
    "ct_mlp": {**LLAMA, "quantization_config": {**W4A16, "ignore": ["lm_head", "re:.*mlp.*"]}},
    "ct_plain": {**LLAMA, "quantization_config": W4A16},
    "fp8_plain": {**LLAMA, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}},
    "fp8_down": {**LLAMA, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                                   "ignored_layers": ALL_DOWN}},
    # one shard of a fused layer only: vLLM raises at load ("Found a different quantization schemes")
    "ct_shard": {**LLAMA, "quantization_config": {**W4A16, "ignore": ["model.layers.0.self_attn.q_proj"]}},
    # an architecture whose vLLM layer names are not walked: only an LM-head entry is harmless
    "phi3_mlp": {**LLAMA, "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
                 "quantization_config": {**AWQ, "modules_to_not_convert": ["mlp"]}},
    "phi3_head": {**LLAMA, "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
                  "quantization_config": {**AWQ, "modules_to_not_convert": ["lm_head"]}},
    "awq_text": {**LLAMA, "quantization_config": {**AWQ, "modules_to_not_convert": "mlp"}},
    "gptq_down8": {**LLAMA, "quantization_config": {**GPTQ, "dynamic": {"+:.*down_proj": {"bits": 8}}}},
    "qwen2_mlp": {**LLAMA, "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                  "quantization_config": {**W4A16, "ignore": ["lm_head", "re:.*mlp.*"]}},
    "compression": {**LLAMA, "compression_config": W4A16},
    "modelopt_kv": {**LLAMA, "quantization_config": {**MODELOPT, "kv_cache_quant_algo": "FP8"}},
    "modelopt": {**LLAMA, "quantization_config": MODELOPT},
    "modelopt_nvfp4_kv": {**LLAMA, "quantization_config": {**MODELOPT, "kv_cache_quant_algo": "NVFP4"}},
    # Qwen's GPTQ layout: only the attention listed, so the MLP stays 16-bit from 0.11.0
    "gptq_attn": {**LLAMA, "quantization_config": {**GPTQ, "modules_in_block_to_quantize": [
        ["self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj"], ["self_attn.o_proj"]]}},
    "gptq_attn_flat": {**LLAMA, "quantization_config": {**GPTQ, "modules_in_block_to_quantize": [
        "self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj", "self_attn.o_proj"]}},
    "gptq_q_only": {**LLAMA, "quantization_config": {**GPTQ, "modules_in_block_to_quantize": ["self_attn.q_proj"]}},
    # llm-compressor's FP8 recipe with an FP8 KV cache, and the same without the KV scheme
    "ct_fp8_kv": {**LLAMA, "quantization_config": {**CT_FP8, "kv_cache_scheme": {
        "num_bits": 8, "type": "float", "symmetric": True, "strategy": "tensor", "dynamic": False}}},
    "ct_fp8": {**LLAMA, "quantization_config": CT_FP8},
    "ct_int8_kv": {**LLAMA, "quantization_config": {**CT_FP8, "kv_cache_scheme": {
        "num_bits": 8, "type": "int", "symmetric": True, "strategy": "tensor", "dynamic": False}}},
}


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("quantx")
    out = {}
    for name, config in CONFIGS.items():
        out[name] = tmp / f"{name}.json"
        out[name].write_text(json.dumps(config))
    return out


def _estimate(path: Path, version: str, gpu: str = "NVIDIA-L4", length: str = "65536") -> dict:
    got = run_cli("estimate", "--model-config", str(path), "--gpu", gpu, "--max-model-len", length,
                  "--vllm-version", version, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    body = json.loads(got.stdout)
    return body.get("result", body)


@pytest.mark.parametrize("name", ["awq_mlp", "gptq_mlp", "ct_mlp"])
def test_an_mlp_left_unquantized_is_sized_at_16_bits(configs, name):
    """vLLM leaves the excluded MLP in bf16 (auto_awq.py@0.30.0 ``is_layer_skipped``; gptq_utils.py@0.30.0
    ``get_dynamic_override`` False; compressed_tensors ``should_ignore_layer``): 13.2 GiB of weights, not 5.4, so
    65,536 tokens no longer fit an L4 (it said fits at 1.64x)."""
    est = _estimate(configs[name], "0.30.0")
    assert 13.0 < est["weights_gib"] < 13.4, est
    assert est["outcome"] == "max_len_exceeds_kv", est


def test_the_rule_applies_from_the_release_that_reads_it(configs):
    """AWQ reads modules_to_not_convert from 0.6.4 (awq.py@0.6.3 has no such key), GPTQ ``dynamic`` from 0.7.3;
    before, vLLM packs the MLP the checkpoint stores 16-bit and the load fails: "cannot predict", not a 4-bit size."""
    assert _estimate(configs["awq_mlp"], "0.6.4", length="8192")["weights_gib"] > 13.0
    assert _estimate(configs["gptq_mlp"], "0.7.3", length="8192")["weights_gib"] > 13.0
    for name, version, key in (("awq_mlp", "0.6.3", "modules_to_not_convert"), ("gptq_mlp", "0.7.2", "dynamic")):
        got = run_cli("estimate", "--model-config", str(configs[name]), "--gpu", "NVIDIA-L4", "--max-model-len",
                      "8192", "--vllm-version", version)
        assert got.returncode != 0 and "cannot predict" in got.stderr, got.stdout + got.stderr
        assert f"ignores quantization_config.{key}" in got.stderr, got.stderr


def test_a_release_that_names_no_layer_matches_no_pattern(configs):
    """qwen2.py@0.6.3 passes its linear layers no prefix (their name is ""), so ``re:.*mlp.*`` reaches none there;
    qwen2.py@0.6.4 names them model.layers.N.mlp.*."""
    assert _estimate(configs["qwen2_mlp"], "0.6.3", length="8192")["weights_gib"] < 6.0
    assert _estimate(configs["qwen2_mlp"], "0.6.4", length="8192")["weights_gib"] > 13.0


def test_fp8_ignored_layers_are_sized_at_16_bits(configs):
    """32 down_proj kept bf16: +1.75 GiB (1.88B parameters, 1 byte more each) over the all-fp8 checkpoint."""
    plain = _estimate(configs["fp8_plain"], "0.30.0")["weights_gib"]
    down = _estimate(configs["fp8_down"], "0.30.0")["weights_gib"]
    assert 1.6 < down - plain < 1.9, (plain, down)


@pytest.mark.parametrize("name, words", [
    ("ct_shard", "leaves some shards of model.layers.0.self_attn.qkv_proj quantized and others not"),
    ("phi3_mlp", "quantization_config excludes modules ['mlp']: this tool does not know the architecture's layer "
                 "names in vLLM"),
    ("awq_text", "quantization_config.modules_to_not_convert 'mlp' is not a list of module names")])
def test_an_exclusion_that_cannot_be_matched_is_cannot_predict(configs, name, words):
    got = run_cli("estimate", "--model-config", str(configs[name]), "--gpu", "NVIDIA-L4", "--max-model-len", "8192",
                  "--vllm-version", "0.30.0")
    assert got.returncode != 0 and "cannot predict" in got.stderr and words in got.stderr, got.stdout + got.stderr


def test_a_dynamic_bits_override_is_sized_at_its_bits(configs):
    """``override_config`` (gptq_utils.py@0.30.0): the 32 down_proj (1.88B parameters) packed at 8 bits, not 4."""
    assert 6.1 < _estimate(configs["gptq_down8"], "0.30.0", length="8192")["weights_gib"] < 6.4


def test_an_lm_head_entry_is_harmless_on_any_architecture(configs):
    assert _estimate(configs["phi3_head"], "0.30.0", length="8192")["weights_gib"] < 6.0


def test_compression_config_is_read_where_quantization_config_is_absent(configs):
    """``_parse_quant_hf_config`` and ``get_quant_config`` fall back to compression_config in every release: sized as
    the same scheme under quantization_config (was 15.06 GiB and max_len_exceeds_kv)."""
    keys = ("outcome", "weights_gib", "kv_cache_tokens")
    for version in ("0.8.5", "0.30.0"):
        got = _estimate(configs["compression"], version, length="32768")
        plain = _estimate(configs["ct_plain"], version, length="32768")
        assert [got[k] for k in keys] == [plain[k] for k in keys] and got["weights_gib"] < 6.0, (got, plain)


def test_modelopt_fp8_kv_scheme_resolves_auto_from_0_14(configs):
    """resolve_kv_cache_dtype_string (engine/arg_utils.py@0.14.0): auto becomes fp8_e4m3, twice the tokens; not at
    0.13.0, where the function does not exist; an NVFP4 scheme is not sized from 0.20.0 and falls back to auto
    before (utils/torch_utils.py@0.14.0 / @0.20.0)."""
    args = {"gpu": "NVIDIA-L40S", "length": "16384"}
    plain = _estimate(configs["modelopt"], "0.30.0", **args)["kv_cache_tokens"]
    kv = _estimate(configs["modelopt_kv"], "0.30.0", **args)
    assert kv["kv_cache_tokens"] >= 2 * plain - 32 and "fp8_e4m3" in kv["kv_cache_dtype_note"], (plain, kv)
    old = _estimate(configs["modelopt_kv"], "0.13.0", **args)
    assert old["kv_cache_dtype_note"] is None and old["kv_cache_tokens"] == _estimate(
        configs["modelopt"], "0.13.0", **args)["kv_cache_tokens"]
    assert _estimate(configs["modelopt_nvfp4_kv"], "0.19.0", **args)["kv_cache_tokens"] == _estimate(
        configs["modelopt"], "0.19.0", **args)["kv_cache_tokens"]
    got = run_cli("estimate", "--model-config", str(configs["modelopt_nvfp4_kv"]), "--gpu", "NVIDIA-L40S",
                  "--max-model-len", "16384", "--vllm-version", "0.20.0")
    assert got.returncode != 0 and "resolves it to nvfp4" in got.stderr, got.stdout + got.stderr


@pytest.mark.parametrize("allowed, fix", [
    ("[auto]", "fix: type --kv-cache-dtype bfloat16 (a typed dtype is not resolved) and allow it in the policy's "
               "flags.kv-cache-dtype"),
    ("[auto, bfloat16]", "smallest fix (planner): --kv-cache-dtype bfloat16 (predicted fits")])
def test_check_judges_the_policys_fp8_rule_on_the_resolved_dtype(tmp_path, configs, allowed, fix):
    """The default policy forbids fp8 KV; a 0.30.0 pod with auto on this checkpoint runs an fp8 cache anyway."""
    (tmp_path / "cfg.json").write_text(configs["modelopt_kv"].read_text())
    model = "acme/llama-3.1-8b-fp8"
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: {Path(__file__).resolve().parents[2] / 'policies' / 'default.yaml'}\n"
                      f"target: {{models: [{model}]}}\nknown_good: []\nmodel_config: {{path: cfg.json}}\n"
                      f"flags:\n  kv-cache-dtype: {{allowed: {allowed}}}\n")
    dep = l40s_deployment("llama-fp8", "vllm/vllm-openai:v0.30.0",
                          ["--model", model, "--max-model-len", "16384", "--gpu-memory-utilization", "0.9",
                           "--max-num-seqs", "64"])
    (tmp_path / "dep.yaml").write_text(yaml.safe_dump(dep))
    got = run_cli("check", "-f", str(tmp_path / "dep.yaml"), "--policy", str(policy))
    assert got.returncode == 1, got.stdout + got.stderr
    assert ("kv-cache-dtype [error]: --kv-cache-dtype auto resolves to fp8_e4m3: the checkpoint's ModelOpt KV-cache "
            "scheme is FP8") in got.stdout and fix in got.stdout, got.stdout


def test_drift_judges_the_policys_fp8_rule_on_the_resolved_dtype(rehearsal, tmp_path):
    """`drift` on the rehearsal cluster: the unit types no fp8, yet its 0.30.0 engine runs an fp8 cache."""
    model = "acme/llama-3.1-8b-fp8"
    (tmp_path / "cfg.json").write_text(json.dumps(CONFIGS["modelopt_kv"]))

    def serve_it(dep: dict) -> None:
        container = dep["spec"]["template"]["spec"]["containers"][0]
        container["image"] = "vllm/vllm-openai:v0.30.0"
        container["args"] = [model, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90", "--max-num-seqs",
                             "64"]
    rehearsal.change(serve_it)
    extra = f"target: {{models: [{model}]}}\nmodel_config: {{path: {tmp_path}/cfg.json}}\n"
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, extra))
    got = run_cli("drift", "-i", inv, "-o", "json")
    host = json.loads(got.stdout)["hosts"][0]
    assert "checks" in host, host
    checks = {c["check"]: c for c in host["checks"]}
    assert checks["kv-cache-dtype"]["status"] == "drift", got.stdout + got.stderr
    assert checks["kv-cache-dtype"]["detail"].startswith("--kv-cache-dtype auto resolves to fp8_e4m3"), checks


@pytest.mark.parametrize("name", ["gptq_attn", "gptq_attn_flat"])
def test_a_gptq_allow_list_leaves_the_unlisted_mlp_16_bit_from_0_11(configs, name):
    """``is_layer_gptq_quantized`` (utils/gptq_utils.py@0.11.0, @0.30.0): a layer no entry of
    modules_in_block_to_quantize is a substring of is UnquantizedLinearMethod; 0.10.2 has no such key. Was 5.43 GiB
    and fits in every release."""
    assert _estimate(configs[name], "0.10.2")["weights_gib"] < 6.0
    for version in ("0.11.0", "0.30.0"):
        est = _estimate(configs[name], version)
        assert 13.0 < est["weights_gib"] < 13.4 and est["outcome"] == "max_len_exceeds_kv", (version, est)


def test_a_gptq_allow_list_splitting_a_fused_layer_is_cannot_predict(configs):
    """Only q_proj listed: qkv_proj's shards disagree, which vLLM refuses ("Detected some but not all shards")."""
    got = run_cli("estimate", "--model-config", str(configs["gptq_q_only"]), "--gpu", "NVIDIA-L4", "--max-model-len",
                  "8192", "--vllm-version", "0.30.0")
    assert got.returncode != 0 and "cannot predict" in got.stderr and "leaves some shards of " in got.stderr, (
        got.stdout + got.stderr)


def test_a_compressed_tensors_kv_scheme_runs_an_fp8_cache_from_0_15(configs):
    """Attention.__init__ sets "fp8" for a non-null kv_cache_scheme: whatever was typed at 0.15.0-0.21.x
    (attention/layer.py@0.15.0, attention.py@0.21.0), for auto only from 0.22.0 (attention.py@0.22.0); absent at
    0.14.0. Twice the tokens of the same checkpoint without the scheme (was identical in every release)."""
    args = {"gpu": "NVIDIA-L40S", "length": "16384"}
    assert _estimate(configs["ct_fp8_kv"], "0.14.0", **args)["kv_cache_tokens"] == _estimate(
        configs["ct_fp8"], "0.14.0", **args)["kv_cache_tokens"]
    for version in ("0.15.0", "0.21.0", "0.22.0", "0.30.0", "0.34.0"):
        plain = _estimate(configs["ct_fp8"], version, **args)["kv_cache_tokens"]
        kv = _estimate(configs["ct_fp8_kv"], version, **args)
        assert kv["kv_cache_tokens"] >= 2 * plain - 64 and "fp8" in kv["kv_cache_dtype_note"], (version, plain, kv)
    got = run_cli("estimate", "--model-config", str(configs["ct_int8_kv"]), "--gpu", "NVIDIA-L40S",
                  "--max-model-len", "16384", "--vllm-version", "0.30.0")
    assert got.returncode != 0 and "validate_kv_cache_scheme" in got.stderr, got.stdout + got.stderr


@pytest.mark.parametrize("version, typed, said, fix", [
    ("0.30.0", [], "auto resolves to", "smallest fix (planner): --kv-cache-dtype bfloat16 (predicted fits"),
    ("0.21.0", [], "auto resolves to", "no --kv-cache-dtype of this release keeps a 16-bit cache"),
    ("0.21.0", ["--kv-cache-dtype", "bfloat16"], "bfloat16 is replaced by", "no --kv-cache-dtype of this release")])
def test_check_judges_the_policys_fp8_rule_on_a_compressed_tensors_kv_scheme(tmp_path, configs, version, typed, said,
                                                                             fix):
    """The default policy forbids fp8 KV; the pod's engine runs an fp8 cache anyway. At 0.21.0 a typed bfloat16 is
    replaced too, so no flag keeps a 16-bit cache (was: no finding at all); at 0.22.0 a typed bfloat16 is kept."""
    (tmp_path / "cfg.json").write_text(configs["ct_fp8_kv"].read_text())
    model = "acme/llama-3.1-8b-fp8-kv"
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: {Path(__file__).resolve().parents[2] / 'policies' / 'default.yaml'}\n"
                      f"target: {{models: [{model}]}}\nknown_good: []\nmodel_config: {{path: cfg.json}}\n"
                      "flags:\n  kv-cache-dtype: {allowed: [auto, bfloat16]}\n")
    dep = l40s_deployment("llama-fp8-kv", f"vllm/vllm-openai:v{version}",
                          ["--model", model, "--max-model-len", "16384", "--gpu-memory-utilization", "0.9",
                           "--max-num-seqs", "64", *typed])
    (tmp_path / "dep.yaml").write_text(yaml.safe_dump(dep))
    got = run_cli("check", "-f", str(tmp_path / "dep.yaml"), "--policy", str(policy))
    assert got.returncode == 1, got.stdout + got.stderr
    assert (f"kv-cache-dtype [error]: --kv-cache-dtype {said} fp8 (fp8_e4m3): the checkpoint's "
            "compressed-tensors kv_cache_scheme") in got.stdout and fix in got.stdout, got.stdout
    if typed:  # 0.22.0 keeps the typed dtype: no kv-cache-dtype finding
        dep["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.22.0"
        (tmp_path / "dep.yaml").write_text(yaml.safe_dump(dep))
        got = run_cli("check", "-f", str(tmp_path / "dep.yaml"), "--policy", str(policy))
        assert "kv-cache-dtype [error]" not in got.stdout, got.stdout
