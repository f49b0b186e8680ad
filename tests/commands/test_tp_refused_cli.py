"""A TP size vLLM refuses is a predicted refusal, not bad input: ``estimate`` prints its JSON document with
``outcome: config_refused`` and vLLM's words in ``refusal``, ``check`` reports an error on the start with the
planner's fix, and ``plan`` exits 1 with a rung to a TP size that splits evenly and fits. ``--tp 0`` stays bad input.

Config: the inline ``model_config`` of tests/data/calibration/l40s-v0.10.2-qwen3-30b-a3b-fp8-tp2-ep.yaml (its
``source:``): Qwen3-30B-A3B-Instruct-2507-FP8, moe_intermediate 768 in 128x128 fp8 blocks, so TP 4 leaves 192
channels per GPU (``block_split.fp8_moe_block_split_problem``; fp8.py@0.8.5 ``Fp8MoEMethod.create_weights``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from vllm_remedy.sim.seed import load_seed, set_path

CASE = Path(__file__).resolve().parents[1] / "data" / "calibration" / "l40s-v0.10.2-qwen3-30b-a3b-fp8-tp2-ep.yaml"
MODEL = "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8"
POLICY = "policies/llama-8b.yaml"
SAID = ("ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization "
        "block_n = 128.")


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "configs" / "qwen3-30b-fp8.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(yaml.safe_load(CASE.read_text())["model_config"]))
    return path


def test_estimate_prints_the_refusal_document(cli, tmp_path):
    args = ("estimate", "--model-config", str(write_config(tmp_path)), "--gpu", "NVIDIA-L40S", "--tp", "4",
            "--vllm-version", "0.8.5", "--max-model-len", "8192")
    got = cli(*args, "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["outcome"], data["kv_cache_tokens"]) == ("config_refused", None), data
    assert data["refusal"].startswith("tensor-parallel-size: 4 splits each expert's 768 intermediate channels into "
                                      "192 per GPU") and data["refusal"].endswith(SAID), data["refusal"]
    human = cli(*args)
    assert human.stdout.startswith("outcome             config_refused: tensor-parallel-size: 4"), human.stdout
    ep = json.loads(cli(*args, "--enable-expert-parallel", "-o", "json").stdout)
    assert ep["outcome"] == "fits" and ep["refusal"] is None, ep


def test_a_tp_of_zero_stays_bad_input(cli, tmp_path):
    got = cli("estimate", "--model-config", str(write_config(tmp_path)), "--gpu", "NVIDIA-L40S", "--tp", "0",
              "--vllm-version", "0.8.5", "-o", "json")
    assert got.returncode == 2 and not got.stdout and "tensor-parallel-size: 0 must be >= 1" in got.stderr, got


def manifest_and_policy(tmp_path: Path) -> tuple[Path, Path]:
    """The runbook seed's revision 14 (vLLM 0.8.5 on an L40S) serving the 30B at TP 4, and a policy allowing 4, with
    the pod's four GPUs (llama-8b's one GPU per pod would hold every rung to TP 1)."""
    entry = load_seed("runbook")[0]["deployments"][0]
    dep = copy.deepcopy(entry["manifest"])
    for rev in entry["revisions"]:
        for path, value in rev["set"].items():
            set_path(dep, path, value, "seed")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    args[0] = MODEL
    args[args.index("--max-model-len") + 1] = "8192"
    args += ["--tensor-parallel-size", "4"]
    container["resources"]["limits"]["nvidia.com/gpu"] = 4
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    write_config(tmp_path)
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: {Path(POLICY).resolve()}\ntarget: {{models: [{MODEL}]}}\nknown_good: []\n"
                      "model_config: {path: configs/qwen3-30b-fp8.json}\n"
                      "flags: {tensor-parallel-size: {min: 1, max: 4, preferred: 1}}\ngpu: {per_pod: 4}\n")
    return manifest, policy


def test_check_reports_the_refused_start_with_the_planners_fix(cli, tmp_path):
    manifest, policy = manifest_and_policy(tmp_path)
    got = cli("check", "-f", str(manifest), "--policy", str(policy), "-o", "json")
    assert got.returncode == 1, got.stderr
    findings = [f for i in json.loads(got.stdout)["items"] for f in i["findings"]]
    assert not [f for f in findings if f["check"] == "flags"], findings
    start = next(f for f in findings if f["check"] == "start")
    assert start["severity"] == "error" and "predicted config_refused on NVIDIA-L40S — vLLM refuses the " \
        "tensor-parallel size: tensor-parallel-size: 4 splits each expert's 768" in start["reason"], start
    assert SAID in start["reason"] and "--tensor-parallel-size 2" in start["fix"], start


@pytest.mark.parametrize("output", ["text", "json"])
def test_plan_exits_1_with_a_tp_rung_that_splits_evenly(cli, tmp_path, output):
    manifest, policy = manifest_and_policy(tmp_path)
    got = cli("plan", "-f", str(manifest), "--policy", str(policy), "-o", output)
    assert got.returncode == 1, got.stdout + got.stderr
    if output == "text":
        assert "vLLM refuses tensor-parallel-size 4 for this model" in got.stdout, got.stdout
        return
    data = json.loads(got.stdout)
    assert data["verdict"] == "change" and data["current"]["outcome"] == "config_refused", data
    first = data["steps"][0]
    assert first["set"]["tensor-parallel-size"] == "2" and first["prediction"]["outcome"] == "fits", first
