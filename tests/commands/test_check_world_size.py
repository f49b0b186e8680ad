"""`vllm-remedy check` and `plan` on a Deployment whose vLLM spans more GPUs than its pod gets: TP × PP (and the
data-parallel engines, each over its own TP × PP GPUs) above `limits nvidia.com/gpu`, or no GPU limit at all. vLLM
stops before sizing any memory (0.11.0: Ray's placement group for the world size never ready; "No CUDA GPUs are
available"), so neither may say the start fits."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from fixtures.check_batch import Alone, judge
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


def _deployment(extra: list[str], gpus: str | None = "1", image: str = "vllm/vllm-openai:v0.11.0") -> dict:
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
    return dep


def _manifest(tmp_path: Path, extra: list[str], gpus: str | None = "1") -> Path:
    path = tmp_path / "dep.json"
    path.write_text(json.dumps(_deployment(extra, gpus)))
    return path


def _policy(tmp_path: Path) -> Path:
    policy = tmp_path / "pol.yaml"
    policy.write_text(f"extends: {Path(POLICY).resolve()}\nknown_good: []\n")
    return policy


# 0.11.0 has no config check: Ray's placement group for the world size is never ready (``parallel.world_size_words``)
RAY_2 = "placement_group_specs=[{'GPU': 1.0, 'node:<pod IP>': 0.001}, {'GPU': 1.0}] within 1800 seconds"
RAY_4 = "placement_group_specs=[{'GPU': 1.0, 'node:<pod IP>': 0.001}, {'GPU': 1.0}, {'GPU': 1.0}, {'GPU': 1.0}]"
CANNOT_HOLD = [
    (["--tensor-parallel-size", "2"], "1", RAY_2),
    (["--pipeline-parallel-size", "2"], "1", RAY_2),
    (["-tp", "2", "-pp", "2"], "2", RAY_4),
    (["--data-parallel-size", "2"], "1", "No CUDA GPUs are available"),
    (["--tensor-parallel-size", "2", "--data-parallel-size", "2"], "2", "No CUDA GPUs are available"),
    ([], None, "No CUDA GPUs are available"),
    (["--tensor-parallel-size", "2"], None, "No CUDA GPUs are available"),
]
HOLDS = (["--tensor-parallel-size", "2"], "2")
#: Every (args, GPUs) `check` judges here, as one Deployment each of one file (``checked``).
CASES = [*((tuple(extra), gpus) for extra, gpus, _ in CANNOT_HOLD), (tuple(HOLDS[0]), HOLDS[1])]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[tuple[str, ...], str | None], tuple[dict, Alone]]:
    """Every case of this module as one Deployment (case-N) of one file, judged by one real `check -o json` run and
    one text run (two CLI starts instead of two per case: the suite's time budget): (JSON item, text) by case."""
    tmp = tmp_path_factory.mktemp("world-size")
    docs = []
    for i, (extra, gpus) in enumerate(CASES):
        docs.append(_deployment(list(extra), gpus))
        docs[-1]["metadata"]["name"] = f"case-{i}"
    items, blocks = judge(docs, tmp, "--policy", str(_policy(tmp)), text=True)
    return {case: (items[f"case-{i}"], Alone(0 if items[f"case-{i}"]["status"] == "pass" else 1, blocks[f"case-{i}"]))
            for i, case in enumerate(CASES)}


@pytest.mark.parametrize(("extra", "gpus", "said"), CANNOT_HOLD)
def test_check_fails_a_world_the_pod_cannot_hold(checked, extra, gpus, said):
    item, text = checked[(tuple(extra), gpus)]
    assert text.returncode == 1, text.stdout
    start = [f for f in item["findings"] if f["check"] == "start"]
    assert len(start) == 1 and said in start[0]["reason"], item["findings"]
    assert start[0]["severity"] == "error" and "nvidia.com/gpu" in start[0]["fix"]
    assert item["prediction"]["estimate"] is None, item["prediction"]  # no KV figure is the pod's
    assert text.returncode == 1 and "fits" not in text.stdout.split("\n")[0], text.stdout


def test_check_passes_a_world_the_pod_holds(checked):
    """TP 2 on two GPUs, and data parallelism before 0.8.3 (no such flag: argparse's business, not this rule's)."""
    item, _ = checked[(tuple(HOLDS[0]), HOLDS[1])]
    starts = [f for f in item["findings"] if f["check"] == "start"]
    assert starts == [], starts


@pytest.mark.parametrize(("extra", "gpus", "said"), [
    (["--tensor-parallel-size", "2"], "1", RAY_2),
    (["--pipeline-parallel-size", "2"], "1", "world size 2 (TP 1 × PP 2)"),
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
