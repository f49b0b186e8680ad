"""``vllm.hf_overrides``, pure: a nested dict merges into the config it names from 0.12.0 (``_update_nested``,
config/model.py@0.12.0) and replaced it before; flat keys replace; a key the spec builder does not read is named."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.catalog import ModelSpec

TEXT = {"hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8,
        "intermediate_size": 8192, "vocab_size": 32000, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}
CONFIG = {"architectures": ["LlamaForCausalLM"], "text_config": TEXT}
NESTED = '{"text_config": {"num_hidden_layers": 8}}'


def _spec(model: str) -> ModelSpec:
    hf_overrides.remember(model, None, CONFIG)
    return ModelSpec.from_hf_config(CONFIG, name=model)


def test_nested_keys_merge_from_0_12():
    got = hf_overrides.applied(_spec("acme/nested"), "acme/nested", None, {"hf-overrides": NESTED}, (0, 12, 0))
    assert got.num_layers == 8 and got.hidden_size == 2048


def test_before_0_12_a_dict_replaces_the_nested_config():
    merged = hf_overrides.merged(CONFIG, {"text_config": {"num_hidden_layers": 8}}, (0, 11, 0))
    assert merged["text_config"] == {"num_hidden_layers": 8}


def test_an_unread_nested_key_is_named():
    with pytest.raises(UserError, match=r"key\(s\) text_config.foo_bar: not read"):
        hf_overrides.applied(_spec("acme/foo"), "acme/foo", None,
                             {"hf-overrides": '{"text_config": {"foo_bar": 3}}'}, (0, 34, 0))


def test_a_variable_is_not_seen():
    with pytest.raises(UserError, match="a value this tool cannot see"):
        hf_overrides.applied(_spec("acme/var"), "acme/var", None, {"hf-overrides": "$(OVERRIDES)"}, (0, 34, 0))
