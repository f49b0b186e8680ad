"""``diagnose`` reads the config-time refusals the memory model now predicts as ``config_refused``: the quantization
checks (``vllm.quant_support``, in vLLM's words) and VLLM_USE_V1=1 where the 0.8-0.10 oracle would fall back
(``_raise_or_fallback``'s NotImplementedError, engine/arg_utils.py@0.8.5). Before, each was ``unknown``."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log
from vllm_remedy.vllm.v1_oracle import refusal


@pytest.mark.parametrize(("line", "setting"), [
    ("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 80. Current "
     "capability: 75.", "quantization"),
    ("ValueError: Quantization method specified in the model config (awq) does not match the quantization method "
     "specified in the `quantization` argument (gptq).", "quantization"),
    ("ValueError: Cannot find the config file for awq", "quantization"),
    ("ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: [torch.float16]",
     "quantization"),
])
def test_the_quantization_refusals(line, setting):
    report = parse_startup_log(f"Traceback (most recent call last):\n{line}\n")
    assert report.failure is Failure.CONFIG_REFUSED, report.failure
    assert report.failure_detail["setting"] == setting


def test_forced_v1_where_the_oracle_falls_back():
    report = parse_startup_log(f"Traceback (most recent call last):\n{refusal('--kv-cache-dtype')}\n")
    assert report.failure is Failure.CONFIG_REFUSED, report.failure
    assert (report.failure_detail["variable"], report.failure_detail["value"]) == ("VLLM_USE_V1", "1")
