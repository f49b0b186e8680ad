"""estimate (and check) on a --max-model-len above the model's maximum: vLLM refuses it at config time unless the
pod's env sets VLLM_ALLOW_LONG_MAX_MODEL_LEN (estimate: --allow-long-max-model-len; check: the container's env)."""

from __future__ import annotations

import json

import pytest
import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.memory import EngineSettings

QWEN7 = ["--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "NVIDIA-L40S", "--vllm-version", "0.11.0"]


def test_human_output_names_the_models_maximum(cli):
    got = cli("estimate", *QWEN7, "--max-model-len", "65536")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].split(None, 1) == ["outcome", (
        "max_len_exceeds_model: vLLM refuses --max-model-len 65,536 above the model's 32,768 "
        "(max_position_embeddings); set it at most 32,768, or run with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
        "(--allow-long-max-model-len) for a model known to take more")]
    assert "peak device memory  0.00 of 44.42 GiB" in lines  # refused before the GPU is touched


def test_json_output_carries_the_outcome_and_the_models_maximum(cli):
    got = cli("estimate", *QWEN7, "--max-model-len", "65536", "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["outcome"], data["start"], data["max_model_len"], data["model_max_len"], data["model_max_len_key"]) \
        == ("max_len_exceeds_model", "max_len_exceeds_model", 65536, 32768, "max_position_embeddings")


def test_the_env_var_input_turns_it_into_a_sized_start(cli):
    got = cli("estimate", *QWEN7, "--max-model-len", "65536", "--allow-long-max-model-len", "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["outcome"], data["max_model_len"], data["model_max_len"]) == ("fits", 65536, 32768)


def test_the_input_is_not_a_vllm_flag():
    """It states the pod's env: written into a container's argv, vLLM's parser refuses it, and so does the model."""
    with pytest.raises(UserError, match="unrecognized arguments: --allow-long-max-model-len"):
        EngineSettings.from_flags({"allow-long-max-model-len": "true"}, "0.11.0")


def _deployment(env: list[dict[str, str]]) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "qwen", "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "qwen"}},
                     "template": {"metadata": {"labels": {"app": "qwen"}},
                                  "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                           "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                                           "command": ["vllm", "serve"],
                                                           "args": ["Qwen/Qwen2.5-7B-Instruct", "--max-model-len",
                                                                    "65536"],
                                                           "env": env,
                                                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def test_check_predicts_the_refusal_and_honours_the_deployments_env(cli, tmp_path):
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(_deployment([])))
    got = cli("check", "-f", str(manifest))
    assert got.returncode == 1, got.stdout + got.stderr
    assert ("start [error]: predicted max_len_exceeds_model — max-model-len is above the model's own maximum "
            "(config.json): max-model-len 65,536") in got.stdout
    manifest.write_text(yaml.safe_dump(_deployment([{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"}])))
    got = cli("check", "-f", str(manifest))
    assert "max_len_exceeds_model" not in got.stdout, got.stdout
