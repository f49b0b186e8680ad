"""The predictions table names a predicted graph-capture OOM as such, and says when a release's rules are extrapolated.

vLLM 0.27.1 runs Model Runner V2 for dense models: its CUDA graphs are captured after the KV cache, outside the
budget. The profile's activation is freed before the KV cache (utils/mem_utils.py@0.27.1), so Llama-3.1-8B at 0.98 with
64 sequences on an L40S fits; at 0.99 with 512 sequences the graphs and then ``warmup_kernels``' sampler over 512
requests (v1/worker/gpu/warmup.py@0.26.0) do not (peak 44.80 of 44.42 GiB): it passes every vLLM check and dies in
capture. The memory model
predicts exactly that (``Estimate.graph_capture_oom``); the game-day report must not print ``predicted: fits ...
agree: no`` for it. 0.27.1's rules are read from its source (modelled: no "extrapolated" anywhere in the row), while a
release newer than the newest modelled one (0.34) says its rules are extrapolated, as every other output does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures.pyinfra_run import ROOT
from vllm_remedy.gameday.predict import predict_pod
from vllm_remedy.sim.vllm_pod.keys import GPU_USED_GIB

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
NODE = {"metadata": {"name": "gpu-l40s-3", "labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}
EXTRAPOLATED = "vLLM 0.35.0: rules extrapolated from 0.34.0"
#: Revision 15 of the runbook's llama-8b: 0.27.1 at utilization 0.99, 512 sequences; restore goes back to revision 14.
SCENARIO = f"""name: mrv2-u99
title: "0.27.1 at utilization 0.99 with 512 sequences: graphs and the sampler warm-up do not fit after the KV cache"
description: Model Runner V2 captures its graphs outside the budget and every pod of the new revision dies in capture.
target: {{namespace: llm, deployment: llama-8b}}
policy: {ROOT / "policies" / "llama-8b.yaml"}
world: {{seed: runbook}}
fault:
  - what: "new revision: vLLM 0.27.1 at utilization 0.99, 512 sequences"
    deployment:
      change-cause: "upgrade to 0.27.1, utilization 0.99, 512 sequences"
      set:
        spec.template.spec.containers[vllm].image: vllm/vllm-openai:v0.27.1
        spec.template.spec.containers[vllm].args: ["{LLAMA}", "--max-model-len", "16384",
                                                   "--gpu-memory-utilization", "0.99", "--max-num-seqs", "512"]
expect:
  detection: {{classification: cudagraph_capture_oom}}
deploys: ["{ROOT / "deploys" / "restore.py"}"]
success:
  ready-replicas: 2
  within: 1h
  gpu-product: NVIDIA-L40S
  flags: {{max-model-len: "16384"}}
  max-template-changes: 1
"""


def spec(image: str, utilization: str, seqs: str = "64") -> dict[str, Any]:
    return {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"],
                            "args": [LLAMA, "--max-model-len", "16384", "--gpu-memory-utilization", utilization,
                                     "--max-num-seqs", seqs],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


def test_a_predicted_graph_capture_oom_is_predicted_as_one() -> None:
    outcome, detail = predict_pod(spec("vllm/vllm-openai:v0.27.1", "0.99", "512"), NODE, "vllm")
    assert outcome == "cudagraph_capture_oom", (outcome, detail)
    assert "exceeds the 44.42 GiB card" in detail and "extrapolated" not in detail, detail


def test_a_budget_that_overruns_the_card_is_not_called_a_capture_oom() -> None:
    """V0 0.7.3 budgets the memory profiling adds, blind to other processes: 6 GiB held by another process on the
    L40S makes the KV cache allocation itself run out, before any graph. That is no capture OOM (the classifier names
    a CUDA OOM in initialize_kv_cache kv_cache_allocation_oom), and never fits."""
    node = {"metadata": {**NODE["metadata"], "annotations": {GPU_USED_GIB: "6"}}}
    outcome, detail = predict_pod(spec("vllm/vllm-openai:v0.7.3", "0.90"), node, "vllm")
    assert outcome == "kv_cache_allocation_oom", (outcome, detail)
    assert "before any CUDA graph: a CUDA OOM while the KV cache is allocated" in detail, detail


def test_a_fitting_start_on_a_newer_release_says_its_rules_are_extrapolated() -> None:
    outcome, detail = predict_pod(spec("vllm/vllm-openai:v0.35.0", "0.90"), NODE, "vllm")
    assert outcome == "fits" and detail.endswith(EXTRAPOLATED), detail


def test_a_modelled_release_is_printed_as_before() -> None:
    assert predict_pod(spec("vllm/vllm-openai:v0.8.5", "0.90"), NODE, "vllm") == (
        "fits", "197,840 KV tokens, 12.08x at 16384")


def test_the_report_agrees_with_a_capture_oom_it_predicted(cli, tmp_path: Path) -> None:
    """End to end under ``--reality exact``: the pod dies in capture as predicted; md, html and json all say so."""
    scenario = tmp_path / "mrv2-u99.yaml"
    scenario.write_text(SCENARIO)
    got = cli("gameday", "run", str(scenario), "--reality", "exact", "--speed", "300", "--report-dir",
              str(tmp_path / "out"), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0 and body["passed"] is True, body["checks"]
    died = [p for p in body["predictions"] if p["happened"] == "cudagraph_capture_oom"]
    assert died, body["predictions"]
    for row in died:
        assert (row["predicted"], row["agree"]) == ("cudagraph_capture_oom", "yes"), row
        assert (row["vllm_version"], row["rules"]) == ("0.27.1", "modelled"), row
        assert "extrapolated" not in row["prediction"], row
    assert all(p["rules"] == "modelled" for p in body["predictions"] if p["image"] == "v0.8.5"), body["predictions"]
    md, page = Path(body["report"]["md"]).read_text(), Path(body["report"]["html"]).read_text()
    assert f"| cudagraph_capture_oom ({died[0]['prediction']}) | cudagraph_capture_oom |" in md, md
    assert "extrapolated" not in md and "| fits (226,544" not in md, md  # its KV tokens
    assert f"<td>cudagraph_capture_oom ({died[0]['prediction']})</td><td>cudagraph_capture_oom</td>" in page
    assert json.loads(Path(body["report"]["json"]).read_text())["predictions"] == body["predictions"]


def test_a_kv_allocation_oom_is_predicted_and_seen_alike(cli, tmp_path: Path) -> None:
    """Game day 3 on V0 0.7.3 (8 GiB held on every L40S): the budget ignores the foreign memory, the pods die
    allocating the KV cache, and the row says so on both sides (a reviewer saw 'unknown' predicted, capture OOM seen,
    agree n/a: the rehearsal's log had kept V0's 'Capturing cudagraphs' announcement before the OOM)."""
    text = (ROOT / "gameday" / "03-gpu-memory-held.yaml").read_text()
    scenario = tmp_path / "03-v073.yaml"
    scenario.write_text(text.replace("v0.9.2", "v0.7.3").replace("../", f"{ROOT}/"))
    got = cli("gameday", "run", str(scenario), "--reality", "exact", "--speed", "300", "--report-dir",
              str(tmp_path / "out"), "-o", "json")
    body = json.loads(got.stdout)
    rows = [p for p in body["predictions"] if "before any CUDA graph" in p["prediction"]]
    assert rows, body["predictions"]
    for row in rows:
        assert (row["predicted"], row["happened"], row["agree"]) == (
            "kv_cache_allocation_oom", "kv_cache_allocation_oom", "yes"), row
