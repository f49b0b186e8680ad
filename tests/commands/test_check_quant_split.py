"""`vllm-remedy check` on a manifest serving an AWQ checkpoint at a TP that splits a quantization group across two
GPUs: the start is predicted config_refused, and the finding quotes vLLM's refusal, as for any TP vLLM refuses (the
config is tests/data/configs/Qwen2.5-72B-Instruct-AWQ-unpadded.json, SOURCES.md; given by the policy's
model_config.path)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import yaml

from vllm_remedy.sim.seed import load_seed, set_path

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "Qwen2.5-72B-Instruct-AWQ-unpadded.json"
MODEL = "acme-corp/Qwen2.5-72B-Instruct-AWQ-unpadded"
POLICY = "policies/llama-8b.yaml"


def seed_revision_14() -> dict:
    """The runbook seed's revision 14 (tests/commands/test_check.py's good file)."""
    entry = load_seed("runbook")[0]["deployments"][0]
    manifest = copy.deepcopy(entry["manifest"])
    for rev in entry["revisions"]:
        for path, value in rev["set"].items():
            set_path(manifest, path, value, "seed")
    return manifest


def test_check_names_the_split_and_vllms_words(cli, tmp_path):
    dep = seed_revision_14()
    container = dep["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    args[0] = MODEL
    args[args.index("--max-model-len") + 1] = "8192"
    args += ["--tensor-parallel-size", "2"]
    container["resources"]["limits"]["nvidia.com/gpu"] = 2
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    (tmp_path / "configs").mkdir()
    shutil.copy(CONFIG, tmp_path / "configs" / "awq.json")
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: {Path(POLICY).resolve()}\ntarget: {{models: [{MODEL}]}}\nknown_good: []\n"
                      "model_config: {path: configs/awq.json}\n")
    got = cli("check", "-f", str(manifest), "--policy", str(policy), "-o", "json")
    assert got.returncode == 1, got.stderr
    findings = [f for i in json.loads(got.stdout)["items"] for f in i["findings"]]
    assert not [f for f in findings if f["check"] == "flags"], findings  # a predicted refusal, not bad input
    assert [f["reason"] for f in findings if f["check"] == "start"] == [
        "predicted config_refused on NVIDIA-L40S — vLLM refuses the tensor-parallel size: tensor-parallel-size: 2 "
        "splits down_proj's 29568 input channels into 14784 per GPU, which the AWQ group size 128 does not divide (a "
        "group would straddle two GPUs); vLLM: ValueError: The input size is not aligned with the quantized weight "
        "shape. This can be caused by too large tensor parallel size."], findings
