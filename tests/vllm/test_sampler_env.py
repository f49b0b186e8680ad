"""What each release does with VLLM_USE_FLASHINFER_SAMPLER, as read from its source (``vllm.sampler_env``): whether
the V1 sampler's warm-up takes FlashInfer's kernel (no sort), or why the start cannot be predicted."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.catalog import gpu, model
from vllm_remedy.vllm.memory.settings import EngineSettings, resolve
from vllm_remedy.vllm.runner_env import runner_v2
from vllm_remedy.vllm.sampler_env import sampler
from vllm_remedy.vllm.versions import rules_on_device

L4, V100 = (8, 9), (7, 0)


@pytest.mark.parametrize(("version", "value", "installed", "takes"), [
    ("0.10.2", None, True, True), ("0.10.2", "1", True, True), ("0.10.2", "0", True, False),  # None means True
    ("0.11.0", "0", True, False),
    ("0.11.1", None, True, False), ("0.11.1", "1", True, True), ("0.16.0", "1", True, True),  # opt-in
    ("0.16.0", "1", None, False),  # 1 does not install FlashInfer: unknown is sized as absent
    ("0.26.0", None, True, True), ("0.26.0", "0", True, False), ("0.34.0", "1", True, True),  # default on again
])
def test_the_sampler_each_release_runs(version, value, installed, takes):
    assert sampler(rules_on_device(version, L4), L4, installed, value) == (takes, None)


@pytest.mark.parametrize(("version", "card", "value", "installed", "said"), [
    ("0.12.0", V100, "1", True, "refuses it on a card of compute capability 7.0"),
    ("0.34.0", V100, "1", True, "refuses it on a card of compute capability 7.0"),
    ("0.34.0", L4, "1", False, "raises RuntimeError when it is set and FlashInfer is unavailable"),
    ("0.10.2", L4, "yes", True, "raises ValueError"),
])
def test_cannot_predict(version, card, value, installed, said):
    why = sampler(rules_on_device(version, card), card, installed, value)[1]
    assert why is not None and why.startswith("cannot predict VLLM_USE_FLASHINFER_SAMPLER") and said in why, why


def test_an_unreadable_value_matters_only_where_0_and_1_differ():
    assert sampler(rules_on_device("0.10.2", L4), L4, True, None, "from a Secret")[1] is not None
    assert sampler(rules_on_device("0.10.2", L4), L4, None, None, "from a Secret") == (False, None)  # no FlashInfer
    assert sampler(rules_on_device("0.10.2", L4), L4, True, None, None) == (True, None)


def test_the_resolved_settings_follow_the_env():
    spec, card = model("Qwen/Qwen2.5-7B-Instruct"), gpu("NVIDIA-L4")
    inputs = {"flashinfer": "true"}
    on = resolve(spec, card, EngineSettings.from_flags({}, "0.10.2", inputs))
    off = resolve(spec, card, EngineSettings.from_flags({}, "0.10.2", {**inputs, "flashinfer-sampler-env": "0"}))
    assert (on.flashinfer_sampler, off.flashinfer_sampler) == (True, False)


@pytest.mark.parametrize(("version", "value", "runs_v2"), [
    ("0.22.0", "1", True), ("0.26.0", "0", False), ("0.26.0", None, True), ("0.34.0", "1", True),
    ("0.16.0", "0", False),
])
def test_vllm_use_v2_model_runner_overrides_the_runner_default(version, value, runs_v2):
    """VLLM_USE_V2_MODEL_RUNNER (``vllm.runner_env``): a set value overrides the per-model default from 0.22.0."""
    spec, card = model("Qwen/Qwen2.5-7B-Instruct"), gpu("NVIDIA-L40S")
    inputs = {} if value is None else {"v2-model-runner-env": value}
    assert resolve(spec, card, EngineSettings.from_flags({}, version, inputs)).runner_v2 is runs_v2


@pytest.mark.parametrize(("version", "value", "said"), [
    ("0.34.0", "0", "has no V1 model runner and refuses any value but 1"),
    ("0.21.0", "1", "whose memory terms were read from 0.22 on"),
    ("0.26.0", "on", "raises ValueError"),
])
def test_vllm_use_v2_model_runner_cannot_predict(version, value, said):
    why = runner_v2(rules_on_device(version, L4), False, value)[1]
    assert why is not None and why.startswith("cannot predict VLLM_USE_V2_MODEL_RUNNER") and said in why, why
