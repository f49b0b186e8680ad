"""max_len_exceeds_model, the defects of its hostile review: --disable-sliding-window, a config.json with no length
key, releases before VLLM_ALLOW_LONG_MAX_MODEL_LEN, and the planner under the env var.

Each rule is read from the wheels' ``_get_and_verify_max_len`` (vllm/config.py@0.5.0-0.9.2,
vllm/config/__init__.py@0.10.x, vllm/config/model.py@0.11+) and vllm/envs.py; ``vllm.model_len`` says which.
"""

from __future__ import annotations

import pytest

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog, model_len
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Outcome

GEMMA2 = "google/gemma-2-9b-it"  # max_position_embeddings 8192, sliding_window 4096
QWEN7 = "Qwen/Qwen2.5-7B-Instruct"  # max_position_embeddings 32768
# max_position_embeddings null: LlamaConfig keeps the None (a key left out would be its class default, 2048:
# vllm.config_defaults), so vLLM finds no length key.
NO_KEY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
          "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 8192, "vocab_size": 32000,
          "torch_dtype": "bfloat16", "max_position_embeddings": None}


def flags(length: str, version: str = "0.11.0", allow: bool = False, **more: str) -> EngineSettings:
    return EngineSettings.from_flags({"max-model-len": length, **more}, version,
                                     {model_len.INPUT: "true"} if allow else None)


# --- H5: --disable-sliding-window caps the maximum at the window (before the rope factor) ---------------------------

@pytest.mark.parametrize(("version", "derived"), [("0.6.0", 4096), ("0.11.0", 4096), ("0.12.0", 4096.0),
                                                  ("0.29.0", 4096.0)])
def test_disable_sliding_window_caps_the_maximum_at_the_window(version, derived):
    """gemma-2-9b-it --max-model-len 8192 --disable-sliding-window: "... greater than the derived max_model_len
    (sliding_window=4096.0 ..." on 0.12+ (the window, then times the 1.0 of its RoPE parameters)."""
    model = catalog.model(GEMMA2)
    forced = version == "0.6.0"  # 0.5.5-0.6.3 cap Gemma 2 at its window without the flag (vllm.gemma2_cap)
    assert (model_len.refused(model, 8192, version, False) is not None) is forced
    lim = model_len.refused(model, 8192, version, False, disable_sliding_window=True)
    assert lim is not None and (lim.key, lim.derived, lim.tokens) == ("sliding_window", derived, 4096)
    assert type(lim.derived) is type(derived)
    assert model_len.refused(model, 4096, version, False, disable_sliding_window=True) is None


def test_a_window_above_the_maximum_changes_nothing():
    model = catalog.model(QWEN7)  # Qwen2's sliding_window is off (use_sliding_window false)
    assert model_len.refused(model, 65536, "0.11.0", False, True).key == "max_position_embeddings"


def test_the_flag_is_read_from_the_command_line():
    assert flags("8192", **{"disable-sliding-window": "true"}).disable_sliding_window
    assert not flags("8192").disable_sliding_window


def test_the_planner_stays_within_the_window_when_the_flag_is_set():
    model, gpu = catalog.model(GEMMA2), catalog.gpu("NVIDIA-H100-80GB-HBM3")
    plan = plan_budget(BudgetRequest(model, gpu, flags("8192", **{"disable-sliding-window": "true"})))
    assert "max-model-len 8192 is above the allowed 4096" in plan.problem, plan.problem
    assert all(int(s.set.get("max-model-len", "0")) <= 4096 for s in plan.steps), [s.set for s in plan.steps]


def test_estimate_refuses_above_the_window_when_the_flag_is_set():
    model, gpu = catalog.model(GEMMA2), catalog.gpu("NVIDIA-H100-80GB-HBM3")
    got = estimate(model, gpu, flags("8192", "0.12.0", **{"disable-sliding-window": "true"}))
    assert got.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL


# --- M1: no length key at all: vLLM takes the user's value ---------------------------------------------------------

def test_a_config_without_a_length_key_refuses_nothing():
    """vLLM: "If max_model_len is specified, we use it" when no key is found; the 2048 only when it is unset."""
    model = ModelSpec.from_hf_config(NO_KEY, "acme/nokey")
    assert model.max_model_len == 2048  # the default length, when --max-model-len is not given
    assert model_len.refused(model, 8192, "0.11.0", False) is None
    got = estimate(model, catalog.gpu("NVIDIA-L40S"), flags("8192"))
    assert got.outcome is Outcome.FITS and got.max_model_len == 8192
    assert model_len.cap(model, "0.11.0", False) is None


def test_the_planner_keeps_the_asked_length_of_a_model_without_a_length_key():
    model = ModelSpec.from_hf_config(NO_KEY, "acme/nokey")
    plan = plan_budget(BudgetRequest(model, catalog.gpu("NVIDIA-L40S"), flags("8192")))
    assert "above the allowed" not in plan.problem, plan.problem
    assert all(s.set.get("max-model-len") != "2048" for s in plan.steps), [s.set for s in plan.steps]


# --- M6: releases before the env var refuse whatever it says --------------------------------------------------------

@pytest.mark.parametrize(("version", "refused"), [("0.5.0", True), ("0.5.3", True), ("0.5.4", False),
                                                  ("0.6.0", False)])
def test_the_env_var_counts_only_from_0_5_4(version, refused):
    """vllm/envs.py@0.5.3 has no VLLM_ALLOW_LONG_MAX_MODEL_LEN; config.py@0.5.4 first reads it."""
    model = catalog.model(QWEN7)
    assert (model_len.refused(model, 65536, version, allowed=True) is not None) is refused
    assert model_len.refused(model, 65536, version, allowed=False) is not None


def test_the_refusal_before_0_5_4_says_nothing_lets_it_start():
    text = model_len.refusal(catalog.model(QWEN7), flags("65536", "0.5.3", allow=True))
    assert text is not None and "predates VLLM_ALLOW_LONG_MAX_MODEL_LEN" in text


# --- M8: with the env var the model's maximum is no cap for the planner ---------------------------------------------

def test_the_planner_does_not_cut_an_allowed_length_to_the_models_maximum():
    model, gpu = catalog.model(QWEN7), catalog.gpu("NVIDIA-H100-80GB-HBM3")
    plan = plan_budget(BudgetRequest(model, gpu, flags("65536", allow=True)))
    assert "above the allowed" not in plan.problem, plan.problem
    assert all(s.set.get("max-model-len") != "32768" for s in plan.steps), [s.set for s in plan.steps]
    refused = plan_budget(BudgetRequest(model, gpu, flags("65536", "0.5.3", allow=True)))  # no env var on 0.5.3
    assert "max-model-len 65536 is above the allowed 32768" in refused.problem, refused.problem


# --- L2: the refusal's words name the model's maximum and the env var wherever a prediction forbids a write ---------

def test_a_refused_template_says_the_maximum_and_the_env_var():
    from vllm_remedy.remedies.predict import failed_prediction, predict_template

    box = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve", QWEN7],
           "args": ["--max-model-len", "65536"]}
    spec = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [box]}
    said = failed_prediction(predict_template({"spec": spec}))
    assert said is not None and "above the model's 32,768" in said and "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in said, said
    box["env"] = [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    got = predict_template({"spec": spec})
    assert got.estimate is None and "secretKeyRef" in got.note, got.note  # unknown, not a refusal
