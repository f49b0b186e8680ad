"""A LeaderWorkerSet's world size as its release counts it, through the real `vllm-remedy check` (one batched run)
and the deploys' prediction line. From 0.12.0, with no ``--distributed-executor-backend`` and ``--nnodes`` 1,
``ParallelConfig`` compares TP × PP with the leader's own node's devices before it picks a backend
(config/parallel.py@0.12.0 l.560, @0.13.0 l.561-566, @0.34.0 l.1161-1166): a TP 2 group of two one-GPU pods fails
there ("World size (2) is larger than the number of available GPUs (1) in this node."), where the tools counted the
whole group and predicted a fit. Ray named, or before 0.12.0, the group's Ray cluster spans its pods' GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.check_batch import judge
from fixtures.lws_world import vllm_lws
from vllm_remedy.operations.leaderworkerset import prediction_line

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
TP2 = [LLAMA, "--max-model-len", "8192", "--tensor-parallel-size", "2"]
RAY = ["--distributed-executor-backend", "ray"]


def _lws(name: str, tag: str, args: list[str]) -> dict[str, Any]:
    lws = vllm_lws(name, args, size=2)
    for role in ("leaderTemplate", "workerTemplate"):
        for c in lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"]:
            c["image"] = f"vllm/vllm-openai:{tag}"
    return lws


CASES = {  # name: (set, vLLM's words check quotes, or None: the group's GPUs count and it fits)
    "node-0-13-0": (_lws("node-0-13-0", "v0.13.0", TP2),
                    "ValueError: World size (2) is larger than the number of available GPUs (1) in this node."),
    "node-0-34-0": (_lws("node-0-34-0", "v0.34.0", TP2),
                    "ValueError: World size (2) is larger than the number of available GPUs (1) in this node."),
    "node-0-12-0": (_lws("node-0-12-0", "v0.12.0", TP2),
                    "ValueError: Tensor parallel size (2) cannot be larger than the number of available GPUs (1)."),
    "ray-0-13-0": (_lws("ray-0-13-0", "v0.13.0", [*TP2, *RAY]), None),
    "group-0-11-0": (_lws("group-0-11-0", "v0.11.0", TP2), None),  # Ray's executor counts the group before 0.12.0
}


def test_check_counts_the_leaders_node_from_0_12_0(tmp_path: Path) -> None:
    items, text = judge([doc for doc, _ in CASES.values()], tmp_path, text=True)
    for name, (lws, said) in CASES.items():
        item, line = items[name], prediction_line(lws["spec"]["leaderWorkerTemplate"], 1, None)
        starts = [f for f in item["findings"] if f["check"] == "start"]
        if said is None:
            assert not starts and item["prediction"]["outcome"] == "fits", (name, item["findings"])
            assert "predicted to fail" not in line, line
            continue
        assert item["status"] == "fail", (name, item)
        assert any(f"'{said}'" in f["reason"] and "leader's own pod" in f["reason"] for f in starts), (name, starts)
        assert said in text[name], text[name]
        assert line.startswith("revision 1: predicted to fail: world size 2 (TP 2 × PP 1)") and said in line, line
