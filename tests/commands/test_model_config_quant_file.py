"""ModelOpt's ``hf_quant_config.json`` beside a config.json named by path: ``estimate --model-config`` and a policy's
``model_config.path`` read it as ``--model dir`` does (vLLM's ``get_config`` reads it from 0.10.1,
transformers_utils/config.py@0.10.1 l.497-505, @0.30.0 l.829-841), through the real CLI.

The checkpoint is Llama-3.3-70B-Instruct's config.json (no ``quantization_config``) with NVIDIA's older ``*-FP8``
layout beside it. At TP 2 on H100s with vLLM 0.11.0 the 16-bit reading (65.81 GiB a GPU) leaves no room for a KV
block, which the file path said before (and ``check`` proposed TP 4); FP8 it is 33.93 GiB and fits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "configs"
FP8_FILE = {"producer": {"name": "modelopt", "version": "0.15.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
FLAGS = ("--gpu", "NVIDIA-H100-80GB-HBM3", "--tp", "2", "--max-model-len", "8192", "-o", "json")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("l70fp8") / "llama"
    root.mkdir()
    shutil.copy(CONFIGS / "Llama-3.3-70B-Instruct.json", root / "config.json")
    (root / "hf_quant_config.json").write_text(json.dumps(FP8_FILE))
    return root


def _estimate(*model: str, version: str) -> dict:
    got = run_cli("estimate", *model, *FLAGS, "--vllm-version", version)
    assert got.returncode == 0, got.stdout + got.stderr
    body = json.loads(got.stdout)
    return body.get("result", body)


@pytest.mark.parametrize("version", ["0.11.0", "0.34.0"])
def test_the_config_path_reads_the_file_beside_it_as_the_directory_does(checkpoint, version):
    keys = ("outcome", "weights_gib", "kv_cache_tokens")
    by_dir = _estimate("--model", str(checkpoint), version=version)
    by_path = _estimate("--model-config", str(checkpoint / "config.json"), version=version)
    assert [by_path[k] for k in keys] == [by_dir[k] for k in keys], (by_path, by_dir)
    assert by_path["outcome"] == "fits" and by_path["weights_gib"] < 35, by_path


def test_before_0_10_1_the_file_is_not_read_and_the_load_is_not_predicted(checkpoint):
    got = run_cli("estimate", "--model-config", str(checkpoint / "config.json"), *FLAGS[:-2], "--vllm-version",
                  "0.10.0")
    assert got.returncode != 0 and "do not read hf_quant_config.json" in got.stderr, got.stdout + got.stderr


def test_the_policys_model_config_path_reads_the_file_beside_it(checkpoint, tmp_path):
    manifest = tmp_path / "local70.yaml"
    manifest.write_text("""apiVersion: apps/v1
kind: Deployment
metadata: {name: smol, namespace: llm}
spec:
  replicas: 1
  selector: {matchLabels: {app: smol}}
  template:
    metadata: {labels: {app: smol}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          command: ["vllm", "serve"]
          args: ["/models/llama", "--tensor-parallel-size", "2", "--max-model-len", "8192",
                 "--gpu-memory-utilization", "0.9"]
          resources:
            limits: {nvidia.com/gpu: "2"}
""")
    shutil.copy(ROOT / "policies" / "default.yaml", tmp_path / "default.yaml")
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: default\nmodel_config:\n  path: {checkpoint / 'config.json'}\n")
    got = run_cli("check", "-f", str(manifest), "--policy", str(policy))
    assert got.returncode == 0, got.stdout + got.stderr
    assert "fits on NVIDIA-H100-80GB-HBM3" in got.stdout and "no_cache_blocks" not in got.stdout, got.stdout


def test_a_model_that_cannot_be_predicted_is_not_sent_to_model_config(tmp_path):
    """``--model-config`` reads the same files as ``--model dir``: advising it for a scheme this tool does not size
    led to the 16-bit number the file alone gave (hostile review 14, F1)."""
    config = json.loads((CONFIGS / "Llama-3.3-70B-Instruct.json").read_text())
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "MXFP8"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    got = run_cli("estimate", "--model", str(tmp_path), *FLAGS[:-2], "--vllm-version", "0.34.0")
    assert got.returncode != 0 and "cannot predict" in got.stderr, got.stdout + got.stderr
    assert "pass --model-config" not in got.stderr, got.stderr
