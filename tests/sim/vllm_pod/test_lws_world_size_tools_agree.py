"""The tools' LeaderWorkerSet world-size prediction against the rehearsal pod's own reading (``sim/vllm_pod/launch``,
kept apart from the tools): a TP 2 group of two one-GPU pods on v0.13.0 without ``--distributed-executor-backend``
— check quotes the error the leader's log ends with (config/parallel.py@0.13.0 l.561-566: the leader's own node
counts) — and with Ray named both serve."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.check_batch import judge
from fixtures.lws_world import vllm_lws
from fixtures.served_pods import Apis, ended, served_lws

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
TP2 = [LLAMA, "--max-model-len", "8192", "--tensor-parallel-size", "2"]
WORDS = "World size (2) is larger than the number of available GPUs (1) in this node."


@pytest.fixture(scope="module")
def apis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apis]:
    yield from served_lws(tmp_path_factory.mktemp("kube"), 4)  # one-GPU nodes: groups of two pods


def _lws(name: str, args: list[str]) -> dict[str, Any]:
    lws = vllm_lws(name, args, size=2)
    for role in ("leaderTemplate", "workerTemplate"):
        for c in lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"]:
            c["image"] = "vllm/vllm-openai:v0.13.0"
    return lws


def _leader(apis: Apis, lws: dict[str, Any]) -> tuple[str, int | None]:
    """The leader's log and exit code once it ends, or (its log, None) once it serves."""
    core, custom = apis
    name = lws["metadata"]["name"]
    custom.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", "llm", "leaderworkersets", lws)
    return ended(core, f"{name}-0", "vllm-leader")


def test_check_and_the_leader_agree_on_the_groups_world_size(apis, tmp_path: Path) -> None:
    sets = {"tp2-default": _lws("tp2-default", TP2),
            "tp2-ray": _lws("tp2-ray", [*TP2, "--distributed-executor-backend", "ray"])}
    items, _ = judge(list(sets.values()), tmp_path)
    log, code = _leader(apis, sets["tp2-default"])
    assert code == 1 and WORDS in log, log[-2000:]
    assert any(f"'ValueError: {WORDS}'" in f["reason"] for f in items["tp2-default"]["findings"]), items["tp2-default"]
    log, code = _leader(apis, sets["tp2-ray"])
    assert code is None and "Application startup complete" in log, log[-2000:]
    ray = items["tp2-ray"]
    assert ray["status"] == "pass" and ray["prediction"]["outcome"] == "fits", ray
