"""Whether vLLM chunks prefills, and so whether its scheduler config refuses --max-num-batched-tokens below the
length (``vllm.memory.chunked``): V0's default leaves sliding-window models out (engine/arg_utils.py@0.6.5), multimodal
ones from 0.6.2 and MLA from 0.8.0 (``_set_default_args_v0``@0.8.5); V1 forces chunked prefill on until 0.11.0
(``_set_default_args_v1``@0.10.2) and keeps ``--no-enable-chunked-prefill`` from 0.11.1, refusing a batch below the
length (``verify_max_model_len``, config/scheduler.py@0.11.1, @0.34.0)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.startup_log import config_refusal

CONFIGS = Path(__file__).parents[2] / "data" / "configs"
A100 = catalog.gpu("NVIDIA-A100-SXM4-80GB")
PHI3_128K = "microsoft/Phi-3-mini-128k-instruct"  # config.json's sliding_window 262144: vLLM reads it as a window
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN7 = "Qwen/Qwen2.5-7B-Instruct"
V0 = {"vllm-use-v1": "0"}
SHORT_BATCH = {"max-model-len": "65536", "max-num-batched-tokens": "4096"}


def _config(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(json.loads((CONFIGS / f"{name}.json").read_text()), name)


def _run(model: ModelSpec, version: str, flags: dict[str, str], inputs: dict[str, str] | None = None):
    settings = EngineSettings.from_flags(flags, version, inputs or {})
    return resolve(model, A100, settings), estimate(model, A100, settings)


def test_v0_leaves_a_sliding_window_model_unchunked_above_32k():
    res, est = _run(catalog.model(PHI3_128K), "0.6.5", SHORT_BATCH)
    assert not res.chunked_prefill and est.outcome is Outcome.CONFIG_REFUSED
    res, _ = _run(catalog.model(PHI3_128K), "0.6.5", {"max-model-len": "65536"})
    assert not res.chunked_prefill and res.mnbt == 65536  # the default batch: max(max_model_len, 2048)


def test_disable_sliding_window_lets_v0_chunk_again():
    res, est = _run(catalog.model(PHI3_128K), "0.6.5", {**SHORT_BATCH, "disable-sliding-window": "true"})
    assert res.chunked_prefill and est.outcome is not Outcome.CONFIG_REFUSED


@pytest.mark.parametrize(("version", "chunked"), [("0.6.1", True), ("0.6.2", False), ("0.8.5", False)])
def test_v0_leaves_a_multimodal_model_unchunked_from_0_6_2(version, chunked):
    model = dataclasses.replace(catalog.model(LLAMA), vision_params_b=0.6)  # a vision tower, nothing else changed
    res, est = _run(model, version, SHORT_BATCH, V0)
    assert res.chunked_prefill is chunked
    assert (est.outcome is Outcome.CONFIG_REFUSED) is not chunked


def test_gemma3_on_v0_is_refused_the_short_batch():
    """Gemma 3 is both multimodal and sliding-window: V0 never chunks it by default (0.8.3's V0 fallback case)."""
    res, est = _run(_config("gemma-3-27b-it"), "0.8.5", SHORT_BATCH, V0)
    assert not res.chunked_prefill and est.outcome is Outcome.CONFIG_REFUSED


@pytest.mark.parametrize(("version", "chunked"), [("0.7.3", True), ("0.8.5", False), ("0.10.2", False)])
def test_v0_leaves_mla_unchunked_from_0_8_0(version, chunked):
    res, est = _run(_config("DeepSeek-V2-Lite"), version, SHORT_BATCH, V0)
    assert res.chunked_prefill is chunked
    assert (est.outcome is Outcome.CONFIG_REFUSED) is not chunked


@pytest.mark.parametrize("spelling", [{"enable-chunked-prefill": "false"}, {"no-enable-chunked-prefill": "true"}])
@pytest.mark.parametrize("version", ["0.8.5", "0.10.2", "0.11.0"])
def test_v1_forces_chunked_prefill_on_until_0_11_0(version, spelling):
    res, est = _run(catalog.model(QWEN7), version, {"max-model-len": "16384", **spelling})
    default_batch, _ = res.rules.scheduler_defaults(A100.total_gib, A100.product, A100.capability)
    assert res.chunked_prefill and res.mnbt == default_batch  # not max(max_model_len, default)
    _, est = _run(catalog.model(QWEN7), version, {"max-model-len": "16384", "max-num-batched-tokens": "4096",
                                                  **spelling})
    assert est.outcome is not Outcome.CONFIG_REFUSED


@pytest.mark.parametrize("version", ["0.11.1", "0.19.0", "0.34.0"])
def test_v1_keeps_the_flag_from_0_11_1_and_refuses_the_short_batch(version):
    res, est = _run(catalog.model(QWEN7), version, {"max-model-len": "16384", "max-num-batched-tokens": "4096",
                                                    "no-enable-chunked-prefill": "true"})
    assert not res.chunked_prefill and est.outcome is Outcome.CONFIG_REFUSED
    res, est = _run(catalog.model(QWEN7), version, {"max-model-len": "16384", "no-enable-chunked-prefill": "true"})
    assert res.mnbt == 16384 and est.outcome is not Outcome.CONFIG_REFUSED  # the default: max(length, default)


@pytest.mark.parametrize(("version", "line"), [((0, 11, 1), 1649), ((0, 19, 0), 1649), ((0, 25, 0), 2151),
                                               ((0, 34, 0), 2692)])
def test_v1_refusal_frames_are_the_release_s_own(version, line):
    first = config_refusal.batch_frames(version)[0]
    assert first[1:] == (line, "create_engine_config", "scheduler_config = SchedulerConfig(")
    assert "1 validation error for SchedulerConfig" in config_refusal.batch_error(version, 4096, 16384)


@pytest.mark.parametrize(("version", "batch"), [("0.5.5", 2048), ("0.6.1", 4096), ("0.6.3", 5120), ("0.8.5", 5120)])
def test_v0_s_default_batch_for_a_multimodal_model(version, batch):
    """``max(max_model_len, 2048)``, then at least ``_MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS`` (config.py@0.6.0,
    @0.6.3, @0.8.5; none in 0.5.5)."""
    model = dataclasses.replace(catalog.model(LLAMA), vision_params_b=0.6)
    res, _ = _run(model, version, {"max-model-len": "2048"}, V0)
    assert not res.chunked_prefill and res.mnbt == batch


@pytest.mark.parametrize(("version", "chunked"), [("0.5.5", False), ("0.6.0", False), ("0.6.1", True)])
def test_prefix_caching_keeps_v0_unchunked_until_0_6_0(version, chunked):
    """``and not self.enable_prefix_caching`` in the >32K default (engine/arg_utils.py@0.5.5, @0.6.0; gone @0.6.1)."""
    res, est = _run(catalog.model(LLAMA), version, {**SHORT_BATCH, "enable-prefix-caching": "true"})
    assert res.chunked_prefill is chunked
    assert (est.outcome is Outcome.CONFIG_REFUSED) is not chunked
