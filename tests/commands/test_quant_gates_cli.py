"""The quantization gates of vLLM's config (``vllm.quant_support``) on the CLI: ``estimate`` says config_refused with
vLLM's words where it said fits (AWQ on a V100) or profile_oom (gpt-oss's mxfp4 on a T4), ``plan`` moves off a card
vLLM refuses, and ``diagnose`` classifies the refusal's line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
AWQ_7B = CONFIGS / "Qwen2.5-7B-Instruct-AWQ.json"  # Qwen/Qwen2.5-7B-Instruct-AWQ's config.json (SOURCES.md)
DEFAULT_POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"
CAPABILITY = ("ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75. "
              "Current capability: 70.")


@pytest.mark.parametrize(("config", "gpu", "tp", "said"), [
    ("Qwen2.5-72B-Instruct-AWQ.json", "Tesla-V100-SXM2-32GB", "4", CAPABILITY),
    ("gpt-oss-20b.json", "Tesla-T4", "1", "ValueError: The quantization method mxfp4 is not supported for the current "
                                         "GPU. Minimum capability: 80. Current capability: 75."),
])
def test_estimate_says_config_refused_in_vllms_words(cli, config, gpu, tp, said):
    args = ("estimate", "--model-config", str(CONFIGS / config), "--gpu", gpu, "--dtype", "half", "--tp", tp,
            "--vllm-version", "0.11.0", "--max-model-len", "8192")
    got = cli(*args, "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["outcome"], data["refusal"], data["kv_cache_tokens"]) == ("config_refused", said, None), data
    human = cli(*args)
    assert human.stdout.startswith(f"outcome             config_refused: {said}"), human.stdout


def test_estimate_refuses_a_quantization_the_checkpoint_does_not_have(cli):
    got = cli("estimate", "--model-config", str(AWQ_7B), "--gpu", "NVIDIA-A100-SXM4-80GB",
              "--quantization", "gptq", "--vllm-version", "0.11.0", "-o", "json")
    data = json.loads(got.stdout)
    assert data["outcome"] == "config_refused" and data["refusal"] == (
        "ValueError: Quantization method specified in the model config (awq) does not match the quantization method "
        "specified in the `quantization` argument (gptq)."), data
    allowed = cli("estimate", "--model-config", str(AWQ_7B), "--gpu", "NVIDIA-A100-SXM4-80GB",
                  "--quantization", "awq_marlin", "--vllm-version", "0.11.0", "-o", "json")
    assert json.loads(allowed.stdout)["outcome"] == "fits"


def test_plan_moves_off_the_refused_card(cli):
    got = cli("plan", "--model-config", str(AWQ_7B), "--gpu", "Tesla-V100-SXM2-32GB", "--dtype", "half",
              "--vllm-version", "0.11.0", "--max-model-len", "8192", "-o", "json")
    assert got.returncode == 1, got.stderr
    data = json.loads(got.stdout)
    assert data["current"]["outcome"] == "config_refused", data["current"]
    assert any(CAPABILITY in n for n in data["notes"]), data["notes"]
    assert data["steps"] and all(s.get("gpu") not in (None, "Tesla-V100-SXM2-32GB") for s in data["steps"]), \
        data["steps"]


def test_diagnose_classifies_the_refusal(cli, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("INFO 12-06 01:00:00 [__init__.py:216] Automatically detected platform cuda.\n"
                   "Traceback (most recent call last):\n"
                   '  File "/usr/local/lib/python3.12/dist-packages/vllm/config/__init__.py", line 262, in '
                   "_get_quantization_config\n"
                   "    raise ValueError(\n"
                   f"{CAPABILITY}\n")
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["setting"]) == ("config_refused", "quantization"), data


def test_check_names_the_refusal_and_pins_a_card_it_runs_on(cli, tmp_path):
    dep = yaml.safe_load((Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" /
                          "good-rev14.yaml").read_text())
    pod = dep["spec"]["template"]["spec"]
    pod["containers"][0]["image"] = "vllm/vllm-openai:v0.11.0"
    pod["containers"][0]["args"] = ["Qwen/Qwen2.5-7B-Instruct-AWQ", "--max-model-len", "8192", "--dtype", "half"]
    pod["nodeSelector"] = {"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB"}
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(dep))
    policy = tmp_path / "policy.yaml"  # the catalog holds only exact repositories
    policy.write_text(f"extends: {DEFAULT_POLICY}\n"
                      f"model_config: {{path: {AWQ_7B}, model: Qwen/Qwen2.5-7B-Instruct-AWQ}}\n")
    got = cli("check", "-f", str(path), "--policy", str(policy))
    assert got.returncode == 1, got.stdout + got.stderr
    assert f"predicted config_refused on Tesla-V100-SXM2-32GB — vLLM refuses the quantization at config time: " \
           f"{CAPABILITY}" in got.stdout, got.stdout
    fix = next(line for line in got.stdout.splitlines() if "smallest fix" in line)
    assert "nvidia.com/gpu.product=" in fix and "V100" not in fix, fix
