"""The V1 sampler warm-up takes FlashInfer's kernel (no sort) where FlashInfer imports, before 0.11.1 only."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import terms
from vllm_remedy.vllm.memory.settings import EngineSettings, resolve

QWEN = catalog.model("Qwen/Qwen2.5-7B-Instruct")
A100 = catalog.gpu("NVIDIA-A100-SXM4-80GB")


def _activation(version: str, flashinfer: str | None) -> float:
    inputs = {"flashinfer": flashinfer} if flashinfer is not None else {}
    return terms.activation_gib(QWEN, resolve(QWEN, A100, EngineSettings.from_flags({"max-model-len": "16384"}, version,
                                                                                     inputs)))


def test_flashinfer_replaces_the_sort_before_0_11_1():
    # 256 sequences x 152,064 logits: the sort's 38 B each against FlashInfer's bf16 logits + 3 fp32 buffers (14 B).
    saved = _activation("0.10.1.1", None) - _activation("0.10.1.1", "true")
    assert saved == pytest.approx(256 * 152064 * (38 - 14) / GIB)


@pytest.mark.parametrize("version", ["0.11.1", "0.19.0", "0.7.3"])
def test_flashinfer_changes_nothing_where_it_is_opt_in_or_v0(version: str):
    assert _activation(version, "true") == _activation(version, None)


def test_unknown_install_is_sized_as_the_sort():
    assert _activation("0.10.1.1", None) == _activation("0.10.1.1", "false")
