"""Which vLLM an image runs, read from its tag only where the tag numbers vLLM (identity review 6).

``lmcache/vllm-openai:v0.3.7`` is LMCache 0.3.7 (vLLM never released a 0.3.7), so it was sized by 0.3.7's rules (an
old V0 budget) where the version is unknown; ROCm's ``rocm/vllm`` tags name vLLM's version after ROCm's and were read
as no version; vLLM's own image tagged past 0.x is a release newer than modelled, not unknown.
"""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.versions import rules, version_from_image


@pytest.mark.parametrize(("image", "version", "label"), [
    ("lmcache/vllm-openai:v0.3.7", None, "unknown (rules of the newest release, 0.34.0)"),
    ("docker.io/lmcache/vllm-openai:latest-nightly", None, "unknown (rules of the newest release, 0.34.0)"),
    ("rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909", "0.10.1", "0.10.1"),
    ("docker.io/rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521", "0.8.5", "0.8.5"),
    ("rocm/vllm:latest", None, "unknown (rules of the newest release, 0.34.0)"),
    ("vllm/vllm-openai:v1.0.0", "1.0.0", "1.0.0 (rules: extrapolated from 0.34.0)"),
    ("registry.example.com/mirror/vllm/vllm-openai:v0.30.0", "0.30.0", "0.30.0"),
    ("myorg/vllm:0.9.2-cu128", "0.9.2", "0.9.2"),  # a custom build tagged with the vLLM it packages
    ("myorg/vllm:v1.2.3", None, "unknown (rules of the newest release, 0.34.0)"),
])
def test_the_tag_is_a_vllm_version_only_where_it_numbers_vllm(image, version, label):
    assert version_from_image(image) == version
    assert rules(version_from_image(image)).label == label


def test_a_typed_version_past_0x_is_newer_than_modelled():
    got = rules("1.0.0")
    assert (got.known, got.extrapolated, got.label) == (True, True, "1.0.0 (rules: extrapolated from 0.34.0)")
