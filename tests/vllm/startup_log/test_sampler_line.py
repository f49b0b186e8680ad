"""The V1 sampler's startup line says whether FlashInfer's top-k/top-p kernel or the PyTorch sort runs; the
parser reads it into ``StartupReport.flashinfer`` and ``plan --log`` hands it to the estimate (0.10.x-0.11.0
size the sampler warm-up by it: ``EngineSettings.flashinfer``)."""

from __future__ import annotations

import argparse

import pytest

from vllm_remedy.commands.plan import _observed
from vllm_remedy.vllm.memory.settings import EngineSettings
from vllm_remedy.vllm.startup_log import parse_startup_log

# Verbatim sampler lines: dennislee22/vLLM-benchmarking (0.10.1.1), orca3/llm-model-inference (0.8.5.post1),
# flashinfer-ai/flashinfer#1180 (VLLM_USE_FLASHINFER_SAMPLER=0).
ON = ("(VllmWorker TP0 pid=1430) INFO 09-03 00:36:44 [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k "
      "sampling.")
ABSENT = ("WARNING 05-17 21:21:19 [topk_topp_sampler.py:69] FlashInfer is not available. Falling back to the "
          "PyTorch-native implementation of top-p & top-k sampling. For the best performance, please install "
          "FlashInfer.")
DISABLED = ("WARNING 06-26 00:49:19 [topk_topp_sampler.py:52] FlashInfer is available, but it is not enabled. "
            "Falling back to the PyTorch-native implementation of top-p & top-k sampling. For the best "
            "performance, please set VLLM_USE_FLASHINFER_SAMPLER=1.")
KV = "(EngineCore_0 pid=1358) INFO 09-03 00:40:55 [kv_cache_utils.py:849] GPU KV cache size: 450,192 tokens"


@pytest.mark.parametrize(("line", "expected"), [(ON, True), (ABSENT, False), (DISABLED, False), ("", None)])
def test_the_sampler_line_sets_flashinfer(line, expected):
    assert parse_startup_log(f"{line}\n{KV}\n").flashinfer is expected


def test_plan_log_passes_the_sampler_line_to_the_estimate(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(f"{ON}\n{KV}\n")
    inputs: dict[str, str] = {}
    _, observed, _ = _observed(argparse.Namespace(failure=None, log=str(log)), inputs)
    assert observed is not None and (observed.tokens, inputs["flashinfer"]) == (450192, "true")
    assert EngineSettings.from_flags({"gpu-memory-utilization": "0.5"}, "0.10.1.1", inputs).flashinfer is True
    given = {"flashinfer": "false"}  # an explicit input wins over the log
    _observed(argparse.Namespace(failure=None, log=str(log)), given)
    assert given["flashinfer"] == "false"
