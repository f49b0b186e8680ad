"""ModelOpt's ``hf_quant_config.json`` kept in the policy's ``model_config`` ConfigMap beside its ``config.json``: read
as the file beside a ``model_config.path`` is (and as vLLM reads the pod's directory, transformers_utils/config.py
@0.10.1 l.497-505), through the real CLI on a ConfigMap rendered beside the Deployment (``check -f -``).

Llama-3.3-70B-Instruct's config.json (no ``quantization_config``) with NVIDIA's older ``*-FP8`` layout beside it, at
TP 2 on H100s with vLLM 0.11.0: read as FP8 it fits (33.93 GiB a GPU); the 16-bit reading (65.81 GiB) leaves no KV
block, which is what the ConfigMap said before: its second key was never read."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / "tests" / "data" / "configs" / "Llama-3.3-70B-Instruct.json").read_text())
FP8_FILE = {"producer": {"name": "modelopt", "version": "0.15.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "l70", "namespace": "llm"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "l70"}}, "template": {
        "metadata": {"labels": {"app": "l70"}},
        "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                 "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                                 "args": ["/models/llama", "--tensor-parallel-size", "2", "--max-model-len", "8192",
                                          "--gpu-memory-utilization", "0.9"],
                                 "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}}}


def _check(tmp_path: Path, data: dict[str, str]) -> str:
    (tmp_path / "default.yaml").write_text((ROOT / "policies" / "default.yaml").read_text())
    policy = tmp_path / "policy.yaml"
    policy.write_text("extends: default\nmodel_config: {config_map: l70-config, key: config.json}\n")
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l70-config", "namespace": "llm"},
                  "data": data}
    listed = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [config_map, DEPLOYMENT]})
    got = run_cli("check", "-f", "-", "--policy", str(policy), stdin=listed)
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return got.stdout


def test_the_config_maps_quant_file_beside_config_json_is_read(tmp_path: Path) -> None:
    got = _check(tmp_path, {"config.json": json.dumps(CONFIG), "hf_quant_config.json": json.dumps(FP8_FILE)})
    assert "fits on NVIDIA-H100-80GB-HBM3" in got and "no_cache_blocks" not in got, got


def test_without_the_quant_file_the_config_map_is_the_16_bit_checkpoint(tmp_path: Path) -> None:
    got = _check(tmp_path, {"config.json": json.dumps(CONFIG)})
    assert "predicted no_cache_blocks on NVIDIA-H100-80GB-HBM3" in got, got
