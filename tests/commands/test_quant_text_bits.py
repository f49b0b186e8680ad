"""GPTQ / AWQ ``bits`` written as a JSON string ("4") on the releases whose config classes are auto_gptq (0.22.0+) and
auto_awq (0.24.0+), and GPTQ act order from 0.30.0, predicted as ``config_refused`` in vLLM's words through the real
``estimate`` CLI (``vllm.quant_support._text_bits`` / ``act_order_refusal``). Before, the text was "cannot predict"
there and a ``desc_act: true`` GPTQ checkpoint on 0.30+ was predicted to start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256, "num_key_value_heads": 8,
         "max_position_embeddings": 8192, "torch_dtype": "float16"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
GPTQ_TEXT = {**GPTQ, "bits": "4"}
AWQ_TEXT = {"quant_method": "awq", "bits": "4", "group_size": 128, "zero_point": True, "version": "gemm"}
# ``self.pack_factor = 32 // weight_bits`` (auto_gptq.py@0.22.0 l.149, auto_awq.py@0.24.0 l.192): Python's words
FLOOR_DIV = "TypeError: unsupported operand type(s) for //: 'int' and 'str'"
ACT_ORDER = ("ValueError: GPTQ group activation ordering (desc_act=True) is no longer supported. Use a checkpoint "
             "with static activation ordering or desc_act=False.")


def _estimate(tmp_path: Path, qc: dict[str, Any], version: str, *extra: str) -> dict[str, Any]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": qc}))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--vllm-version", version,
                  *extra, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


@pytest.mark.parametrize(("qc", "version", "words"), [
    (GPTQ_TEXT, "0.22.0", FLOOR_DIV),  # auto_gptq: no act-order check yet, 32 // "4"
    (GPTQ_TEXT, "0.29.0", FLOOR_DIV),
    (GPTQ_TEXT, "0.34.0", FLOOR_DIV),  # desc_act false: the 0.30 check passes, then 32 // "4"
    ({**GPTQ_TEXT, "desc_act": True}, "0.30.0", ACT_ORDER),  # the act-order check comes first
    ({**GPTQ_TEXT, "desc_act": True, "group_size": -1}, "0.30.0", FLOOR_DIV),  # group -1: act order is a no-op
    ({k: v for k, v in GPTQ_TEXT.items() if k != "sym"}, "0.22.0",
     "ValueError: Cannot find any of ['sym'] in the model's quantization config."),
    (AWQ_TEXT, "0.23.0",  # awq.py still: "4" != 4
     "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got 4 bits."),
    (AWQ_TEXT, "0.24.0", FLOOR_DIV),  # auto_awq: 32 // "4" before its TYPE_MAP check
    (AWQ_TEXT, "0.34.0", FLOOR_DIV),
    ({**AWQ_TEXT, "bits": ..., "w_bit": "4"}, "0.30.0", FLOOR_DIV),  # AutoAWQ's own spelling, read first
])
def test_text_bits_are_refused_by_the_auto_config_classes(tmp_path, qc, version, words):
    qc = {k: v for k, v in qc.items() if v is not ...}
    out = _estimate(tmp_path, qc, version)
    assert (out["outcome"], out["refusal"]) == ("config_refused", words), out


@pytest.mark.parametrize("version", ["0.22.0", "0.34.0"])
def test_moe_wna16_declines_text_bits_so_the_methods_mismatch(tmp_path, version):
    out = _estimate(tmp_path, GPTQ_TEXT, version, "--quantization", "moe_wna16")
    assert out["outcome"] == "config_refused", out
    assert out["refusal"] == ("ValueError: Quantization method specified in the model config (gptq) does not match "
                              "the quantization method specified in the `quantization` argument (moe_wna16)."), out


@pytest.mark.parametrize(("qc", "version", "words"), [
    ({**GPTQ, "desc_act": True}, "0.29.0", None),  # auto_gptq.py@0.29.0 runs act order
    ({**GPTQ, "desc_act": True}, "0.30.0", ACT_ORDER),
    ({**GPTQ, "desc_act": True, "group_size": -1}, "0.30.0", None),
    ({**GPTQ, "dynamic": {r"+:.*\.1[0-5]\..*": {"desc_act": True}, "-:.*mlp.*": {"desc_act": True}}}, "0.34.0",
     "ValueError: GPTQ group activation ordering (desc_act=True) is no longer supported, but is enabled by dynamic "
     r"rule '+:.*\\.1[0-5]\\..*'. Use a checkpoint with static activation ordering or desc_act=False."),
])
def test_gptq_act_order_is_refused_from_0_30(tmp_path, qc, version, words):
    out = _estimate(tmp_path, qc, version)
    if words is None:
        assert out["outcome"] != "config_refused", out
    else:
        assert (out["outcome"], out["refusal"]) == ("config_refused", words), out


@pytest.mark.parametrize(("qc", "version", "refused"), [
    (GPTQ, "0.22.0", False),  # 4-bit, no act order: converted
    ({**GPTQ, "desc_act": True}, "0.22.0", True),  # `not desc_act` fails: declined
    ({**GPTQ, "bits": 3}, "0.13.0", True),  # 3 not in [4, 8]
    ({**GPTQ, "desc_act": True, "group_size": -1}, "0.30.0", False),  # normalised: act order is a no-op
    ({**GPTQ, "desc_act": True, "group_size": -1}, "0.29.0", True),  # no normalisation before 0.30
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "0.22.0", False),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 128, "zero_point": True}, "0.22.0", True),  # reads `bits`
    ({"quant_method": "fp8"}, "0.22.0", True),
])
def test_moe_wna16_converts_only_what_is_moe_wna16_compatible_takes(tmp_path, qc, version, refused):
    """``--quantization moe_wna16`` (moe_wna16.py@0.7.2-@0.34.0 ``is_moe_wna16_compatible``): a checkpoint it declines
    is refused as a mismatch of methods; one it takes is not refused for it."""
    out = _estimate(tmp_path, qc, version, "--quantization", "moe_wna16")
    method = qc["quant_method"]
    mismatch = (f"ValueError: Quantization method specified in the model config ({method}) does not match the "
                "quantization method specified in the `quantization` argument (moe_wna16).")
    assert (out.get("refusal") == mismatch) is refused, out


@pytest.mark.parametrize(("qc", "version"), [({**GPTQ, "desc_act": "false"}, "0.22.0"), ({**GPTQ, "sym": 1}, "0.34.0"),
                                             ({**GPTQ_TEXT, "desc_act": "false"}, "0.10.0")])
def test_a_stated_key_that_is_no_boolean_is_not_called_missing(tmp_path, qc, version):
    """get_from_keys finds it ("false" is a non-empty text, true to Python): not "Cannot find any of [...]"."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": qc}))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--vllm-version", version)
    assert got.returncode == 2 and "not a JSON boolean" in got.stderr and "Cannot find" not in got.stdout, \
        got.stdout + got.stderr


def test_text_bits_under_a_method_not_judged_cannot_be_predicted(tmp_path):
    """``--quantization gguf`` takes any checkpoint (gguf.py@0.22.0 ``override_quantization_method``); what its class
    does with a text "4" was not read: not sized at the stand-in 4 bits."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": GPTQ_TEXT}))
    got = run_cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--vllm-version", "0.22.0",
                  "--quantization", "gguf")
    assert got.returncode == 2 and "which vLLM's gguf config was not read for" in got.stderr, got.stdout + got.stderr
