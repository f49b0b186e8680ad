"""`plan -f` reads a manifest's flags as `check` does: every flag's ``$(VAR)`` a ConfigMap in the file sets
(``vllm.received_flags``), ``--hf-config-path``'s config.json from a ConfigMap mounted at that path
(``commands._hf_config_mount``), and names the model vLLM serves, not the config path, on its subject line."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import run_cli

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
# a 24-layer Qwen2 config: about 3.3 GiB of weights, where Llama 3.1 8B's are 15 GiB
CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 2048, "num_hidden_layers": 24,
          "num_attention_heads": 16, "num_key_value_heads": 2, "intermediate_size": 8192, "vocab_size": 151936,
          "max_position_embeddings": 32768, "rope_theta": 1000000.0, "torch_dtype": "bfloat16",
          "tie_word_embeddings": True}


def _file(tmp_path: Path, args: list[str], data: dict[str, str] | None, mount: bool = False,
          env: list | None = None) -> str:
    container: dict = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "args": args,
                       "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    pod: dict = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"}, "containers": [container]}
    if env:
        container["env"] = env
    if mount:
        container["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/hf-cfg"}]
        pod["volumes"] = [{"name": "cfg", "configMap": {"name": "llm-cfg"}}]
    docs: list[dict] = [{"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "llm", "namespace": "default"},
                         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llm"}},
                                  "template": {"metadata": {"labels": {"app": "llm"}}, "spec": pod}}}]
    if data is not None:
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "llm-cfg", "namespace": "default"},
                     "data": data})
    path = tmp_path / f"m{len(list(tmp_path.glob('m*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _plan(*args: str) -> dict:
    got = run_cli("plan", *args, "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)


def test_a_length_from_a_configmap_key_plans_as_the_same_length_written_literally(tmp_path):
    ref = [{"name": "MAX_LEN", "valueFrom": {"configMapKeyRef": {"name": "llm-cfg", "key": "MAX_LEN"}}}]
    varied = _plan("-f", _file(tmp_path, ["--model", LLAMA, "--max-model-len", "$(MAX_LEN)"], {"MAX_LEN": "12288"},
                               env=ref))
    literal = _plan("-f", _file(tmp_path, ["--model", LLAMA, "--max-model-len", "12288"], None))
    assert varied["current"]["max_model_len"] == literal["current"]["max_model_len"] == 12288, varied["current"]
    assert varied["current"] == literal["current"]
    assert varied["steps"] == literal["steps"]


def test_a_pod_config_path_is_read_from_the_configmap_mounted_there(tmp_path):
    args = ["--model", LLAMA, "--hf-config-path", "/etc/hf-cfg", "--max-model-len", "8192"]
    data = _plan("-f", _file(tmp_path, args, {"config.json": json.dumps(CONFIG)}, mount=True))
    assert 3.0 < data["current"]["weights_gib"] < 3.6, data["current"]  # the mounted config, not Llama's 15 GiB
    assert data["subject"]["model"] == LLAMA, data["subject"]
    assert data["subject"]["config"] == "--hf-config-path /etc/hf-cfg", data["subject"]


def test_the_subject_line_names_the_model_and_the_config_path(tmp_path):
    (tmp_path / "cfgdir").mkdir()
    (tmp_path / "cfgdir" / "config.json").write_text(json.dumps(CONFIG))
    got = run_cli("plan", "--model", LLAMA, "--hf-config-path", "./cfgdir", "--gpu", "NVIDIA-L4",
                  "--max-model-len", "8192", cwd=tmp_path)
    assert got.returncode in (0, 1), got.stderr
    first = got.stdout.splitlines()[0]
    assert first.startswith(f"BudgetPlan: {LLAMA} (config: --hf-config-path ./cfgdir) on NVIDIA-L4"), first
