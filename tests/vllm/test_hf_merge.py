"""``vllm.hf_merge``, pure: which dicts merge, which replace, and which RoPE dicts reach the length, per release."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import hf_merge

TEXT = {"model_type": "qwen2", "hidden_size": 2048, "max_position_embeddings": 32768, "rope_theta": 1e6}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


@pytest.mark.parametrize(("version", "expected"), [((0, 11, 0), {"bits": 8}), ((0, 12, 0), {"bits": 8}),
                                                   ((0, 34, 0), {"bits": 8})])
def test_a_plain_dict_replaces_in_every_release(version, expected):
    """quantization_config is a dict attribute, not a PretrainedConfig: ``setattr`` from 0.12.0 as ``update`` before."""
    got = hf_merge.apply({**TEXT, "quantization_config": AWQ}, {"quantization_config": {"bits": 8}}, version)
    assert got.config["quantization_config"] == expected and got.paths == [("quantization_config",)]


def test_a_sub_config_merges_from_0_12_by_name_or_model_type():
    config = {"thinker_config": {**TEXT}, "text_config": {"hidden_size": 1024, "num_hidden_layers": 8}}
    got = hf_merge.apply(config, {"thinker_config": {"hidden_size": 4096}, "text_config": {"num_hidden_layers": 4}},
                         (0, 12, 0))
    assert got.config["thinker_config"] == {**TEXT, "hidden_size": 4096}
    assert got.config["text_config"] == {"hidden_size": 1024, "num_hidden_layers": 4}
    assert sorted(got.paths) == [("text_config", "num_hidden_layers"), ("thinker_config", "hidden_size")]


def test_a_rope_dict_set_on_a_sub_config_without_one_is_inert_with_transformers_4():
    got = hf_merge.apply({"text_config": TEXT}, {"text_config": {"rope_scaling": YARN}}, (0, 19, 0))
    assert "rope_scaling" not in got.config["text_config"] and got.inert == [("text_config", "rope_scaling")]


def test_transformers_5_builds_rope_parameters_from_rope_theta_which_is_not_modelled():
    with pytest.raises(UserError, match="builds from rope_theta, which this tool does not model"):
        hf_merge.apply({"text_config": TEXT}, {"text_config": {"rope_scaling": YARN}}, (0, 24, 0))


@pytest.mark.parametrize(("version", "major"), [((0, 19, 0), 4), ((0, 20, 0), None), ((0, 23, 0), None),
                                                ((0, 24, 0), 5)])
def test_the_transformers_major_each_release_requires(version, major):
    assert hf_merge.transformers_major(version) == major


def test_rope_parameters_replaces_what_the_length_reads_and_needs_rope_type():
    got = hf_merge.apply({**TEXT, "rope_scaling": YARN}, {"rope_parameters": {"rope_type": "linear", "factor": 2.0}},
                         (0, 12, 0))
    assert got.config["rope_scaling"] == {"rope_type": "linear", "factor": 2.0} and not got.inert
    with pytest.raises(UserError, match=r"KeyError: 'rope_type'"):
        hf_merge.apply(TEXT, {"rope_parameters": {"type": "linear", "factor": 2.0}}, (0, 12, 0))


def test_0_6_4_sets_only_keys_the_config_class_holds():
    """AutoConfig kwargs: a key config.json holds is set; one it lacks may be a class default or dropped."""
    assert hf_merge.apply(TEXT, {"hidden_size": 1024}, (0, 6, 4)).config["hidden_size"] == 1024
    with pytest.raises(UserError, match="set only a key the config class holds"):
        hf_merge.apply(TEXT, {"sliding_window": 4096}, (0, 6, 4))
    assert hf_merge.apply(TEXT, {"sliding_window": 4096}, (0, 6, 5)).config["sliding_window"] == 4096
