"""`vllm-remedy check` and `plan` on a Deployment whose vLLM spans more GPUs than its pod gets: TP × PP (and the
data-parallel engines, each over its own TP × PP GPUs) above `limits nvidia.com/gpu`, or no GPU limit at all. vLLM
stops before sizing any memory ("World size (2) is larger than the number of available GPUs (1)", "No CUDA GPUs are
available"), as the rehearsal pod does, so neither may say the start fits."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from vllm_remedy.sim.seed import load_seed, set_path

POLICY = "policies/llama-8b.yaml"


def seed_revision_14() -> dict:
    """The runbook seed's revision 14: Llama-3.1-8B-Instruct on an L40S, one GPU (tests/commands/test_check.py)."""
    entry = load_seed("runbook")[0]["deployments"][0]
    manifest = copy.deepcopy(entry["manifest"])
    for rev in entry["revisions"]:
        for path, value in rev["set"].items():
            set_path(manifest, path, value, "seed")
    return manifest


def _manifest(tmp_path: Path, extra: list[str], gpus: str | None = "1", image: str = "vllm/vllm-openai:v0.11.0"
              ) -> Path:
    dep = seed_revision_14()
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["image"] = image
    args = container["args"]
    args[args.index("--max-model-len") + 1] = "8192"
    args += extra
    limits = container["resources"]["limits"]
    if gpus is None:
        limits.pop("nvidia.com/gpu")
    else:
        limits["nvidia.com/gpu"] = gpus
    path = tmp_path / "dep.json"
    path.write_text(json.dumps(dep))
    return path


def _policy(tmp_path: Path) -> Path:
    policy = tmp_path / "pol.yaml"
    policy.write_text(f"extends: {Path(POLICY).resolve()}\nknown_good: []\n")
    return policy


@pytest.mark.parametrize(("extra", "gpus", "said"), [
    (["--tensor-parallel-size", "2"], "1", "World size (2) is larger than the number of available GPUs (1)"),
    (["--pipeline-parallel-size", "2"], "1", "World size (2) is larger than the number of available GPUs (1)"),
    (["-tp", "2", "-pp", "2"], "2", "World size (4) is larger than the number of available GPUs (2)"),
    (["--data-parallel-size", "2"], "1", "No CUDA GPUs are available"),
    (["--tensor-parallel-size", "2", "--data-parallel-size", "2"], "2", "No CUDA GPUs are available"),
    ([], None, "No CUDA GPUs are available"),
    (["--tensor-parallel-size", "2"], None, "No CUDA GPUs are available"),
])
def test_check_fails_a_world_the_pod_cannot_hold(cli, tmp_path, extra, gpus, said):
    got = cli("check", "-f", str(_manifest(tmp_path, extra, gpus)), "--policy", str(_policy(tmp_path)), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    item = json.loads(got.stdout)["items"][0]
    start = [f for f in item["findings"] if f["check"] == "start"]
    assert len(start) == 1 and said in start[0]["reason"], item["findings"]
    assert start[0]["severity"] == "error" and "nvidia.com/gpu" in start[0]["fix"]
    assert item["prediction"]["estimate"] is None, item["prediction"]  # no KV figure is the pod's
    text = cli("check", "-f", str(_manifest(tmp_path, extra, gpus)), "--policy", str(_policy(tmp_path)))
    assert text.returncode == 1 and "fits" not in text.stdout.split("\n")[0], text.stdout


def test_check_passes_a_world_the_pod_holds(cli, tmp_path):
    """TP 2 on two GPUs, and data parallelism before 0.8.3 (no such flag: argparse's business, not this rule's)."""
    got = cli("check", "-f", str(_manifest(tmp_path, ["--tensor-parallel-size", "2"], "2")), "--policy",
              str(_policy(tmp_path)), "-o", "json")
    starts = [f for i in json.loads(got.stdout)["items"] for f in i["findings"] if f["check"] == "start"]
    assert starts == [], starts


@pytest.mark.parametrize(("extra", "gpus", "said"), [
    (["--tensor-parallel-size", "2"], "1", "World size (2) is larger than the number of available GPUs (1)"),
    (["--pipeline-parallel-size", "2"], "1", "World size (2)"),
    (["--data-parallel-size", "2"], "1", "No CUDA GPUs are available"),
    ([], None, "No CUDA GPUs are available"),
])
def test_plan_names_the_world_size_problem(cli, tmp_path, extra, gpus, said):
    path = _manifest(tmp_path, extra, gpus)
    got = cli("plan", "-f", str(path), "--policy", str(_policy(tmp_path)))
    assert got.returncode == 1, got.stdout + got.stderr
    assert "problem:  none" not in got.stdout and said in got.stdout, got.stdout
    doc = json.loads(cli("plan", "-f", str(path), "--policy", str(_policy(tmp_path)), "-o", "json").stdout)
    assert doc["verdict"] != "no_change_needed" and said in doc["problem"] and doc["steps"] == [], doc
