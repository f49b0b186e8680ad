"""`args set` on an argv holding a YAML null item (Kubernetes decodes it as ""): it edits, it does not crash."""

from __future__ import annotations

import yaml

NULL_ITEM = """apiVersion: apps/v1
kind: Deployment
metadata: {name: llm, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: llm}}
  template:
    metadata: {labels: {app: llm}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L40S}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", null,
               "--kv-cache-memory-bytes", "60G"]
        resources: {limits: {nvidia.com/gpu: "1"}}
"""


def _args(text: str) -> list:
    return yaml.safe_load(text)["spec"]["template"]["spec"]["containers"][0]["args"]


def test_unset_after_a_null_item_writes_it_as_the_empty_string(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(NULL_ITEM)
    got = cli("args", "set", "-f", str(path), "--unset", "kv-cache-memory-bytes")
    assert got.returncode == 0, got.stderr
    assert _args(got.stdout) == ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", ""]


def test_set_after_a_null_item_keeps_every_other_item(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(NULL_ITEM)
    got = cli("args", "set", "-f", str(path), "--set", "max-num-seqs=32")
    assert got.returncode == 0, got.stderr
    assert _args(got.stdout) == ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "",
                                 "--kv-cache-memory-bytes", "60G", "--max-num-seqs", "32"]
