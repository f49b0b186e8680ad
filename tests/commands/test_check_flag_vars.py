"""`check -f manifest -f configmap`: the kubelet expands ``$(VAR)`` in every argv item, so any flag (not only the two
hf flags) whose variable a ConfigMap checked with it sets is read as vLLM receives it (``vllm.received_flags``)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import run_cli

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
FIGURES = ("kv_cache_tokens", "gpu_blocks", "max_concurrency", "max_model_len")


def _files(tmp_path: Path, args: list[str], env: list | None = None, env_from: list | None = None,
           data: dict | None = None) -> list[str]:
    container: dict = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "args": args,
                       "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    if env is not None:
        container["env"] = env
    if env_from is not None:
        container["envFrom"] = env_from
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llm"}},
                    "template": {"metadata": {"labels": {"app": "llm"}},
                                 "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                          "containers": [container]}}}}
    name = f"m{len(list(tmp_path.glob('m*.yaml')))}.yaml"
    (tmp_path / name).write_text(yaml.safe_dump(doc))
    files = [str(tmp_path / name)]
    if data is not None:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "llm-cfg", "namespace": "default"},
              "data": data}
        (tmp_path / "cm.yaml").write_text(yaml.safe_dump(cm))
        files.append(str(tmp_path / "cm.yaml"))
    return files


def _check(files: list[str]) -> dict:
    got = run_cli("check", *[a for f in files for a in ("-f", f)], "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]


def _ref(name: str, key: str, kind: str = "configMapKeyRef") -> dict:
    return {"name": name, "valueFrom": {kind: {"name": "llm-cfg", "key": key}}}


def test_a_length_from_a_configmap_key_is_the_length_vllm_receives(tmp_path):
    files = _files(tmp_path, ["--model", LLAMA, "--max-model-len", "$(MAX_LEN)"], env=[_ref("MAX_LEN", "MAX_LEN")],
                   data={"MAX_LEN": "200000"})
    item = _check(files)
    assert item["prediction"]["outcome"] == "max_len_exceeds_model", item  # 200,000 above Llama 3.1's 131,072
    assert "--max-model-len 200,000 is above the model's 131,072" in json.dumps(item["findings"]), item["findings"]


def test_envfrom_values_size_as_the_same_flags_written_literally(tmp_path):
    env_from = [{"configMapRef": {"name": "llm-cfg"}}]
    varied = _check(_files(tmp_path, ["--model", "$(MODEL)", "--max-model-len=$(MAX_LEN)",
                                      "--gpu-memory-utilization", "$(UTIL)"], env_from=env_from,
                           data={"MODEL": LLAMA, "MAX_LEN": "8192", "UTIL": "0.5"}))
    literal = _check(_files(tmp_path, ["--model", LLAMA, "--max-model-len=8192", "--gpu-memory-utilization", "0.5"]))
    assert varied["prediction"]["outcome"] == literal["prediction"]["outcome"] == "fits", (varied, literal)
    sized, expected = varied["prediction"]["estimate"], literal["prediction"]["estimate"]
    assert {k: sized[k] for k in FIGURES} == {k: expected[k] for k in FIGURES}


def test_without_the_configmap_or_from_a_secret_the_value_stays_unknown(tmp_path):
    for env, data in (([_ref("MAX_LEN", "MAX_LEN")], None), ([_ref("MAX_LEN", "MAX_LEN", "secretKeyRef")], {})):
        item = _check(_files(tmp_path, ["--model", LLAMA, "--max-model-len", "$(MAX_LEN)"], env=env, data=data))
        assert item["prediction"]["outcome"] != "fits", item
        assert "$(MAX_LEN)" in json.dumps(item["findings"]), item["findings"]
