"""``--hf-config-path`` as a path: vLLM looks for a local path first (``Path(model).exists()`` in
``file_or_path_exists``, transformers_utils/config.py@0.11.0, repo_utils.py@0.34.0), so a bare relative directory typed
on `estimate` is that directory, not a repository id; a path in a manifest is the pod's, read only when a ConfigMap
checked with it is mounted there. The estimate names the model served (``--model``), and where its config came from."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import run_cli

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 2048, "num_hidden_layers": 24,
          "num_attention_heads": 16, "num_key_value_heads": 2, "intermediate_size": 8192, "vocab_size": 151936,
          "max_position_embeddings": 32768, "rope_theta": 1000000.0, "torch_dtype": "bfloat16",
          "tie_word_embeddings": True}
ESTIMATE = ["estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-model-len", "8192"]


def _config_dir(tmp_path: Path) -> None:
    (tmp_path / "cfgdir").mkdir()
    (tmp_path / "cfgdir" / "config.json").write_text(json.dumps(CONFIG))


def test_a_bare_relative_directory_is_read_where_it_exists(tmp_path):
    _config_dir(tmp_path)
    got = run_cli(*ESTIMATE, "--hf-config-path", "cfgdir", "-o", "json", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert 3.0 < data["weights_gib"] < 3.6, data  # the 24-layer config's weights, not Llama 3.1 8B's 15 GiB
    assert data["model"] == LLAMA and data["model_source"] == str(Path("cfgdir") / "config.json"), data


def test_the_model_line_names_the_model_and_the_config_path(tmp_path):
    _config_dir(tmp_path)
    got = run_cli(*ESTIMATE, "--hf-config-path", "./cfgdir", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    line = next(x for x in got.stdout.splitlines() if x.startswith("model / GPU / vLLM"))
    assert f"  {LLAMA} (config: --hf-config-path ./cfgdir) / NVIDIA-L4" in line, line


def _manifest(tmp_path: Path) -> tuple[str, str]:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                 "args": ["--model", LLAMA, "--hf-config-path", "/etc/hf-cfg", "--max-model-len", "8192"],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}},
                 "volumeMounts": [{"name": "cfg", "mountPath": "/etc/hf-cfg"}]}
    pod = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"}, "containers": [container],
           "volumes": [{"name": "cfg", "configMap": {"name": "hf-cfg"}}]}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llm"}},
                    "template": {"metadata": {"labels": {"app": "llm"}}, "spec": pod}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hf-cfg", "namespace": "default"},
          "data": {"config.json": json.dumps(CONFIG)}}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(cm))
    return str(tmp_path / "m.yaml"), str(tmp_path / "cm.yaml")


def test_a_pod_path_is_read_from_the_configmap_mounted_there(tmp_path):
    deployment, config_map = _manifest(tmp_path)
    got = run_cli("check", "-f", deployment, "-f", config_map, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    sized = json.loads(got.stdout)["items"][0]["prediction"]["estimate"]
    assert 3.0 < sized["weights_gib"] < 3.6, sized


def test_a_pod_path_without_its_configmap_is_no_prediction(tmp_path):
    deployment, _ = _manifest(tmp_path)
    got = run_cli("check", "-f", deployment)
    assert got.returncode == 1, got.stdout + got.stderr
    assert ("cannot predict: --hf-config-path /etc/hf-cfg: model /etc/hf-cfg: a local path in the pod (its volume)"
            in got.stdout), got.stdout
