"""``--pipeline-parallel-size`` above 1 is "cannot predict", never the one-stage figures: the estimate ignored the flag
and printed the KV cache of PP 1 (hostile review). vLLM's length refusal, which comes before any stage exists, stays a
verdict; a multi-node group's flags (``parallel.group_flags``) carry no pipeline flag and are sized as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.parallel import group_flags

LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
L40S = catalog.gpu("NVIDIA-L40S")
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("version", ["0.8.5", "0.11.0", "0.34.0"])
def test_two_stages_cannot_be_predicted(version):
    settings = EngineSettings.from_flags({"max-model-len": "8192", "pipeline-parallel-size": "2"}, version)
    with pytest.raises(CannotPredict, match="pipeline parallel is not modelled"):
        estimate(LLAMA, L40S, settings)


def test_one_stage_is_sized_as_without_the_flag():
    with_flag = estimate(LLAMA, L40S, EngineSettings.from_flags({"max-model-len": "8192", "pp": "1"}, "0.11.0"))
    without = estimate(LLAMA, L40S, EngineSettings.from_flags({"max-model-len": "8192"}, "0.11.0"))
    assert with_flag == without


def test_a_length_vllm_refuses_before_any_stage_stays_a_verdict():
    settings = EngineSettings.from_flags({"max-model-len": "200000", "pipeline-parallel-size": "2"}, "0.11.0")
    assert estimate(LLAMA, L40S, settings).outcome is Outcome.MAX_LEN_EXCEEDS_MODEL


def test_a_group_is_sized_with_its_stages_as_ranks():
    flags = group_flags({"max-model-len": "8192", "tensor-parallel-size": "1", "pipeline-parallel-size": "2"})
    assert estimate(LLAMA, L40S, EngineSettings.from_flags(flags, "0.11.0")).outcome is Outcome.FITS


def _deployment(tmp_path: Path) -> tuple[Path, Path]:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                 "args": ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--pipeline-parallel-size",
                          "2"], "resources": {"limits": {"nvidia.com/gpu": "2"}}}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm", "namespace": "llm"},
           "spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                          "containers": [container]}}}}
    path, policy = tmp_path / "dep.json", tmp_path / "pol.yaml"
    path.write_text(json.dumps(dep))
    policy.write_text(f"extends: {ROOT / 'policies' / 'llama-8b.yaml'}\nknown_good: []\ngpu: {{per_pod: 2}}\n")
    return path, policy


def test_check_and_plan_say_cannot_predict(cli, tmp_path):
    path, policy = _deployment(tmp_path)
    got = cli("check", "-f", str(path), "--policy", str(policy), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    (item,) = json.loads(got.stdout)["items"]
    assert item["prediction"]["estimate"] is None, item["prediction"]
    assert any(f["severity"] == "unknown" and "pipeline parallel is not modelled" in f["reason"]
               for f in item["findings"]), item["findings"]
    plan = cli("plan", "-f", str(path), "--policy", str(policy))
    assert plan.returncode == 2 and "pipeline parallel is not modelled" in plan.stderr, plan.stdout + plan.stderr
