"""A rehearsal pod the memory model cannot size is "not played" (``sim.vllm_pod.unmodelled_start``): it logs one WARNING
record of the rehearsal's own and runs on, never Ready. ``diagnose`` on its log reads that record as what it is — no
failure of vLLM, so no rollback advice — and says the rehearsal does not play the start and why, to be confirmed on a
real pod. Hub: tests/fixtures/hf_hub_server through HF_ENDPOINT, never the real Hub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, Repo, hub_server, use_hub
from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.vllm.startup_log.stage import startup_stage

NEXT = "acme-corp/Next-Unsized"
RECORD = "[vllm-remedy rehearsal] cannot play this start"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    repos = {NEXT: Repo({"config.json": {**SMOLLM2_CONFIG, "architectures": ["Qwen3NextForCausalLM"],
                                         "model_type": "qwen3_next"}})}
    with pytest.MonkeyPatch.context() as mp, hub_server(repos) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        with l40s_pod_cluster(8) as c:
            yield c


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.34.0",
                                     "command": ["vllm", "serve"], "args": [NEXT, "--max-model-len", "4096"],
                                     "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def log(c: Cluster, name: str) -> str:
    try:
        return c.read_log("llm", name)
    except Exception:  # no container yet
        return ""


def test_diagnose_reads_the_rehearsals_record_as_not_played_not_as_a_failure(cluster, cli, tmp_path: Path) -> None:
    """Before: "unknown: the start failed with something this tool does not recognise", advice "roll back"."""
    cluster.store.create("pods", pod("unplayed"))
    assert cluster.wait_for(lambda: RECORD in log(cluster, "unplayed"), 30), log(cluster, "unplayed")[-2000:]
    saved = tmp_path / "pod.log"
    saved.write_text(log(cluster, "unplayed"))
    got = cli("diagnose", "--log", str(saved))
    assert got.returncode == 0, got.stderr
    assert "the rehearsal does not play this start: the memory model cannot size it" in got.stdout, got.stdout
    assert "Qwen3NextForCausalLM" in got.stdout and "confirm it on a real pod" in got.stdout, got.stdout
    assert "roll back" not in got.stdout and "does not recognise" not in got.stdout, got.stdout
    stage = str(startup_stage(saved.read_text()))  # what a rollout wait shows of the pod while it waits
    assert "the rehearsal does not play this start" in stage and "confirm it on a real pod" in stage, stage
    data = json.loads(cli("diagnose", "--log", str(saved), "-o", "json").stdout)
    assert "Qwen3NextForCausalLM" in data["unplayed"] and "roll back" not in data["hint"], data
