"""A RoPE scaling type the release's ``get_rope`` does not build, and a ``rope_scaling`` that is no JSON object.

The review (hostile 11, #2 and #3): a config.json or ``--hf-overrides`` with ``rope_scaling = {"rope_type": "foo"}``
was predicted to fit, but every release's ``get_rope`` raises "Unknown RoPE scaling type foo" while it builds the model
(``rope_dispatch``); ``"rope_scaling": "linear"`` was sized as no scaling, but transformers' config class fails on it
before vLLM has a config (``config_bounds.rope``). Both are now one "cannot predict" line (exit 2), never "fits"; a
refusal vLLM prints before building the model (the max length) is still predicted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
        "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256, "num_key_value_heads": 8,
        "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}


def _estimate(tmp_path: Path, scaling: object, version: str, max_len: int = 4096):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BASE, "rope_scaling": scaling}))
    return run_cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L40S", "--vllm-version", version,
                   "--max-model-len", str(max_len))


@pytest.mark.parametrize("version", ["0.6.3", "0.10.0", "0.30.0"])
def test_an_unknown_rope_type_in_config_json_is_not_a_fit(tmp_path, version):
    got = _estimate(tmp_path, {"rope_type": "foo", "factor": 2.0}, version)
    assert got.returncode == 2, got.stdout
    assert (f"cannot predict LlamaForCausalLM: rope_scaling type 'foo': vLLM {version} raises 'Unknown RoPE scaling "
            "type foo' while building the model") in got.stderr


def test_an_unknown_rope_type_through_hf_overrides_is_not_a_fit():
    got = run_cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--vllm-version", "0.8.5", "--max-model-len",
                  "16384", "--hf-overrides", '{"rope_scaling": {"rope_type": "foo", "factor": 2.0}}')
    assert got.returncode == 2, got.stdout
    assert "vLLM 0.8.5 raises 'Unknown RoPE scaling type foo'" in got.stderr


def test_ntk_is_built_from_0_9_0_only(tmp_path):
    """``ntk`` enters get_rope's dispatch in 0.9.0 (rotary_embedding.py@0.9.0; absent @0.8.5)."""
    old = _estimate(tmp_path, {"rope_type": "ntk", "factor": 2.0}, "0.8.5")
    assert old.returncode == 2 and "Unknown RoPE scaling type ntk" in old.stderr
    new = _estimate(tmp_path, {"rope_type": "ntk", "factor": 2.0}, "0.9.0")
    assert new.returncode == 0, new.stderr
    assert new.stdout.startswith("outcome             fits"), new.stdout


def test_the_length_refusal_vllm_prints_first_still_stands(tmp_path):
    got = _estimate(tmp_path, {"rope_type": "foo", "factor": 2.0}, "0.10.0", max_len=40000)
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("outcome             max_len_exceeds_model"), got.stdout


@pytest.mark.parametrize(("scaling", "kind"), [("linear", "string"), (["linear"], "array"), (2.0, "number")])
def test_a_rope_scaling_that_is_no_object_is_not_sized_as_no_scaling(tmp_path, scaling, kind):
    for max_len in (4096, 16384):  # "fits", and max_len_exceeds_model at the unscaled 8,192, before
        got = _estimate(tmp_path, scaling, "0.10.0", max_len)
        assert got.returncode == 2, got.stdout
        assert f"cannot predict LlamaForCausalLM: rope_scaling is a JSON {kind} ({scaling!r}), not an object" \
            in got.stderr
