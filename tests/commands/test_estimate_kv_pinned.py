"""estimate, check -f and plan -f agree on a KV cache a flag sizes (review 3, H1) and on starts the memory model cannot
size (H4: LoRA, speculative decoding). Llama-3.1-8B: 1 GiB of KV is 8,192 tokens, one 16k request needs 2 GiB."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
ARGS = ["--model", LLAMA, "--gpu", "NVIDIA-L40S", "--max-model-len", "16384"]


def manifest(tmp_path: Path, tag: str, *extra: str) -> str:
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llm"}}, "template": {
               "metadata": {"labels": {"app": "llm"}},
               "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [{
                   "name": "vllm", "image": f"vllm/vllm-openai:{tag}",
                   "args": ["--model", LLAMA, "--max-model-len", "16384", *extra],
                   "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_estimate_sizes_the_cache_from_the_bytes(cli):
    got = cli("estimate", *ARGS, "--vllm-version", "0.11.0", "--kv-cache-memory-bytes", "1G", "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["outcome"], data["kv_cache_tokens"], data["kv_cache_gib"]) == ("max_len_exceeds_kv", 8192, 1.0)


def test_estimate_refuses_the_flag_before_its_release(cli):
    got = cli("estimate", *ARGS, "--vllm-version", "0.10.1", "--kv-cache-memory-bytes", "1G")
    assert got.returncode == 2
    assert "vLLM 0.10.1 has no such flag (added in 0.10.2)" in got.stderr


def test_check_fails_a_1g_cache_that_cannot_hold_one_request(cli, tmp_path):
    got = cli("check", "-f", manifest(tmp_path, "v0.11.0", "--kv-cache-memory-bytes", "1G"))
    assert got.returncode == 1, got.stdout + got.stderr
    assert "start [error]: predicted max_len_exceeds_kv on NVIDIA-L40S" in got.stdout
    assert "KV cache 8,192 tokens" in got.stdout


def test_check_and_plan_agree_on_the_overridden_block_count(cli, tmp_path):
    path = manifest(tmp_path, "v0.11.0", "--num-gpu-blocks-override", "100")
    check = cli("check", "-f", path)
    assert check.returncode == 1 and "maximum concurrency 0.10x" in check.stdout, check.stdout
    plan = cli("plan", "-f", path)
    assert "current:  fits — KV 1,600 tokens" in plan.stdout, plan.stdout + plan.stderr
    assert "pinned at 100 blocks by --num-gpu-blocks-override" in plan.stdout


def test_plan_says_the_bytes_pin_the_cache(cli, tmp_path):
    plan = cli("plan", "-f", manifest(tmp_path, "v0.11.0", "--kv-cache-memory-bytes", "1G"))
    assert "current:  max_len_exceeds_kv — KV 8,192 tokens" in plan.stdout, plan.stdout + plan.stderr
    assert "pinned at 1,073,741,824 bytes per GPU by --kv-cache-memory-bytes" in plan.stdout
    assert "current:  max_len_exceeds_kv — KV 192,656" not in plan.stdout  # the figure that ignored the flag
    # The pinned start fails, so every step lifts the pin: the budget's figure is then the step's own.
    steps = [line for line in plan.stdout.splitlines() if line[:1].isdigit()]
    assert steps and all("unset --kv-cache-memory-bytes" in line for line in steps), plan.stdout


def test_check_cannot_predict_lora(cli, tmp_path):
    got = cli("check", "-f", manifest(tmp_path, "v0.11.0", "--enable-lora", "--max-loras", "32", "--max-lora-rank",
                                      "256"))
    assert got.returncode == 1, got.stdout + got.stderr
    assert ("flags [unknown]: cannot predict: --enable-lora (--max-loras 32, --max-lora-rank 256): LoRA's adapter "
            "slots") in got.stdout
    assert "fix: the memory model does not size this feature" in got.stdout
    assert "fits" not in got.stdout


def test_check_cannot_predict_a_draft_model(cli, tmp_path):
    spec = json.dumps({"model": "meta-llama/Llama-3.1-70B-Instruct", "num_speculative_tokens": 5})
    got = cli("check", "-f", manifest(tmp_path, "v0.11.0", "--speculative-config", spec))
    assert got.returncode == 1, got.stdout + got.stderr
    assert "flags [unknown]: cannot predict: --speculative-config: speculative decoding" in got.stdout
