"""The literal a refused spelling means (``remedies.budget.spelling``): the newest vLLM's reading, IEC binary
multiples, integral decimals; nothing for text with no clear number."""

from __future__ import annotations

import pytest

from vllm_remedy.remedies.budget.spelling import meaning, respell


@pytest.mark.parametrize(("text", "number"), [("16Ki", 16384), ("16KiB", 16384), ("1Mi", 2**20), ("16k", 16000),
                                              ("16K", 16384), ("1.5K", 1536), ("16384.0", 16384), ("1e4", 10000),
                                              (" 8192 ", 8192), ("lots", None), ("1.5Ki7", None), ("0.3Ki", None),
                                              ("16ki", 16384), ("1k", 1000)])
def test_meaning(text, number):
    assert meaning("max-model-len", text) == number


def test_only_values_the_release_refuses_are_respelled():
    flags, found = respell({"max-model-len": "16k", "max-num-seqs": "1k", "gpu-memory-utilization": "0.9"}, "0.8.3")
    assert flags == {"max-model-len": "16000", "max-num-seqs": "1000", "gpu-memory-utilization": "0.9"}
    assert [(r.flag, r.typed, r.literal) for r in found] == [("max-model-len", "16k", "16000"),
                                                             ("max-num-seqs", "1k", "1000")]
    assert respell({"max-model-len": "16k"}, "0.11.0") == ({"max-model-len": "16k"}, [])  # 0.11 reads it
    assert respell({"max-model-len": "auto"}, "0.14.0") == ({"max-model-len": "auto"}, [])
    flags, found = respell({"max-model-len": "auto"}, "0.8.5")
    assert flags == {} and found[0].literal is None
