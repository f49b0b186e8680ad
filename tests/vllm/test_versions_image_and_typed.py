"""Versions from image tags and from the command line (hostile review 2026-12-05, findings 10 and 11).

Since Model Runner V2 the version decides the budget's shape (graphs inside or outside it, the 0.92 default, the
batch-token default), so reading a product's or a date's number as a vLLM release is a wrong prediction, and a
typo in ``--vllm-version`` must stop the command rather than size another release.
"""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.versions import typed_version, version_from_image


@pytest.mark.parametrize("image", [
    "registry.redhat.io/rhaiis/vllm-cuda-rhel9:3.0.0",      # Red Hat AI Inference Server 3.0 (ships vLLM 0.9)
    "nvcr.io/nvidia/tritonserver:24.05-vllm-python-py3",   # NGC Triton's vLLM backend, a date tag
    "myorg/vllm:2024.11",                                   # a custom date tag
    "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
    "myorg/vllm:v1.2.3",
])
def test_a_tag_whose_major_is_not_0_is_an_unknown_version(image: str) -> None:
    """Every vLLM release is 0.x; README: custom tags count as unknown (the newest rules, labelled so)."""
    assert version_from_image(image) is None, version_from_image(image)


@pytest.mark.parametrize(("image", "version"), [
    ("vllm/vllm-openai:v0.30.0", "0.30.0"), ("vllm/vllm-openai:v0.8.5.post1", "0.8.5.post1"),
    ("vllm/vllm-openai:v0.26.1rc1", "0.26.1rc1"), ("myorg/vllm:0.9.2-cu128", "0.9.2"),
    ("registry:5000/vllm/vllm-openai:v0.22.1", "0.22.1"), ("vllm/vllm-openai:v0.10.1.1", "0.10.1.1"),
    ("vllm/vllm-openai:v0.35.0rc1", "0.35.0rc1"),  # as tagged: an rc is not its release (check showed 0.35.0)
])
def test_vllm_release_tags_still_read(image: str, version: str) -> None:
    assert version_from_image(image) == version


@pytest.mark.parametrize("text", ["0.8.5", "v0.8.5", "0.8.5.post1", "0.26.1rc1", "0.26.1rc1.dev156+g0eec856cc",
                                  "0.30.0", "0.10.1.1", "0.9", " 0.8.5 "])
def test_a_typed_version_is_accepted_whole(text: str) -> None:
    assert typed_version(text) == text.strip()


@pytest.mark.parametrize("text", ["0.3O.0", "foo", "", "0.8.5x", "0.8.5 junk", "0.8.5.post", "latest", "0..8",
                                  "0.8.5+", "8"])
def test_a_malformed_typed_version_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a vLLM version"):
        typed_version(text)
