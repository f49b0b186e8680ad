"""A policy's ``model_config`` stands in only for the model it is of (hostile review 15b, F15; ``hub.policy_copy``):
the model ``model_config.model`` or ``target.models`` names, the config's own ``_name_or_path``, or any local path
model (``--model /models/llama``: the policy's, its main use). Before, a 70B repository id passed `check` as "fits",
sized from a 1.7B config, because the policy's copy was applied to whatever model the pod named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID

BIG = "acme/Big-70B-Instruct"


def deployment(model: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "big", "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "big"}},
                     "template": {"metadata": {"labels": {"app": "big"}}, "spec": {
                         "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                         "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.1",
                                         "command": ["vllm", "serve"],
                                         "args": [model, "--max-model-len", "8192", "--gpu-memory-utilization", "0.90"],
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def check(tmp_path: Path, model: str, policy: str, config: dict | None = None) -> tuple[int, str]:
    """`check` offline with an empty Hugging Face cache: only the policy's copy can size the model."""
    (tmp_path / "smol-config.json").write_text(json.dumps(config or SMOLLM2_CONFIG))
    (tmp_path / "mc.yaml").write_text("extends: default\n" + policy)
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(deployment(model)))
    saved = dict(os.environ)
    os.environ.update({"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-empty")})
    try:
        got = run_cli("check", "-f", str(tmp_path / "big.yaml"), "--policy", str(tmp_path / "mc.yaml"))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout + got.stderr


def test_a_config_the_policy_names_for_no_model_does_not_size_another_repository(tmp_path):
    code, out = check(tmp_path, BIG, "model_config: {path: smol-config.json}\n")
    assert code == 1, out
    assert "fits" not in out, out
    assert (f"cannot predict: model {BIG}: not in the catalog nor the local Hugging Face cache, and HF_HUB_OFFLINE is "
            "set; the policy's model_config names no model (model_config.model, target.models, nor its "
            f"_name_or_path) and the pod serves {BIG}: name the model it is of in model_config.model") in out, out


def test_a_config_named_for_another_model_says_which(tmp_path):
    code, out = check(tmp_path, BIG, f"model_config: {{path: smol-config.json, model: {SMOLLM2_ID}}}\n")
    assert code == 1, out
    assert f"the policy's model_config is for {SMOLLM2_ID}, the pod serves {BIG}" in out, out
    code, out = check(tmp_path, BIG, f"target: {{models: [{SMOLLM2_ID}]}}\nmodel_config: {{path: smol-config.json}}\n")
    assert code == 1 and f"the policy's model_config is for {SMOLLM2_ID}, the pod serves {BIG}" in out, out
    code, out = check(tmp_path, BIG, "model_config: {path: smol-config.json}\n",
                      {**SMOLLM2_CONFIG, "_name_or_path": SMOLLM2_ID})
    assert code == 1, out
    assert f"the policy's model_config is for {SMOLLM2_ID} (its _name_or_path), the pod serves {BIG}" in out, out


def test_the_model_it_is_of_is_sized_from_it(tmp_path):
    named = {**SMOLLM2_CONFIG, "_name_or_path": SMOLLM2_ID}
    for policy, config in ((f"model_config: {{path: smol-config.json, model: {SMOLLM2_ID}}}\n", None),
                           (f"target: {{models: [{SMOLLM2_ID}]}}\nmodel_config: {{path: smol-config.json}}\n", None),
                           ("model_config: {path: smol-config.json}\n", named)):
        code, out = check(tmp_path, SMOLLM2_ID, policy, config)
        assert code == 0 and "fits on NVIDIA-L40S" in out, (policy, out)
        assert "model_config.path" in out, out  # the note says where the config came from


def test_a_local_path_model_is_always_the_policys(tmp_path):
    code, out = check(tmp_path, "/models/llama", "model_config: {path: smol-config.json}\n")
    assert code == 0 and "fits on NVIDIA-L40S" in out, out
    code, out = check(tmp_path, "/models/llama", f"model_config: {{path: smol-config.json, model: {SMOLLM2_ID}}}\n")
    assert code == 0 and "fits on NVIDIA-L40S" in out, out


def test_a_model_without_a_config_is_refused_in_one_line(tmp_path):
    code, out = check(tmp_path, BIG, f"model_config: {{model: {BIG}}}\n")
    assert code == 2, out
    assert f"model_config.model '{BIG}' needs model_config.path or model_config.config_map" in out, out
    assert len(out.strip().splitlines()) == 1, out
