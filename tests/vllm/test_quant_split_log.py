"""``diagnose`` reads a quantized layer split off its grid by the tensor-parallel size as ``config_refused`` naming
tensor-parallel-size, and the CLI refuses such a start the same way (``config_errors._SHARD``).

Lines: AWQ's refusal as QwenLM/Qwen3-VL#831 quotes it from a 0.7-era V0 engine (Qwen2.5-VL-72B-Instruct-AWQ at TP 2
and 4); Marlin's as sglang#3571 quotes vLLM's (Qwen2.5-VL-72B AWQ, q_group_size 128, TP 2: 29568 / 2 = 14784); block
FP8's from fp8.py@0.8.5's f-string (``Fp8MoEMethod.create_weights``) with Qwen3-30B-A3B-FP8's 768 at TP 4, which
vLLM refuses by that rule (192 per GPU, block_n 128)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "Qwen2.5-72B-Instruct-AWQ-unpadded.json"
AWQ = ("The input size is not aligned with the quantized weight shape. This can be caused by too large tensor "
       "parallel size.")
LINES = {
    "awq": (f"ERROR 02-22 00:01:41 engine.py:400] {AWQ}\n"
            "Traceback (most recent call last):\n"
            f"ValueError: {AWQ}\n"),
    "marlin": ("ValueError: Weight input_size_per_partition = 14784 is not divisible by min_thread_k = 128. Consider "
               "reducing tensor_parallel_size or running with --quantization gptq.\n"),
    "fp8-block": ("ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight "
                  "quantization block_n = 128.\n"),
}


@pytest.mark.parametrize("kind", sorted(LINES))
def test_the_split_is_config_refused_naming_tensor_parallel_size(kind):
    report = parse_startup_log(LINES[kind])
    assert report.failure is Failure.CONFIG_REFUSED, report.failure
    assert report.failure_detail["setting"] == "tensor-parallel-size"


def test_diagnose_and_estimate_on_the_cli(cli, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(LINES["awq"])
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["setting"]) == ("config_refused", "tensor-parallel-size")
    refused = cli("estimate", "--model-config", str(CONFIG), "--gpu", "NVIDIA-L40S", "--tp", "2", "-o", "json")
    assert refused.returncode == 0, refused.stderr
    data = json.loads(refused.stdout)
    assert data["outcome"] == "config_refused" and data["refusal"] == (
        "tensor-parallel-size: 2 splits down_proj's 29568 input channels into 14784 per GPU, which the AWQ group size "
        f"128 does not divide (a group would straddle two GPUs); vLLM: ValueError: {AWQ}"), data
    assert cli("estimate", "--model-config", str(CONFIG), "--gpu", "NVIDIA-L40S", "--tp", "1").returncode in (0, 1)
