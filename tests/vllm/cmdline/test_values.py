"""One reading of flag values: the memory model and the policy agree on what a manifest's text means."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.policy import parse_flag_int
from vllm_remedy.vllm.cmdline.values import parse_float, parse_int
from vllm_remedy.vllm.memory import EngineSettings


@pytest.mark.parametrize(("text", "number"), [("16384", 16384), ("16k", 16000), ("16Ki", 16384), ("-1", -1),
                                              ("auto", None), ("$(LEN)", None), ("1.5", None), ("1.5k", 1500)])
def test_parse_int(text, number):
    assert parse_int(text) == number


def test_parse_float_rejects_non_finite():
    assert parse_float("0.9") == 0.9
    assert parse_float("nan") is None and parse_float("inf") is None and parse_float("x") is None


@pytest.mark.parametrize("text", ["16k", "16Ki", "8192"])
def test_memory_model_and_policy_read_lengths_alike(text):
    settings = EngineSettings.from_flags({"max_model_len": text, "tp": "1"}, "0.8.5")
    assert settings.max_model_len == parse_flag_int(text)


def test_negated_boolean_key_is_not_collapsed_onto_the_flag():
    settings = EngineSettings.from_flags({"no-enable-chunked-prefill": "true"}, "0.8.5")
    assert settings.enable_chunked_prefill is False


def test_placeholder_length_is_a_clear_error():
    with pytest.raises(UserError, match=r"max-model-len: '\$\(LEN\)' is not an integer"):
        EngineSettings.from_flags({"max-model-len": "$(LEN)"}, "0.8.5")
