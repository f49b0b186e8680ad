"""The fixes ``check`` and ``plan --policy`` offer where the policy itself is what the start breaks, through the CLI.

- A ModelOpt checkpoint whose KV-cache scheme is FP8 runs an fp8 cache under ``--kv-cache-dtype auto`` (vLLM 0.14.0+).
  With the policy forbidding fp8 and allowing no 16-bit ``--kv-cache-dtype``, no change within the policy clears it:
  the plan offers none (the unchanged unit was ranked as a "fitting change" and ``check`` quoted it as the fix for its
  own error) and names the policy keys instead. With bfloat16 allowed, the step's reason says what bfloat16 does
  (twice fp8's bytes per token, not half).
- A TP-4 pod under a 2-GPU-per-pod policy: the gpu-pinned fix is the planner's step (TP and GPU count together, the
  pin step of ``deploys/budget.py`` leaves it to the budget step), not a pin to 2 GPUs that keeps TP 4, which vLLM
  cannot start (ranks 2-3 have no device); the plan's note names the TP it was held to.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import manifest

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_POLICY = ROOT / "policies" / "default.yaml"
CONFIGS = ROOT / "tests" / "data" / "configs"
IMAGE = "vllm/vllm-openai:v0.30.0"
ARGS = ["--max-model-len", "16384", "--gpu-memory-utilization", "0.9"]
LLAMA_8B = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
            "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}


def _policy(tmp: Path, config: str, extra: str = "") -> str:
    path = tmp / "policy.yaml"  # the config is of the manifest's model (org/<its file's stem>)
    path.write_text(f"extends: {DEFAULT_POLICY}\nmodel_config: {{path: {config}, model: org/{Path(config).stem}}}\n"
                    f"gpu: {{products: [NVIDIA-L40S]{extra}}}\n")
    return str(path)


@pytest.fixture
def fp8_kv(tmp_path: Path) -> tuple[str, Path]:
    """A ModelOpt FP8 (KV FP8) Llama-8B shape on vLLM 0.30.0, L40S: the manifest and its folder."""
    (tmp_path / "mo.json").write_text(json.dumps(LLAMA_8B))
    return manifest(tmp_path, ARGS, image=IMAGE, model="org/mo"), tmp_path


def test_no_change_is_never_the_fix_for_a_forbidden_fp8_cache(cli, fp8_kv):
    path, tmp = fp8_kv
    policy = _policy(tmp, "mo.json")  # default: kv_cache_fp8 forbidden, kv-cache-dtype allowed [auto]
    plan = cli("plan", "-f", path, "--policy", policy, "-o", "json")
    doc = json.loads(plan.stdout)
    assert doc["verdict"] == "no_fitting_change" and doc["steps"] == [], plan.stdout + plan.stderr
    assert doc["notes"][0].startswith("no change within the policy clears the fp8 KV cache"), doc["notes"]
    assert doc["problem"].endswith("keeps a 16-bit cache: allow bfloat16 in the policy's flags.kv-cache-dtype.allowed, "
                                   "or allow an fp8 KV cache (kv_cache_fp8) after an evaluation"), doc["problem"]
    got = cli("check", "-f", path, "--policy", policy)
    assert "kv-cache-dtype [error]" in got.stdout, got.stdout + got.stderr
    assert "(no change)" not in got.stdout and "smallest fix (planner)" not in got.stdout, got.stdout
    assert "allow an fp8 KV cache (kv_cache_fp8) after an evaluation" in got.stdout, got.stdout


def test_the_bfloat16_step_says_what_bfloat16_does(cli, fp8_kv):
    path, tmp = fp8_kv
    policy = _policy(tmp, "mo.json")
    Path(policy).write_text(Path(policy).read_text() + "flags: {kv-cache-dtype: {allowed: [auto, bfloat16]}}\n")
    doc = json.loads(cli("plan", "-f", path, "--policy", policy, "-o", "json").stdout)
    assert doc["verdict"] == "change", doc
    first = doc["steps"][0]
    assert first["set"] == {"kv-cache-dtype": "bfloat16"}, first
    assert "half the KV bytes" not in first["reason"] and "after evaluation" not in first["reason"], first["reason"]
    assert "twice its bytes per token" in first["reason"], first["reason"]


def test_the_gpu_pin_fix_for_a_tp4_pod_carries_the_tp_change(cli, tmp_path):
    (tmp_path / "q72.json").write_text((CONFIGS / "Qwen2.5-72B-Instruct-AWQ.json").read_text())
    path = Path(manifest(tmp_path, [*ARGS, "--tensor-parallel-size", "4"], image=IMAGE, model="org/q72"))
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4"
    path.write_text(yaml.safe_dump(doc))
    policy = _policy(tmp_path, "q72.json", ", per_pod: 2")
    got = cli("check", "-f", str(path), "--policy", policy)
    assert "gpu-pinned [error]" in got.stdout, got.stdout + got.stderr
    assert "with limits nvidia.com/gpu: 2" not in got.stdout, got.stdout  # the pin alone keeps TP 4 on 2 GPUs
    fixes = [line for line in got.stdout.splitlines() if line.lstrip().startswith(("fix:", "smallest fix"))]
    assert fixes and all("--tensor-parallel-size 2" in line for line in fixes), got.stdout
    plan = cli("plan", "-f", str(path), "--policy", policy)
    assert "tensor-parallel-size above 2 not offered: the policy pins 2 GPU(s) per pod" in plan.stdout, plan.stdout
    assert "above 4" not in plan.stdout, plan.stdout
