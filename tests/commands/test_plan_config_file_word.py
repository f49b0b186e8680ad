"""A word vLLM's ``--config`` splice leaves over (``enable-prefix-caching: "true"``: vLLM passes ``--key true``) is in
the ConfigMap, not in argv: no step the planner writes removes it. Before, check and plan offered "remove the word
true" as a fix that fits, a step a deploy could write without the pod ever starting; now the start is refused as
written, and the fix named is the file's line."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import run_cli

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vcfg", "namespace": "llm"},
              "data": {"cfg.yaml": 'max-model-len: 16384\nenable-prefix-caching: "true"\n'}}
CONTAINER = {"name": "vllm", "image": "vllm/vllm-openai:v0.34.0", "command": ["vllm", "serve"],
             "args": ["meta-llama/Llama-3.1-8B-Instruct", "--config", "/etc/vllm/cfg.yaml",
                      "--gpu-memory-utilization", "0.9"],
             "volumeMounts": [{"name": "vcfg", "mountPath": "/etc/vllm"}],
             "resources": {"limits": {"nvidia.com/gpu": "1"}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama-8b", "namespace": "llm"},
              "spec": {"selector": {"matchLabels": {"app": "llama-8b"}},
                       "template": {"metadata": {"labels": {"app": "llama-8b"}},
                                    "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                             "volumes": [{"name": "vcfg", "configMap": {"name": "vcfg"}}],
                                             "containers": [CONTAINER]}}}}
FIX = "in the --config file /etc/vllm/cfg.yaml, write that switch's value as a YAML boolean"


def test_a_word_the_config_file_gives_is_refused_as_written_with_the_files_fix(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump_all([CONFIG_MAP, DEPLOYMENT]))
    plan = run_cli("plan", "-f", str(manifest), "-o", "json")
    got = json.loads(plan.stdout)
    assert got["verdict"] == "refused_as_written" and got["steps"] == [], plan.stdout
    assert FIX in got["problem"], got["problem"]
    check = run_cli("check", "-f", str(manifest))
    assert check.returncode == 1 and FIX in check.stdout, check.stdout
    assert "remove the word true" not in check.stdout, check.stdout
