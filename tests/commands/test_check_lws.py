"""`vllm-remedy check` on a LeaderWorkerSet: one engine over the group, sized as the LWS deploys size it (TP × PP
split, the same prediction line), in `kubectl get lws -o json` form and the vLLM LWS docs' `sh -c` form; a leader and
worker that disagree on a memory flag are reported; no fix changes the group's shape."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from fixtures.lws_world import GOOD_ARGS, vllm_lws
from vllm_remedy.operations.leaderworkerset import prediction_line

POLICY = str(Path(__file__).resolve().parents[2] / "gameday" / "policies" / "qwen-lws.yaml")
HEADLINE = "LeaderWorkerSet/llm/qwen-lws container vllm-leader"
MODEL = GOOD_ARGS[0]
DOCS_LEADER = ("bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader "
               "--ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server --port 8080 "
               f"--model {MODEL} --max-model-len 32768 --gpu-memory-utilization 0.90 --tensor-parallel-size 1 "
               "--pipeline_parallel_size 2")
DOCS_WORKER = ("bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker "
               "--ray_address=$(LWS_LEADER_ADDRESS)")


def as_kubectl_json(lws: dict[str, Any]) -> dict[str, Any]:
    """`kubectl get lws -o json`: a List, with the server's metadata and status."""
    got = copy.deepcopy(lws)
    got["metadata"].update({"resourceVersion": "4711", "generation": 1, "uid": "0b4d", "annotations": {}})
    got["status"] = {"readyReplicas": 1, "replicas": 1, "updatedReplicas": 1}
    return {"apiVersion": "v1", "kind": "List", "items": [got], "metadata": {"resourceVersion": ""}}


def docs_form(lws: dict[str, Any]) -> dict[str, Any]:
    """The vLLM LWS docs' shape: leader and worker start through `sh -c` and the multi-node script."""
    got = copy.deepcopy(lws)
    lwt = got["spec"]["leaderWorkerTemplate"]
    leader, worker = lwt["leaderTemplate"]["spec"]["containers"][0], lwt["workerTemplate"]["spec"]["containers"][0]
    leader["command"], worker["command"] = ["sh", "-c", DOCS_LEADER], ["sh", "-c", DOCS_WORKER]
    leader.pop("args", None)
    return got


def peak(tmp: Path, value: int) -> str:
    path = tmp / "qwen-lws-peak.yaml"
    path.write_text(f"extends: {POLICY.removesuffix('.yaml')}\npeak_concurrency: {value}\n")
    return str(path)


def deploys_line(lws: dict[str, Any]) -> str:
    """What the LWS deploys print for the set's template (without their "revision N: " prefix)."""
    return prediction_line(lws["spec"]["leaderWorkerTemplate"], 1, None).split(": ", 1)[1]


def test_a_healthy_lws_is_sized_over_its_group_as_the_deploys_size_it(cli, tmp_path: Path) -> None:
    """the 32B distill, PP 2 over two L40S: half the weights per GPU — it fits; the one finding under qwen-lws is the
    policy's peak concurrency, and the fix keeps the group's shape (no --tensor-parallel-size)."""
    lws = vllm_lws()
    for form in (as_kubectl_json(lws), docs_form(lws)):
        path = tmp_path / "lws.json"
        path.write_text(json.dumps(form))
        got = cli("check", "-f", str(path), "--policy", POLICY)
        out = got.stdout
        assert got.returncode == 1, out + got.stderr
        assert "oom_loading_weights" not in out and "tensor-parallel-size" not in out, out
        assert "  start [" not in out, out
        low = "  concurrency [error]: predicted maximum concurrency 1.44x on NVIDIA-L40S is below the policy's peak 8"
        assert low in out.splitlines(), out
        assert any(line.startswith("  smallest fix (planner): --max-model-len ") for line in out.splitlines()), out
        assert f"  note: {deploys_line(lws)}" in out.splitlines(), out


def test_a_consistent_lws_within_its_policy_passes_in_both_forms(cli, tmp_path: Path) -> None:
    lws = vllm_lws()
    policy = peak(tmp_path, 1)  # the group's 1.44x covers a peak of one request at 32k
    for name, form in (("kubectl.json", as_kubectl_json(lws)), ("docs.yaml", docs_form(lws))):
        path = tmp_path / name
        path.write_text(json.dumps(form) if name.endswith(".json") else yaml.safe_dump(form))
        got = cli("check", "-f", str(path), "--policy", policy)
        assert got.returncode == 0, got.stdout + got.stderr
        first = got.stdout.splitlines()[0]
        assert first.startswith(f"ok    {path}: {HEADLINE} — fits on NVIDIA-L40S, maximum concurrency 1.44x"), first
        assert got.stdout.splitlines()[-1] == "checked 1 vLLM workload(s) in 1 file(s): 1 passed, 0 failed"


def test_a_worker_that_disagrees_with_the_leader_is_reported(cli, tmp_path: Path) -> None:
    lws = vllm_lws()
    lwt = lws["spec"]["leaderWorkerTemplate"]
    worker = copy.deepcopy(lwt["leaderTemplate"]["spec"]["containers"][0])
    worker["name"], worker["args"] = "vllm-worker", [a if a != "32768" else "16384" for a in GOOD_ARGS]
    del worker["readinessProbe"]
    lwt["workerTemplate"]["spec"]["containers"] = [worker]
    path = tmp_path / "lws.json"
    path.write_text(json.dumps(as_kubectl_json(lws)))
    got = cli("check", "-f", str(path), "--policy", peak(tmp_path, 1))
    assert got.returncode == 1, got.stdout + got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == f"FAIL  {path}: {HEADLINE} (policy qwen-lws-peak)", lines
    assert ("  leader-worker [error]: leader and worker templates disagree on --max-model-len (leader 32768, worker "
            "16384)") in lines, lines
    assert lines[-1] == "checked 1 vLLM workload(s) in 1 file(s): 0 passed, 1 failed"  # one engine, one workload
