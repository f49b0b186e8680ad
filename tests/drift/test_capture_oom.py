"""A template the memory model predicts to die in graph capture is drift, as `check -f` fails it (pure).

vLLM 0.27.1 runs Model Runner V2 for dense models: its CUDA graphs are captured after the KV cache, outside the
``--gpu-memory-utilization`` budget. The profile's activation is freed before the KV cache (utils/mem_utils.py@0.27.1),
so at 0.98 with 64 sequences the graphs fit on an L40S; at 0.99 with 512 sequences the graphs and then
``warmup_kernels``' sampler over 512 requests (v1/worker/gpu/warmup.py@0.26.0) do not (peak 44.80 of 44.42 GiB):
every vLLM start check passes (``Estimate.fits``) and the start still dies in capture (``Estimate.graph_capture_oom``).
A Deployment edited to that unit inside a policy that allows 0.99 (pods not yet restarted, or a paused rollout) must
not be reported in sync by the scheduled drift check while ``vllm-remedy check -f`` of the same manifest says
``start [error]``: both judge by one rule, ``remedies.predict.failed_prediction``.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.drift import checks
from vllm_remedy.drift.manifest_check import check_workload
from vllm_remedy.drift.manifest_workloads import workloads
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.predict import failed_prediction

NOW = parse_rfc3339("2026-01-01T12:00:00Z")
POLICY = Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]},
                              "flags": {"gpu-memory-utilization": {"min": 0.5, "max": 0.99}}})


def deployment(image: str, utilization: str) -> dict[str, Any]:
    """Llama-3.1-8B at 16k and 512 sequences on one pinned L40S."""
    args = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "--gpu-memory-utilization", utilization,
            "--max-num-seqs", "512"]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "m", "namespace": "llm", "uid": "d1", "annotations": {}},
            "spec": {"selector": {"matchLabels": {"app": "m"}},
                     "template": {"metadata": {"labels": {"app": "m"}},
                                  "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                           "containers": [{"name": "vllm", "image": image,
                                                           "command": ["vllm", "serve"], "args": args,
                                                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def test_drift_does_not_call_a_predicted_graph_capture_oom_in_sync() -> None:
    got = checks.run_checks(deployment("vllm/vllm-openai:v0.27.1", "0.99"), POLICY, NOW)
    e = got.prediction.estimate
    assert e is not None and e.fits and e.graph_capture_oom  # vLLM's checks pass; the capture does not
    by_name = {c.name: c for c in got.checks}
    assert by_name["concurrency"].status == checks.DRIFT, by_name["concurrency"]
    assert by_name["concurrency"].detail.startswith("predicted cudagraph_capture_oom on NVIDIA-L40S ("), by_name
    assert "extrapolated" not in by_name["concurrency"].detail  # 0.27.1's rules are read from its source


def test_drift_and_check_fail_the_start_with_one_rule_and_one_reason() -> None:
    dep = deployment("vllm/vllm-openai:v0.27.1", "0.99")
    drift = {c.name: c for c in checks.run_checks(dep, POLICY, NOW).checks}["concurrency"]
    [workload] = workloads([dep], "m.yaml")
    start = [f for f in check_workload(workload, POLICY, NOW).findings if f.check == "start"]
    why = failed_prediction(checks.predict(dep, POLICY))
    assert why is not None and drift.detail == why
    assert len(start) == 1 and start[0].reason == why


def test_the_same_unit_with_room_for_its_graphs_stays_in_sync() -> None:
    """0.90 leaves the graphs their room on the card: no drift from the new rule (it is not 'any MRv2 is drift')."""
    got = checks.run_checks(deployment("vllm/vllm-openai:v0.27.1", "0.90"), POLICY, NOW)
    e = got.prediction.estimate
    assert e is not None and e.fits and not e.graph_capture_oom
    by_name = {c.name: c for c in got.checks}
    assert by_name["concurrency"].status == checks.PASS, by_name["concurrency"]
