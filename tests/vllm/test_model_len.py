"""max_len_exceeds_model: vLLM refuses a --max-model-len above the model's derived maximum at config time.

The rule and its wording are read from the released wheels' ``_get_and_verify_max_len`` (vllm/config.py 0.6.0-0.9.x,
vllm/config/__init__.py 0.10.x, vllm/config/model.py 0.11+); ``vllm.model_len`` says which release does what.
"""

from __future__ import annotations

import dataclasses

import pytest

from vllm_remedy.commands import diagnose
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog, model_len
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.outcomes import Failure, Outcome
from vllm_remedy.vllm.startup_log import parse_startup_log, render_startup_log

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"  # max_position_embeddings 32768, no rope scaling
BASE = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0, "torch_dtype": "bfloat16"}


def spec(**changes: object) -> ModelSpec:
    return ModelSpec.from_hf_config({**BASE, **changes}, "acme/test")


def settings(length: str | None, version: str | None = "0.11.0", allow: bool = False) -> EngineSettings:
    flags = {"max-model-len": length} if length is not None else {}
    return EngineSettings.from_flags(flags, version, {model_len.INPUT: "true"} if allow else None)


# --- the rule, release by release ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("config", "version", "key", "derived"), [
    ({}, "0.11.0", "max_position_embeddings", 32768),  # no rope_scaling before 0.12: an int
    ({}, "0.12.0", "max_position_embeddings", 32768.0),  # rope_theta alone becomes rope parameters: times 1.0
    ({"seq_length": 8192}, "0.8.5", "seq_length", 8192),  # the smallest key present wins
    ({"model_max_length": 131072}, "0.8.3", "model_max_length", 131072),  # replaces the keys' minimum
    ({"model_max_length": 131072}, "0.8.2", "max_position_embeddings", 32768),  # until 0.8.2: one more key in the min
    ({"rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}, "0.11.0",
     "max_position_embeddings", 131072.0),  # YaRN: original x factor (a float: JSON's 4.0)
    ({"rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}, "0.28.0",
     "max_position_embeddings", 32768.0),  # from 0.28 YaRN's max_position_embeddings is taken as already scaled
    ({"rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}, "0.27.0",
     "max_position_embeddings", 131072.0),
    ({"max_target_positions": 448}, "0.7.0", "max_target_positions", 448),  # a key from 0.7.0 ...
    ({"max_target_positions": 448}, "0.6.3", "max_position_embeddings", 32768),  # ... unknown to 0.6.3
    ({"rope_scaling": {"type": "dynamic", "factor": 2.0}}, "0.11.0", "max_position_embeddings", 65536.0),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}}, "0.11.0",
     "max_position_embeddings", 32768),  # llama3 (and su/longrope) already state the long length
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}}, "0.12.0",
     "max_position_embeddings", 32768.0),  # ... but from 0.12 every RoPE config is multiplied, by 1.0 here
    ({"model_type": "gemma3_text", "rope_scaling": {"rope_type": "linear", "factor": 8.0}}, "0.11.0",
     "max_position_embeddings", 32768),  # gemma3's 128K is already scaled
])
def test_the_derived_maximum_follows_each_releases_rule(config, version, key, derived):
    lim = model_len.limit(spec(**config), version)
    assert (lim.key, lim.derived, type(lim.derived)) == (key, derived, type(derived))


def test_the_derived_maximum_is_the_catalogs_default_length_where_that_rule_applies():
    """``hf_config.derived_max_model_len`` (the length vLLM uses when the flag is unset) is the 0.8-0.27 rule."""
    for model in {id(m): m for m in catalog._model_index().values()}.values():
        assert model.length is not None, model.name
        assert int(model_len.limit(model, "0.11.0").derived) == model.max_model_len, model.name


def test_a_spec_whose_length_was_replaced_keeps_its_own():
    longer = dataclasses.replace(spec(), max_model_len=65536)
    assert model_len.limit(longer, "0.11.0").tokens == 65536
    assert estimate(longer, catalog.gpu("NVIDIA-H100-80GB-HBM3"), settings("65536")).outcome is Outcome.FITS


def test_model_max_length_in_config_json_is_accepted_above_the_scaled_length():
    model = spec(model_max_length=40000, rope_scaling={"type": "linear", "factor": 0.5})  # 20000 derived
    assert model_len.refused(model, 40000, "0.11.0", allowed=False) is None
    assert model_len.refused(model, 40001, "0.11.0", allowed=False) is not None


@pytest.mark.parametrize(("value", "allowed"), [("1", True), ("true", True), (" TRUE ", True), ("0", False),
                                                ("yes", False), ("", False)])
def test_the_env_var_is_read_as_vllm_reads_it(value, allowed):
    container = {"env": [{"name": model_len.ENV, "value": value}]}
    assert (model_len.env_inputs(container) == {model_len.INPUT: "true"}) is allowed


# --- prediction ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["0.6.3", "0.8.5", "0.11.0", "0.22.0", None])
def test_estimate_predicts_the_refusal_before_any_memory(version):
    model, gpu = catalog.model(QWEN7), catalog.gpu("NVIDIA-H100-80GB-HBM3")
    est = estimate(model, gpu, settings("32769", version))
    assert est.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL and est.start == "max_len_exceeds_model"
    assert est.peak_gib == 0.0 and not est.fits  # nothing of vLLM's is on the card yet
    assert estimate(model, gpu, settings("32768", version)).outcome is Outcome.FITS


@pytest.mark.parametrize("length", [None, "auto"])
def test_an_unset_or_auto_length_is_never_refused(length):
    est = estimate(catalog.model(QWEN7), catalog.gpu("NVIDIA-L4"), settings(length, "0.14.0"))
    assert est.outcome is not Outcome.MAX_LEN_EXCEEDS_MODEL


def test_the_env_var_lets_the_start_go_on_to_the_kv_cache_check():
    model, gpu = catalog.model(QWEN7), catalog.gpu("NVIDIA-L40S")
    assert estimate(model, gpu, settings("65536")).outcome is Outcome.MAX_LEN_EXCEEDS_MODEL
    allowed = estimate(model, gpu, settings("65536", allow=True))
    assert allowed.outcome is Outcome.FITS and allowed.max_model_len == 65536
    assert estimate(model, gpu, settings("1048576", allow=True)).outcome is Outcome.MAX_LEN_EXCEEDS_KV


def test_the_planner_never_proposes_a_length_above_the_models():
    """A policy whose floor (65536) is above the model's maximum (32768): the planner's cap became the floor and it
    proposed --max-model-len 65536, a start vLLM refuses; now no rung is predicted to start. Without that floor the
    current 65536 is the refusal and every rung stays within 32768."""
    from vllm_remedy.policy import Policy

    model, gpu = catalog.model(QWEN7), catalog.gpu("NVIDIA-H100-80GB-HBM3")
    pol = Policy.from_mapping({"apiVersion": "vllm-remedy.io/v1alpha1", "kind": "Policy",
                               "flags": {"max-model-len": {"min": 65536}}})
    plan = plan_budget(BudgetRequest(model, gpu, settings("16384"), policy=pol))
    assert plan.verdict == "no_fitting_change" and not plan.steps, [s.set for s in plan.steps]
    plan = plan_budget(BudgetRequest(model, gpu, settings("65536")))
    assert plan.current.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL and plan.steps
    for step in plan.steps:
        assert step.prediction.outcome is Outcome.FITS and step.prediction.max_model_len <= 32768, step


# --- the log ------------------------------------------------------------------------------------------------------

# vLLM's own words, as vllm-project/vllm#19660 quotes them from a 0.9.x serve of BAAI/bge-reranker-base (512
# positions) with --max-model-len 513 (pydantic's input_value elided there, as here).
PR_19660 = """\
  File "/home/yeq/uv_env/dsvllm/lib/python3.12/site-packages/pydantic/_internal/_dataclasses.py", line 123, in __init__
    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)
pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, User-specified max_model_len (513) is greater than the derived max_model_len \
(max_position_embeddings=512 or model_max_length=None in model's config.json). This may lead to incorrect model \
outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 \
[type=value_error, input_value=ArgsKwargs((), {'model': ...}), input_type=ArgsKwargs]
"""
# The plain ValueError of 0.6.0-0.9.0 (vllm/config.py), a YaRN model's scaled float in it.
PLAIN = """\
INFO 05-20 10:01:02 api_server.py:712] vLLM API server version 0.8.5
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/vllm/config.py", line 3001, in _get_and_verify_max_len
    raise ValueError(
ValueError: User-specified max_model_len (262144) is greater than the derived max_model_len \
(max_position_embeddings=131072.0 or model_max_length=None in model's config.json). This may lead to incorrect \
model outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
"""


@pytest.mark.parametrize(("text", "asked", "derived"), [(PR_19660, 513, 512), (PLAIN, 262144, 131072)])
def test_vllms_own_error_is_classified_with_its_numbers(text, asked, derived):
    report = parse_startup_log(text)
    assert report.failure is Failure.MAX_LEN_EXCEEDS_MODEL
    assert report.failure_detail == {"max_model_len": asked, "max_len_key": "max_position_embeddings",
                                     "derived_max_model_len": derived, "model_max_length": None}
    assert diagnose.hint(report) == (f"step 1: roll back to the last known-good revision, then set --max-model-len ≤ "
                                     f"{derived} (the model's max_position_embeddings; it asked for {asked})")


def test_the_warning_the_env_var_leaves_is_not_a_failure():
    """With VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vLLM logs the same words at WARNING and starts."""
    text = ("WARNING 09-30 08:00:01 [model.py:1907] User-specified max_model_len (65536) is greater than the derived "
            "max_model_len (max_position_embeddings=32768 or model_max_length=None in model's config.json). "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.\n"
            "INFO 09-30 08:00:09 [api_server.py:1]  Starting vLLM API server 0 on http://0.0.0.0:8000\n")
    assert parse_startup_log(text).failure is Failure.NONE


@pytest.mark.parametrize("version", ["0.6.3", "0.8.5", "0.9.0", "0.9.1", "0.10.1", "0.10.2", "0.22.0", "0.34.0"])
def test_rendered_refusals_read_back_in_every_releases_form(version):
    text = render_startup_log(version, model=QWEN7, weights_gib=0.0, kv_cache_gib=None, max_model_len=65536,
                              total_gpu_gib=44.42, failure=Failure.MAX_LEN_EXCEEDS_MODEL,
                              failure_detail=model_len.detail(model_len.limit(catalog.model(QWEN7), version), 65536))
    report = parse_startup_log(text)
    assert report.failure is Failure.MAX_LEN_EXCEEDS_MODEL and report.failure_detail["derived_max_model_len"] == 32768
    assert "Initializing" not in text and "Starting to load model" not in text  # refused before the engine exists
    assert ("pydantic_core._pydantic_core.ValidationError" in text) is (version not in ("0.6.3", "0.8.5", "0.9.0"))
    assert ("extreme caution" in text) is (version not in ("0.6.3", "0.8.5", "0.9.0", "0.9.1", "0.10.1"))


def test_the_refusal_prints_a_whole_derived_maximum_as_an_integer():
    """vLLM's own message says 131072.0 (a float once a rope factor multiplied it) and the rendered log keeps that;
    this tool's sentence says 131072 (third review L3)."""
    yarn = spec(rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
    assert model_len.limit(yarn, "0.11.0").derived_text == "131072.0"  # vLLM's words, kept for the rendered log
    said = model_len.refusal(yarn, settings("200000"))
    assert said is not None and "(max_position_embeddings=131072);" in said, said
    assert "(max_position_embeddings=32768);" in (model_len.refusal(spec(), settings("200000", "0.12.0")) or "")
