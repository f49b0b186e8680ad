"""The rendered rules through Prometheus' own promtool: `check rules`, and `test rules` on series shaped like
kube-state-metrics 2.x and vLLM export them — which alerts fire, with which labels, and which must not.

promtool comes from Debian's `prometheus` package (scripts/get_tools.py); the tests skip, saying so, when
it cannot be had.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from vllm_remedy.alerts import rule_groups
from vllm_remedy.policy import load_policy

ROOT = Path(__file__).resolve().parents[2]
PROMTOOL = ROOT / ".tools/prometheus/usr/bin/promtool"
POD = "llama-8b-5d8f7c6b9-x2x7k"
OTHER = "llama-70b-7c9d8-abcde"  # another Deployment in the same namespace: not this policy's pod
VLLM_IMAGE = "vllm/vllm-openai:v0.8.5"


@pytest.fixture(scope="module")
def promtool() -> Path:
    if not PROMTOOL.is_file():
        pytest.skip(f"promtool not at {PROMTOOL}: run scripts/get_tools.py (needs apt-get download)")
    return PROMTOOL


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    groups = rule_groups({"llama-8b": load_policy(ROOT / "policies/llama-8b.yaml")})
    path = tmp_path_factory.mktemp("rules") / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False, width=1_000_000))
    return path, {r["alert"]: r for g in groups for r in g["rules"]}


def _series(name: str, values: str, **labels: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def _expand(text: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), "<no value>"), text)


def _expect(rule: dict[str, Any], **labels: str) -> dict[str, Any]:
    """What promtool must see: the rule's labels plus the series', annotations with templates expanded."""
    return {"exp_labels": {**rule["labels"], **labels},
            "exp_annotations": {k: _expand(v, labels) for k, v in rule["annotations"].items()}}


def _run(promtool: Path, rules: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    unit = rules.parent / "unit.yaml"
    unit.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m", "tests": tests},
                                   sort_keys=False, width=1_000_000))
    return subprocess.run([str(promtool), "test", "rules", str(unit)], capture_output=True, text=True, timeout=120)


def _container(pod: str, container: str, image: str) -> list[dict[str, str]]:
    return [_series("kube_pod_container_info", "1x30", namespace="llm", pod=pod, container=container, image=image)]


def test_check_rules_accepts_the_rendered_file(promtool, cli, tmp_path):
    got = cli("alerts", "-p", "policies/", "-o", "rules")
    assert got.returncode == 0, got.stderr
    (tmp_path / "rules.yaml").write_text(got.stdout)
    checked = subprocess.run([str(promtool), "check", "rules", str(tmp_path / "rules.yaml")],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 8 rules found" in checked.stdout


def test_check_rules_rejects_a_broken_expr(promtool, tmp_path):
    """Control: promtool really parses the expressions (so the check above can fail)."""
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [
        {"alert": "A", "expr": "sum(rate(x[5m])", "for": "1m"}]}]}))
    checked = subprocess.run([str(promtool), "check", "rules", str(tmp_path / "bad.yaml")],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 1


def test_cuda_oom_vs_host_oom_vs_sidecar(promtool, rules_file):
    path, rules = rules_file
    vllm = {"namespace": "llm", "pod": POD, "container": "vllm"}
    series = [
        *_container(POD, "vllm", VLLM_IMAGE), *_container(POD, "proxy", "envoyproxy/envoy:v1.31"),
        *_container(OTHER, "vllm", VLLM_IMAGE), *_container("llama-8b-5d8f7c6b9-hostk", "vllm", VLLM_IMAGE),
        # the vLLM container restarts once at 3m after a CUDA OOM: exit 1, reason Error
        _series("kube_pod_container_status_restarts_total", "0 0 0 1x27", **vllm),
        _series("kube_pod_container_status_last_terminated_exitcode", "1x30", **vllm),
        _series("kube_pod_container_status_last_terminated_reason", "1x30", **vllm, reason="Error"),
        # a sidecar in the same pod exits 1 too: not vLLM, no page
        _series("kube_pod_container_status_restarts_total", "0 0 0 1x27", namespace="llm", pod=POD,
                container="proxy"),
        _series("kube_pod_container_status_last_terminated_exitcode", "1x30", namespace="llm", pod=POD,
                container="proxy"),
        # another Deployment's vLLM: another policy's business
        _series("kube_pod_container_status_restarts_total", "0 0 0 1x27", namespace="llm", pod=OTHER,
                container="vllm"),
        _series("kube_pod_container_status_last_terminated_exitcode", "1x30", namespace="llm", pod=OTHER,
                container="vllm"),
        # a second pod is killed by the host: exit 137, OOMKilled
        _series("kube_pod_container_status_restarts_total", "0 0 0 1x27", namespace="llm",
                pod="llama-8b-5d8f7c6b9-hostk", container="vllm"),
        _series("kube_pod_container_status_last_terminated_exitcode", "137x30", namespace="llm",
                pod="llama-8b-5d8f7c6b9-hostk", container="vllm"),
        _series("kube_pod_container_status_last_terminated_reason", "1x30", namespace="llm",
                pod="llama-8b-5d8f7c6b9-hostk", container="vllm", reason="OOMKilled"),
    ]
    host = {"namespace": "llm", "pod": "llama-8b-5d8f7c6b9-hostk", "container": "vllm"}
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": "2m", "alertname": "VllmCudaOomRestart", "exp_alerts": []},
        {"eval_time": "5m", "alertname": "VllmCudaOomRestart", "exp_alerts": [_expect(rules["VllmCudaOomRestart"],
                                                                                       **vllm)]},
        {"eval_time": "5m", "alertname": "VllmContainerOOMKilled",
         "exp_alerts": [_expect(rules["VllmContainerOOMKilled"], **host)]},
        {"eval_time": "20m", "alertname": "VllmCudaOomRestart", "exp_alerts": []},  # 10m window passed
    ]}]
    got = _run(promtool, path, tests)
    assert got.returncode == 0, got.stdout + got.stderr


def test_harness_fails_on_a_wrong_expectation(promtool, rules_file):
    """Control: the same input with the sidecar expected to page must fail promtool's test."""
    path, rules = rules_file
    series = [*_container(POD, "proxy", "envoyproxy/envoy:v1.31"),
              _series("kube_pod_container_status_restarts_total", "0 0 0 1x27", namespace="llm", pod=POD,
                      container="proxy"),
              _series("kube_pod_container_status_last_terminated_exitcode", "1x30", namespace="llm", pod=POD,
                      container="proxy")]
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": "5m", "alertname": "VllmCudaOomRestart",
         "exp_alerts": [_expect(rules["VllmCudaOomRestart"], namespace="llm", pod=POD, container="proxy")]}]}]
    got = _run(promtool, path, tests)
    assert got.returncode == 1
    assert "FAILED" in got.stdout + got.stderr


def test_crashloop_waits_for_policy_for(promtool, rules_file):
    path, rules = rules_file
    vllm = {"namespace": "llm", "pod": POD, "container": "vllm"}
    series = [*_container(POD, "vllm", VLLM_IMAGE),
              _series("kube_pod_container_status_waiting_reason", "1x30", **vllm, reason="CrashLoopBackOff")]
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": "4m", "alertname": "VllmCrashLoopBackOff", "exp_alerts": []},
        {"eval_time": "6m", "alertname": "VllmCrashLoopBackOff",
         "exp_alerts": [_expect(rules["VllmCrashLoopBackOff"], **vllm, reason="CrashLoopBackOff")]}]}]
    got = _run(promtool, path, tests)
    assert got.returncode == 0, got.stdout + got.stderr


def test_kv_usage_old_and_new_names_once_per_pod_and_preemptions(promtool, rules_file):
    path, rules = rules_file
    model = "meta-llama/Llama-3.1-8B-Instruct"
    both = {"namespace": "llm", "pod": POD, "model_name": model, "engine": "0"}   # 0.9.2-0.10: both exported
    old = {"namespace": "llm", "pod": "llama-8b-5d8f7c6b9-old00", "model_name": model}  # <= 0.9.1
    calm = {"namespace": "llm", "pod": "llama-8b-5d8f7c6b9-calm0", "model_name": model}
    series = [
        _series("vllm:kv_cache_usage_perc", "0.95x30", **both),
        _series("vllm:gpu_cache_usage_perc", "0.95x30", **both),
        _series("vllm:gpu_cache_usage_perc", "0.93x30", **old),
        _series("vllm:kv_cache_usage_perc", "0.85x30", **calm),                 # below 90 %
        _series("vllm:num_preemptions_total", "0+2x30", **both),                # 2 per minute > 1
        _series("vllm:num_preemptions_total", "0+0.5x30", **calm),              # 0.5 per minute
    ]
    short = {k: both[k] for k in ("namespace", "pod", "model_name")}
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": "3m", "alertname": "VllmKvCacheUsageHigh", "exp_alerts": []},
        {"eval_time": "10m", "alertname": "VllmKvCacheUsageHigh", "exp_alerts": [
            _expect(rules["VllmKvCacheUsageHigh"], **short), _expect(rules["VllmKvCacheUsageHigh"], **old)]},
        {"eval_time": "15m", "alertname": "VllmPreemptionsRising",
         "exp_alerts": [_expect(rules["VllmPreemptionsRising"], **short)]}]}]
    got = _run(promtool, path, tests)
    assert got.returncode == 0, got.stdout + got.stderr


def test_drift_expiry_and_stale_check(promtool, rules_file):
    path, rules = rules_file
    ours = "@k8s/prod/llm/llama-8b"
    series = [
        _series("vllm_remedy_drift_detected", "1x40", host=ours, check="max-model-len"),
        _series("vllm_remedy_drift_detected", "0x40", host=ours, check="gpu-product"),
        _series("vllm_remedy_drift_detected", "1x40", host="@k8s/prod/llm/llama-70b", check="max-model-len"),
        # expired at t=600 s (10m); overdue alerts 15m later
        _series("vllm_remedy_override_expiry_timestamp_seconds", "600x40", host=ours, flag="enforce-eager"),
        _series("vllm_remedy_override_expiry_timestamp_seconds", "1e10x40", host=ours, flag="max-num-seqs"),
        # the drift check last completed at t=60 s and then stopped
        _series("vllm_remedy_last_check_timestamp_seconds", "60x60"),
    ]
    overdue = _expect(rules["VllmRemedyOverridePastExpiry"], host=ours, flag="enforce-eager")
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": "6m", "alertname": "VllmRemedyDriftDetected",
         "exp_alerts": [_expect(rules["VllmRemedyDriftDetected"], host=ours, check="max-model-len")]},
        {"eval_time": "20m", "alertname": "VllmRemedyOverridePastExpiry", "exp_alerts": []},
        {"eval_time": "27m", "alertname": "VllmRemedyOverridePastExpiry", "exp_alerts": [overdue]},
        # stale from 31m (time() - 60 > 1800), then the rule's 10m
        {"eval_time": "40m", "alertname": "VllmRemedyDriftCheckStale", "exp_alerts": []},
        {"eval_time": "42m", "alertname": "VllmRemedyDriftCheckStale",
         "exp_alerts": [_expect(rules["VllmRemedyDriftCheckStale"])]},
    ]}, {"interval": "1m", "input_series": [], "alert_rule_test": [
        # never ran at all: absent() pages too, after the rule's 10m
        {"eval_time": "11m", "alertname": "VllmRemedyDriftCheckStale",
         "exp_alerts": [_expect(rules["VllmRemedyDriftCheckStale"])]}]},
        {"interval": "1m", "input_series": [_series("vllm_remedy_last_check_timestamp_seconds", "0+60x60")],
         "alert_rule_test": [  # a check completing every minute never pages
             {"eval_time": "59m", "alertname": "VllmRemedyDriftCheckStale", "exp_alerts": []}]}]
    got = _run(promtool, path, tests)
    assert got.returncode == 0, got.stdout + got.stderr
