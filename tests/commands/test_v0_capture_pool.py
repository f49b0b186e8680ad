"""V0's CUDA-graph pool follows --max-num-seqs, through the real CLI (hostile review 12, #10).

V0 captures one graph per size of its list up to max_num_seqs (worker/model_runner.py@0.6.3
``_get_max_graph_batch_size``, 256 at most before 0.6.5; config.py@0.8.5 ``_set_cudagraph_sizes``' V0 branch, up to
8,192 from 0.6.5), so fewer sequences capture fewer, smaller graphs; V1's capture-size flags do not reach it. The
pool's split into a per-size and a fixed part is not derived (``capture.FIXED_SHARE``); these tests hold the sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
ROOT = Path(__file__).resolve().parents[2]


def _estimate(cli, version: str, seqs: int, *extra: str, gpu: str = "NVIDIA-L4", util: str = "0.97") -> dict:
    out = cli("estimate", "--model", LLAMA, "--gpu", gpu, "--max-model-len", "8192", "--gpu-memory-utilization",
              util, "--max-num-seqs", str(seqs), "--vllm-version", version, *extra, "-o", "json")
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def _manifest(tmp: Path, version: str, args: list[str], env: dict[str, str] | None = None) -> str:
    container = {"name": "vllm", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve"],
                 "args": [LLAMA, *args], "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cap", "namespace": "llm"},
           "spec": {"selector": {"matchLabels": {"app": "cap"}},
                    "template": {"metadata": {"labels": {"app": "cap"}},
                                 "spec": {"containers": [container],
                                          "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"}}}}}
    path = tmp / f"cap-{version}.json"
    path.write_text(json.dumps(dep))
    return str(path)


def _plan(cli, manifest: str, *extra: str) -> dict:
    out = cli("plan", "-f", manifest, "--policy", str(ROOT / "policies" / "default.yaml"), *extra, "-o", "json")
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_fewer_sequences_capture_a_smaller_pool_on_v0(cli) -> None:
    """The reviewer's command: 0.6.3 on an L4 at 0.97 charged 0.96 GiB of graphs at 8, 64 and 256 sequences."""
    pools = {seqs: _estimate(cli, "0.6.3", seqs)["cudagraph_gib"] for seqs in (8, 64, 256, 512)}
    assert pools[8] < pools[64] < pools[256]
    assert pools[512] == pools[256]  # 0.6.3's list ends at 256 whatever max_num_seqs is
    # 0.6.5 on: the list runs to 8,192, so 512 sequences capture more graphs than the default 256
    assert _estimate(cli, "0.6.6", 512)["cudagraph_gib"] > _estimate(cli, "0.6.6", 256)["cudagraph_gib"]
    # V1 (0.8.5 on an L4) captures its own list, bounded by the batch, not max_num_seqs: unchanged
    assert _estimate(cli, "0.8.5", 8)["cudagraph_gib"] == _estimate(cli, "0.8.5", 256)["cudagraph_gib"]


def test_the_smaller_pool_decides_the_capture_on_v0(cli) -> None:
    """0.6.3 (no activation freed before the cache) on an L40S at 0.98: 256 sequences die capturing, 8 start."""
    assert _estimate(cli, "0.6.3", 256, gpu="NVIDIA-L40S", util="0.98")["start"] == "cudagraph_capture_oom"
    assert _estimate(cli, "0.6.3", 8, gpu="NVIDIA-L40S", util="0.98")["start"] == "fits"


def test_v0_ignores_v1s_capture_size_flag(cli, tmp_path: Path) -> None:
    """--cuda-graph-sizes sets V1's sizes on 0.9-0.10; V0's branch of ``_set_cudagraph_sizes`` reads only
    max_num_seqs (config.py@0.9.2), so the pool stays the default's."""
    base = ["--max-model-len", "8192", "--gpu-memory-utilization", "0.9"]
    plain = _plan(cli, _manifest(tmp_path, "0.9.2", base, {"VLLM_USE_V1": "0"}))
    sized = _plan(cli, _manifest(tmp_path, "0.9.2", [*base, "--cuda-graph-sizes", "64"], {"VLLM_USE_V1": "0"}))
    assert sized["current"]["cudagraph_gib"] == plain["current"]["cudagraph_gib"]


def test_the_v0_capture_rung_is_a_smaller_max_num_seqs_priced_with_its_graphs(cli, tmp_path: Path) -> None:
    """The reviewer's plan: 0.6.3 on an L4 at 0.97 dies capturing; the capture-size rung is --max-num-seqs (the flag
    vLLM's own capture line names), every rung is priced with the pool its max_num_seqs captures, and the note names
    the only flag 0.6.3 has (no --compilation-config before 0.6.5)."""
    manifest = _manifest(tmp_path, "0.6.3", ["--max-model-len", "8192", "--gpu-memory-utilization", "0.97"])
    plan = _plan(cli, manifest)
    assert plan["current"]["start"] == "cudagraph_capture_oom"
    capture = [s for s in plan["steps"] if s["lever"] == "cudagraph-capture-size"]
    assert capture and "max-num-seqs" in capture[0]["set"], plan["steps"]
    for step in plan["steps"]:
        assert not {"cuda-graph-sizes", "max-cudagraph-capture-size", "compilation-config"} & set(step["set"])
        seqs = int(step["set"].get("max-num-seqs", 256))
        util = step["set"].get("gpu-memory-utilization", "0.97")
        if step["set"].get("tensor-parallel-size") or step["set"].get("enforce-eager"):
            continue
        again = cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-model-len",
                    step["set"].get("max-model-len", "8192"), "--gpu-memory-utilization", util, "--max-num-seqs",
                    str(seqs), "--vllm-version", "0.6.3", "-o", "json")
        assert json.loads(again.stdout)["cudagraph_gib"] == step["prediction"]["cudagraph_gib"], step
    assert capture[0]["prediction"]["cudagraph_gib"] < plan["current"]["cudagraph_gib"]
    notes = " ".join(plan["notes"])
    assert "captures CUDA graphs up to --max-num-seqs" in notes and "it has no --compilation-config" in notes
    assert "only through --compilation-config" not in notes


@pytest.mark.parametrize(("version", "flag_named"), [("0.6.3", False), ("0.6.5", True), ("0.9.2", True)])
def test_the_note_names_the_flags_each_v0_release_has(cli, version: str, flag_named: bool) -> None:
    """An observed capture OOM on V0 (VLLM_USE_V1=0 where V1 is the default): --max-num-seqs is offered, never
    --cuda-graph-sizes (0.9.2 on main offered it, a flag V0 never reads), and --compilation-config is named only
    where engine/arg_utils.py has it (0.6.5 on)."""
    out = cli("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-model-len", "8192", "--gpu-memory-utilization",
              "0.9", "--vllm-version", version, "--vllm-use-v1", "0", "--failure", "cudagraph_capture_oom",
              "--target-concurrency", "1", "-o", "json")
    assert out.returncode in (0, 1), out.stderr
    plan = json.loads(out.stdout)
    first = plan["steps"][0]
    assert first["lever"] == "cudagraph-capture-size" and first["set"]["max-num-seqs"] == "128", first
    assert not any("cuda-graph-sizes" in s["set"] for s in plan["steps"])
    note = next(n for n in plan["notes"] if "--max-num-seqs" in n)
    assert ("--compilation-config's cudagraph_capture_sizes" in note) is flag_named, note
    assert ("it has no --compilation-config" in note) is not flag_named, note
