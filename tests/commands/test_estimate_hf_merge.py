"""`estimate --hf-overrides` with a dict value, applied as each release applies it (``vllm.hf_merge``): before 0.12.0
every dict replaces the key; from 0.12.0 a sub-config merges, a plain dict (``rope_scaling``) is set after the RoPE
patch, where with transformers 4 the length keeps the checkpoint's RoPE and with transformers 5 it reads the dict."""

from __future__ import annotations

import json

import pytest

CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 2048, "num_hidden_layers": 24,
          "num_attention_heads": 16, "num_key_value_heads": 2, "intermediate_size": 8192, "vocab_size": 151936,
          "max_position_embeddings": 32768, "rope_theta": 1000000.0, "torch_dtype": "bfloat16",
          "tie_word_embeddings": True}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def _estimate(cli, tmp_path, config: dict, version: str, overrides: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return cli("estimate", "--model-config", str(path), "--gpu", "NVIDIA-L4", "--max-model-len", "65536",
               "--vllm-version", version, "--hf-overrides", json.dumps(overrides), "-o", "json")


@pytest.mark.parametrize(("version", "longest"), [("0.11.0", 131072), ("0.12.0", 32768), ("0.19.0", 32768),
                                                  ("0.25.0", 131072)])
def test_a_rope_scaling_dict_reaches_the_length_as_the_release_reads_it(cli, tmp_path, version, longest):
    """0.11.0 replaces rope_scaling before patching it (32768 x 4); 0.12.0-0.19.0 (transformers 4) set it after the
    patch made rope_parameters from rope_theta, so the length stays 32768 and 65536 is refused; 0.25.0 (transformers
    5) sets rope_parameters through the rope_scaling property: 131072 again."""
    got = _estimate(cli, tmp_path, CONFIG, version, {"rope_scaling": YARN})
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["model_max_len"] == longest, data
    assert (data["outcome"] == "max_len_exceeds_model") == (longest < 65536), data


def test_a_release_taking_either_transformers_major_cannot_predict_it(cli, tmp_path):
    got = _estimate(cli, tmp_path, CONFIG, "0.22.0", {"rope_scaling": YARN})
    assert got.returncode != 0 and got.stdout == "" and got.stderr.count("\n") == 1, (got.stdout, got.stderr)
    assert ("cannot predict: --hf-overrides rope_scaling: vLLM 0.22.0 runs with transformers 4.56+ or 5.5.1+"
            in got.stderr), got.stderr


@pytest.mark.parametrize(("version", "longest", "words"), [
    ("0.11.0", None, "rope_scaling should have a 'rope_type' key"),  # patch_rope_scaling_dict's refusal
    ("0.8.5", None, "reads rope_scaling['rope_type'] (KeyError: 'rope_type')"),
    ("0.12.0", 131072, None),  # set beside the rope_parameters the length reads: the checkpoint's YaRN x4 stays
    ("0.25.0", None, "reads rope_parameters['rope_type'] when deriving the length (KeyError: 'rope_type')"),
])
def test_a_partial_rope_dict_replaces_and_never_merges(cli, tmp_path, version, longest, words):
    """A checkpoint with YaRN x4 and ``{"rope_scaling": {"factor": 2}}``: no release merges the factor into the
    checkpoint's dict (the tools did from 0.12.0, giving 65536)."""
    got = _estimate(cli, tmp_path, {**CONFIG, "rope_scaling": YARN}, version, {"rope_scaling": {"factor": 2}})
    if version == "0.11.0":  # vLLM's own refusal, predicted (hf_overrides.NO_ROPE_TYPE; hostile 11 #4)
        data = json.loads(got.stdout)
        assert data["outcome"] == "config_refused" and data["refusal"] == f"ValueError: {words}", got.stdout
        return
    if words is not None:
        assert got.returncode != 0 and words in got.stderr, got.stderr
        return
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["model_max_len"] == longest, got.stdout


@pytest.mark.parametrize("version", ["0.12.0", "0.25.0"])
def test_a_rope_dict_inside_a_sub_config_merges(cli, tmp_path, version):
    """``_update_nested`` merges into the text config's own rope dict, the one the length reads (with transformers 4
    the very object the patch made rope_parameters; with 5 the property's): YaRN x2 over 32768 is 65536."""
    config = {"architectures": ["Qwen2ForCausalLM"], "text_config": {**CONFIG, "rope_scaling": YARN}}
    got = _estimate(cli, tmp_path, config, version, {"text_config": {"rope_scaling": {"factor": 2.0}}})
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["model_max_len"] == 65536, got.stdout
