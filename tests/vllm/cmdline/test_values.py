"""One reading of flag values: the memory model and the policy agree on what a manifest's text means."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.policy import parse_flag_int
from vllm_remedy.vllm.cmdline.values import parse_float, parse_int, vllm_int
from vllm_remedy.vllm.memory import EngineSettings


@pytest.mark.parametrize(("text", "number"), [("16384", 16384), ("16k", 16000), ("16K", 16384), ("16Ki", None),
                                              ("-1", -1), ("auto", None), ("$(LEN)", None), ("1.5", None),
                                              ("1.5k", 1500), ("1.5K", None), ("25.6k", 25600), ("1m", 10**6),
                                              ("1M", 2**20), ("2g", 2 * 10**9), ("2G", 2**31), ("1t", 10**12),
                                              ("1T", 2**40), ("-1k", None), ("16 k", None)])
def test_parse_int(text, number):
    """The newest release's human_readable_int (utils/argparse_utils.py@0.34.0): k/m/g/t decimal, K/M/G/T binary;
    no release reads Ki/Mi/Gi (the review's H6: 16Ki was read as 16384, vLLM refuses it)."""
    assert parse_int(text) == number


# What each release's argument parser makes of --max-model-len, read from its wheel (engine/arg_utils.py).
@pytest.mark.parametrize(("version", "text", "number"), [
    ((0, 8, 3), "16k", None), ((0, 8, 3), "16384", 16384),  # type=int
    ((0, 8, 4), "16k", 16000), ((0, 8, 4), "16K", 16384), ((0, 8, 4), "1.5K", None), ((0, 8, 4), "16Ki", None),
    ((0, 12, 0), "1t", None), ((0, 12, 0), "1T", None),  # the pattern matched t/T, the tables lacked them
    ((0, 13, 0), "1t", 10**12), ((0, 13, 0), "1T", 2**40),
    ((0, 34, 0), "16k", 16000), ((0, 34, 0), "16K", 16384), ((0, 34, 0), "16Ki", None), ((0, 34, 0), "16KI", None),
])
def test_each_release_reads_max_model_len_as_its_parser_does(version, text, number):
    assert vllm_int(text, "max-model-len", version) == number


def test_suffixes_only_on_the_flags_that_release_types_with_human_readable_int():
    assert vllm_int("8k", "max-num-batched-tokens", (0, 9, 0)) is None  # type=int until 0.9.1
    assert vllm_int("8k", "max-num-batched-tokens", (0, 9, 1)) == 8000
    assert vllm_int("1k", "max-num-seqs", (0, 34, 0)) is None  # type=int in every release
    assert vllm_int("8G", "kv-cache-memory-bytes", (0, 34, 0)) == 8 * 2**30


@pytest.mark.parametrize(("text", "version", "message"), [
    ("16Ki", "0.34.0", "max-model-len: vLLM 0.34.0 refuses '16Ki' at argument parsing: its suffixes are k/m/g/t "
                       "(x1000, decimals allowed) and K/M/G/T (x1024, whole numbers only), e.g. 16k = 16000, "
                       "16K = 16384"),
    ("16k", "0.8.3", "max-model-len: vLLM 0.8.3 refuses '16k' at argument parsing: it reads --max-model-len as a "
                     "plain integer (k/K/m/M/g/G suffixes from 0.8.4)"),
    ("1.5K", None, "max-model-len: vLLM unknown (rules of the newest release, 0.34.0) refuses '1.5K' at argument "
                   "parsing: its suffixes are k/m/g/t (x1000, decimals allowed) and K/M/G/T (x1024, whole numbers "
                   "only), e.g. 16k = 16000, 16K = 16384"),
])
def test_a_spelling_the_release_refuses_is_a_clear_error(text, version, message):
    with pytest.raises(UserError) as err:
        EngineSettings.from_flags({"max-model-len": text}, version)
    assert str(err.value) == message


@pytest.mark.parametrize(("version", "text", "number"), [("0.8.5", "16k", 16000), ("0.8.5", "16K", 16384),
                                                         ("0.34.0", "16K", 16384), (None, "25.6k", 25600)])
def test_a_spelling_the_release_reads_is_the_number_vllm_computes(version, text, number):
    assert EngineSettings.from_flags({"max-model-len": text}, version).max_model_len == number
    with pytest.raises(UserError, match=r"^max-num-seqs: vLLM .* refuses '1k' at argument parsing: it reads "
                                        r"--max-num-seqs as a plain integer$"):
        EngineSettings.from_flags({"max-num-seqs": "1k"}, version)


def test_parse_float_rejects_non_finite():
    assert parse_float("0.9") == 0.9
    assert parse_float("nan") is None and parse_float("inf") is None and parse_float("x") is None


@pytest.mark.parametrize("text", ["16k", "16K", "8192"])
def test_memory_model_and_policy_read_lengths_alike(text):
    settings = EngineSettings.from_flags({"max_model_len": text, "tp": "1"}, "0.8.5")
    assert settings.max_model_len == parse_flag_int(text)


def test_negated_boolean_key_is_not_collapsed_onto_the_flag():
    settings = EngineSettings.from_flags({"no-enable-chunked-prefill": "true"}, "0.8.5")
    assert settings.enable_chunked_prefill is False


def test_placeholder_length_is_a_clear_error():
    with pytest.raises(UserError, match=r"max-model-len: '\$\(LEN\)' is not an integer"):
        EngineSettings.from_flags({"max-model-len": "$(LEN)"}, "0.8.5")
