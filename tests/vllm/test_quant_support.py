"""The quantization checks vLLM runs while building its config (``vllm.quant_support``), release by release, in its
own words: each method's ``get_min_capability`` against the card, ``--quantization`` against the checkpoint's method
(with the Marlin and auto_* overrides), the method's file on a checkpoint without ``quantization_config``. Before,
none was modelled: an AWQ model on a V100 was sized as fitting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_remedy.hub import spec_from_json
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.quant_support import method_run, refusal

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
AWQ = catalog.model("Qwen/Qwen2.5-7B-Instruct-AWQ")
FP8 = catalog.model("Qwen/Qwen2.5-7B-Instruct-FP8")
BF16 = catalog.model("Qwen/Qwen2.5-7B-Instruct")
V100, T4, A10, A100 = (catalog.gpu(g) for g in ("Tesla-V100-SXM2-32GB", "Tesla-T4", "NVIDIA-A10",
                                                "NVIDIA-A100-SXM4-80GB"))


def _gpt_oss():
    path = CONFIGS / "gpt-oss-20b.json"
    return spec_from_json(path.read_text(), "openai/gpt-oss-20b", str(path))


def _capability(method: str, least: int, cap: int) -> str:
    return (f"ValueError: The quantization method {method} is not supported for the current GPU. Minimum capability: "
            f"{least}. Current capability: {cap}.")


@pytest.mark.parametrize(("model", "gpu", "version", "said"), [
    (AWQ, V100, "0.5.5", _capability("awq", 75, 70)),
    (AWQ, V100, "0.11.0", _capability("awq", 75, 70)),
    (AWQ, V100, "0.34.0", _capability("auto_awq", 75, 70)),  # auto_awq.py@0.34.0 takes every AWQ checkpoint
    (AWQ, T4, "0.11.0", None),  # awq's 75; not Marlin (80 through 0.13)
    (FP8, T4, "0.13.0", _capability("fp8", 80, 75)),
    (FP8, T4, "0.14.0", None),  # fp8.py@0.14.0: 75
    (FP8, V100, "0.34.0", _capability("fp8", 75, 70)),
    (FP8, A10, "0.11.0", None),  # 8.6: Marlin weight-only, not refused
    ("gpt-oss", T4, "0.11.0", _capability("mxfp4", 80, 75)),
    ("gpt-oss", T4, "0.19.0", _capability("mxfp4", 80, 75)),
    ("gpt-oss", T4, "0.20.0", _capability("gpt_oss_mxfp4", 80, 75)),  # GptOssMxfp4Config, mxfp4.py@0.20.0
    ("gpt-oss", A10, "0.34.0", None),
])
def test_the_minimum_capability_of_the_method_vllm_runs(model, gpu, version, said):
    spec = _gpt_oss() if model == "gpt-oss" else model
    assert refusal(spec, gpu, None, version) == said


MISMATCH = ("ValueError: Quantization method specified in the model config (awq) does not match the quantization "
            "method specified in the `quantization` argument ({}).")


@pytest.mark.parametrize(("user", "gpu", "version", "runs", "said"), [
    ("gptq", A100, "0.11.0", "gptq", MISMATCH.format("gptq")),
    ("gptq", A100, "0.34.0", "gptq", MISMATCH.format("gptq")),
    ("awq", A100, "0.11.0", "awq", None),  # forcing awq over awq_marlin is allowed
    ("awq_marlin", A100, "0.11.0", "awq_marlin", None),
    ("marlin", A100, "0.11.0", "awq_marlin", None),
    ("awq_marlin", V100, "0.11.0", "awq_marlin", MISMATCH.format("awq_marlin")),  # no Marlin on 7.0: no override
    ("awq_marlin", A100, "0.34.0", "auto_awq", None),
    (None, A100, "0.11.0", "awq_marlin", None),
    (None, T4, "0.14.0", "awq_marlin", None),  # Marlin from 7.5 on 0.14
])
def test_quantization_against_the_checkpoints_method(user, gpu, version, runs, said):
    assert method_run(AWQ, gpu, user, version) == (runs, said)


def test_a_method_whose_file_is_missing_and_online_fp8():
    said = refusal(BF16, A100, "awq", "0.11.0")
    assert said is not None and said.startswith("ValueError: Cannot find the config file for awq"), said
    assert refusal(BF16, A100, "fp8", "0.11.0") is None  # fp8 quantizes the 16-bit weights online
    assert refusal(BF16, T4, "fp8", "0.11.0") == _capability("fp8", 80, 75)
    assert refusal(AWQ, A100, "awq", "0.11.0", "bfloat16") == (
        "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: [torch.float16]")


def test_the_estimate_says_config_refused():
    got = estimate(AWQ, V100, EngineSettings(version="0.11.0", dtype="half", max_model_len=8192))
    assert got.outcome is Outcome.CONFIG_REFUSED, got
    assert estimate(AWQ, T4, EngineSettings(version="0.11.0", max_model_len=4096)).outcome is not \
        Outcome.CONFIG_REFUSED


def test_a_config_json_file_reads_the_same():
    path = CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json"
    spec = spec_from_json(path.read_text(), "Qwen/Qwen2.5-72B-Instruct-AWQ", str(path))
    assert json.loads(path.read_text())["quantization_config"]["quant_method"] == "awq"
    assert refusal(spec, V100, None, "0.11.0") == _capability("awq", 75, 70)
