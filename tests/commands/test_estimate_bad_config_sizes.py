"""A --model-config whose stated sizes are zero, negative or not numbers is refused in one line naming the file
and the key: ``max_position_embeddings: 0`` gave "fits" with max_model_len 0, ``num_key_value_heads: 0`` a cache
sized on some other head count."""

from __future__ import annotations

import json

import pytest

from vllm_remedy import hub
from vllm_remedy.errors import UserError

MISTRAL = {"architectures": ["MistralForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 32768, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}


@pytest.mark.parametrize(("change", "message"), [
    ({"max_position_embeddings": 0}, "max_position_embeddings must be a positive integer, got 0"),
    ({"max_position_embeddings": -5}, "max_position_embeddings must be a positive integer, got -5"),
    ({"max_position_embeddings": 0.5}, "max_position_embeddings must be a positive integer, got 0.5"),
    ({"max_position_embeddings": "lots"}, "max_position_embeddings must be a positive integer, got 'lots'"),
    ({"seq_length": 0}, "seq_length must be a positive integer, got 0"),
    ({"num_key_value_heads": 0}, "num_key_value_heads must be a positive integer, got 0"),
    ({"num_key_value_heads": -1}, "num_key_value_heads must be a positive integer, got -1"),
    ({"num_key_value_heads": True}, "num_key_value_heads must be a positive integer, got True"),
    ({"head_dim": 0}, "head_dim must be a positive integer, got 0"),
    ({"intermediate_size": -1}, "intermediate_size must be a positive integer, got -1"),
    ({"num_local_experts": -1, "num_experts_per_tok": 2}, "num_local_experts must be an integer >= 0, got -1"),
    ({"sliding_window": -1}, "sliding_window must be an integer >= 0, got -1"),
    ({"rope_scaling": {"type": "linear", "factor": 0}}, "rope_scaling.factor must be a positive number, got 0"),
    ({"rope_scaling": {"type": "linear", "factor": -2.0}}, "rope_scaling.factor must be a positive number, got -2.0"),
])
def test_a_stated_size_that_is_not_positive_is_refused_naming_file_and_key(change, message):
    with pytest.raises(UserError) as refused:
        hub.spec_from_json(json.dumps({**MISTRAL, **change}), "cfg/config.json", "cfg/config.json")
    assert str(refused.value) == f"cfg/config.json: {message}"


@pytest.mark.parametrize(("text", "message"), [
    ('"head_dim": 1e400', "not a usable model config (head_dim is inf)"),
    ('"max_position_embeddings": NaN', "not a usable model config (max_position_embeddings is nan)"),
])
def test_a_non_finite_size_names_its_key(text, message):
    with pytest.raises(UserError) as refused:
        hub.spec_from_json(json.dumps(MISTRAL)[:-1] + ", " + text + "}", "cfg", "cfg")
    assert str(refused.value) == f"cfg: {message}"


def test_a_nested_text_config_is_checked_too():
    config = {"architectures": ["Gemma3ForConditionalGeneration"],
              "text_config": {**MISTRAL, "model_type": "gemma3_text", "num_key_value_heads": 0}}
    with pytest.raises(UserError, match=r"^cfg: num_key_value_heads must be a positive integer, got 0$"):
        hub.spec_from_json(json.dumps(config), "cfg", "cfg")


@pytest.mark.parametrize("change", [
    {"head_dim": None}, {"sliding_window": None}, {"sliding_window": 0}, {"num_local_experts": 0},
    {"max_position_embeddings": 32768.0}, {"rope_scaling": {"type": "yarn", "factor": 4.0,
                                                              "original_max_position_embeddings": 32768}},
])
def test_null_zero_counts_and_float_sizes_still_read(change):
    spec = hub.spec_from_json(json.dumps({**MISTRAL, **change}), "cfg", "cfg")
    assert spec.num_kv_heads == 8 and spec.max_model_len >= 32768


@pytest.mark.parametrize("command", ["estimate", "plan"])
@pytest.mark.parametrize("key", ["max_position_embeddings", "num_key_value_heads"])
def test_the_reviewers_zero_configs_are_one_line_exit_2(cli, tmp_path, command, key):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**MISTRAL, key: 0}))
    got = cli(command, "--model-config", str(path), "--gpu", "NVIDIA-L4")
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr == f"vllm-remedy: error: {path}: {key} must be a positive integer, got 0\n"
