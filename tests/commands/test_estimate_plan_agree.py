"""``estimate``, ``plan`` and ``check`` (the real CLI) name the same config-time refusal for the same start: the one the
estimate decided in vLLM's order (``Estimate.refusal``), which plan's problem line reads rather than re-deriving
(0.6.6 refuses Qwen3's architecture before TP 3's heads; 0.11.0 with VLLM_USE_V1=0 refuses TP 3's heads before the
env's V1 assert), and a literal vLLM's config classes refuse (``config_values``: ``--max-num-seqs 0`` from 0.12.0,
an unknown ``--quantization`` from 0.13.0) is a predicted ``config_refused`` in check's words, not bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.vllm_deployment import manifest

QWEN3 = "Qwen/Qwen3-8B"
GPU = "NVIDIA-L4"
# (release, vLLM args, VLLM_USE_V1 or None, GPUs the pod gets)
CASES = {
    "arch-before-heads-066": ("0.6.6", ("--tensor-parallel-size", "3", "--max-model-len", "4096"), None, 3),
    "heads-before-v1-0110": ("0.11.0", ("--tensor-parallel-size", "3", "--max-model-len", "4096"), "0", 3),
    "max-num-seqs-0-0120": ("0.12.0", ("--max-num-seqs", "0", "--max-model-len", "4096"), None, 1),
    "quantization-foo-0130": ("0.13.0", ("--quantization", "foo", "--max-model-len", "4096"), None, 1),
    # CacheConfig's Field(gt=0, le=1) from 0.12.0 (config/cache.py@0.12.0 l.49): 0 and above 1 refused there
    "utilization-0-0340": ("0.34.0", ("--gpu-memory-utilization", "0", "--max-model-len", "4096"), None, 1),
    "utilization-1.2-0340": ("0.34.0", ("--gpu-memory-utilization", "1.2", "--max-model-len", "4096"), None, 1),
}
# accepted by the release's config (a plain float, CacheConfig._verify_args refusing only above 1.0:
# config/cache.py@0.11.0 l.43/l.168), so vLLM sizes it and finds no room for cache blocks: a prediction, not bad input
SIZED_CASES = {
    "utilization-0-0110": ("0.11.0", ("--gpu-memory-utilization", "0", "--max-model-len", "4096"), None, 1),
}
# manifest-only flags (no estimate flag): plan -f against check (``config_values.load_format_refusal``)
PLAN_F_CASES = {
    "load-format-foo-0110": ("0.11.0", ("--load-format", "foo", "--max-model-len", "4096"), None, 1),
}


def _doc(name: str, release: str, args: tuple[str, ...], v1: str | None, gpus: int, tmp: Path) -> dict:
    env = None if v1 is None else [{"name": "VLLM_USE_V1", "value": v1}]
    doc = yaml.safe_load(Path(manifest(tmp, list(args), gpu=GPU, image=f"vllm/vllm-openai:v{release}", env=env,
                                       model=QWEN3)).read_text())
    doc["metadata"]["name"] = name
    doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every case as one Deployment of one file, judged by one `check -o json` run: its start finding by case."""
    tmp = tmp_path_factory.mktemp("agree")
    path = tmp / "all.yaml"
    cases = {**CASES, **PLAN_F_CASES, **SIZED_CASES}
    path.write_text(yaml.safe_dump_all([_doc(name, *case, tmp) for name, case in cases.items()]))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    items = {item["name"]: item for item in json.loads(got.stdout)["items"]}
    return {name: next(f for f in items[name]["findings"] if f["check"] == "start") for name in cases}


def _typed(release: str, args: tuple[str, ...], v1: str | None) -> list[str]:
    return ["--model", QWEN3, "--gpu", GPU, "--vllm-version", release, *args,
            *(("--vllm-use-v1", v1) if v1 is not None else ())]


@pytest.mark.parametrize("name", list(CASES))
def test_estimate_plan_and_check_name_one_refusal(checked, name):
    release, args, v1, _ = CASES[name]
    est = run_cli("estimate", *_typed(release, args, v1), "-o", "json")
    assert est.returncode == 0, est.stdout + est.stderr  # a predicted failure, as estimate's other ones
    data = json.loads(est.stdout)
    refusal = data["refusal"]
    assert data["outcome"] == "config_refused" and refusal, data
    assert data["kv_cache_tokens"] is None, data  # nothing sized
    finding = checked[name]["reason"]
    assert finding.startswith("predicted config_refused") and finding.endswith(refusal), (finding, refusal)
    plan = run_cli("plan", *_typed(release, args, v1))
    assert plan.returncode == 1, plan.stdout + plan.stderr
    problem = next(line for line in plan.stdout.splitlines() if line.startswith("problem:"))
    assert problem.startswith(f"problem:  predicted config_refused — {refusal}"), (problem, refusal)
    assert problem.count(refusal) == 1, problem  # the TP size's own line is not repeated beside it
    assert f"note: vLLM refuses the start as configured: {refusal}" in plan.stdout, plan.stdout


def test_plan_with_nothing_else_to_change_unsets_the_refused_value():
    """The rest fits with headroom: the plan is still a change (exit 1), its one step unsetting the refused flag (the
    release's default), predicted to fit."""
    got = run_cli("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L40S", "--vllm-version",
                  "0.12.0", "--max-model-len", "4096", "--max-num-seqs", "0", "--target-concurrency", "1", "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    data = json.loads(got.stdout)
    assert (data["verdict"], data["current"]["outcome"]) == ("change", "config_refused"), data
    assert [(s["unset"], s["set"], s["prediction"]["outcome"]) for s in data["steps"]] == [
        (["max-num-seqs"], {}, "fits")], data["steps"]


@pytest.mark.parametrize("name", list(PLAN_F_CASES))
def test_plan_from_a_manifest_names_checks_refusal(checked, name, tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(_doc(name, *PLAN_F_CASES[name], tmp_path)))
    got = run_cli("plan", "-f", str(path))
    assert got.returncode == 1, got.stdout + got.stderr
    problem = next(line for line in got.stdout.splitlines() if line.startswith("problem:"))
    words = checked[name]["reason"]
    assert problem.startswith(f"problem:  {words}"), (problem, words)


@pytest.mark.parametrize("name", list(SIZED_CASES))
def test_a_utilization_the_release_accepts_is_sized_alike(checked, name):
    release, args, v1, _ = SIZED_CASES[name]
    est = run_cli("estimate", *_typed(release, args, v1), "-o", "json")
    assert est.returncode == 0, est.stdout + est.stderr
    assert json.loads(est.stdout)["outcome"] == "no_cache_blocks", est.stdout
    assert checked[name]["reason"].startswith("predicted no_cache_blocks"), checked[name]


def test_several_refused_literals_are_all_unset():
    """Each refusal names its flag (``ConfigRefused.flag``): the plan drops them one by one whatever their order, where
    trying the flags in a fixed order gave up (exit 2) once dropping a later one uncovered an earlier one's refusal."""
    plan = run_cli("plan", *_typed("0.13.0", ("--max-num-seqs", "0", "--quantization", "foo",
                                              "--gpu-memory-utilization", "1.5", "--max-model-len", "4096"), None))
    assert plan.returncode == 1, plan.stdout + plan.stderr
    assert "problem:  predicted config_refused — vLLM 0.13.0 refuses --quantization foo" in plan.stdout, plan.stdout
    first = next(line for line in plan.stdout.splitlines() if line.startswith("1 "))
    assert "unset --max-num-seqs unset --gpu-memory-utilization unset --quantization" in first, first
