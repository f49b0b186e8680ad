"""Starts stopped before a KV cache exists show no KV or concurrency figures (as starts refused at config time show
"not sized"): the free-memory check, and "No available memory for the cache blocks", which on V1 before 0.21 a
--num-gpu-blocks-override does not bypass (get_kv_cache_config checks the profiled bytes before the override,
v1/core/kv_cache_utils.py@0.11.0). The model's figures for them were a negative cache of the override's blocks."""

from __future__ import annotations

import json

M = "meta-llama/Llama-3.1-8B-Instruct"
BASE = ("estimate", "--model", M, "--gpu", "NVIDIA-L4", "--max-model-len", "16384")


def test_no_cache_blocks_with_an_override_prints_no_kv_figures(cli):
    got = cli(*BASE, "--vllm-version", "0.11.0", "--gpu-memory-utilization", "0.7", "--num-gpu-blocks-override",
              "2000")
    assert got.stdout.splitlines()[0].split()[1] == "no_cache_blocks", got.stdout
    assert "32,000 tokens" not in got.stdout and "1.95x" not in got.stdout and "-1.09" not in got.stdout
    assert "no KV cache" in got.stdout
    data = json.loads(cli(*BASE, "--vllm-version", "0.11.0", "--gpu-memory-utilization", "0.7",
                          "--num-gpu-blocks-override", "2000", "-o", "json").stdout)
    assert [data[k] for k in ("kv_cache_gib", "kv_cache_tokens", "gpu_blocks", "max_concurrency")] == [None] * 4


def test_free_memory_below_utilization_prints_no_kv_figures(cli):
    for extra in (("--vllm-version", "0.11.0", "--other-gib", "3"),
                  ("--vllm-version", "0.34.0", "--other-gib", "3", "--kv-cache-memory-bytes", "4G")):
        got = cli(*BASE, *extra)
        assert got.stdout.splitlines()[0].split()[1] == "free_memory_below_utilization", got.stdout
        assert "tokens (" not in got.stdout and "x at 16,384" not in got.stdout, got.stdout
        data = json.loads(cli(*BASE, *extra, "-o", "json").stdout)
        assert data["kv_cache_tokens"] is None and data["max_concurrency"] is None


def test_a_start_that_allocates_its_cache_still_shows_it(cli):
    got = cli(*BASE, "--vllm-version", "0.11.0")
    assert "tokens (" in got.stdout and "x at 16,384 tokens" in got.stdout


def test_check_and_plan_show_no_kv_figures_for_it(cli, tmp_path):
    manifest = tmp_path / "dep.yaml"
    manifest.write_text(f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: llama, namespace: llm}}
spec:
  selector: {{matchLabels: {{app: llama}}}}
  template:
    metadata: {{labels: {{app: llama}}}}
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-L4}}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "{M}", "--max-model-len", "16384", "--gpu-memory-utilization", "0.7",
               "--num-gpu-blocks-override", "2000"]
        resources: {{limits: {{nvidia.com/gpu: "1"}}}}
""")
    checked = cli("check", "-f", str(manifest)).stdout
    start = next(line for line in checked.splitlines() if "start [error]" in line)
    assert "no_cache_blocks" in start and "32,000" not in start and "1.95x" not in start, checked
    current = next(line for line in cli("plan", "-f", str(manifest)).stdout.splitlines()
                   if line.startswith("current:"))
    assert "no KV cache" in current and "32,000" not in current, current
