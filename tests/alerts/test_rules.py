"""Alert rules rendered from policies: exact thresholds and selectors, schema, and the `alerts` CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from vllm_remedy.alerts import RenderOptions, dump, policy_rules, prometheus_rule, quote, rule_groups
from vllm_remedy.alerts.render import DEFAULT_RUNBOOK_URL
from vllm_remedy.alerts.rules import STEPS
from vllm_remedy.policy import Policy, load_policies, load_policy

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"
#: Every metric an expression may name: kube-state-metrics 2.x, vLLM's own, and ours.
KNOWN_METRICS = {
    "kube_pod_container_status_restarts_total", "kube_pod_container_status_last_terminated_exitcode",
    "kube_pod_container_status_last_terminated_reason", "kube_pod_container_status_waiting_reason",
    "kube_pod_container_info", "kube_pod_labels",
    "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:num_preemptions_total",
    "vllm_remedy_drift_detected", "vllm_remedy_override_expiry_timestamp_seconds",
    "vllm_remedy_last_check_timestamp_seconds",
}
PROMQL_WORDS = {"and", "or", "unless", "on", "by", "without", "ignoring", "group_left", "group_right",
                "increase", "rate", "max", "sum", "time", "absent"}
ALERTS = ["VllmCudaOomRestart", "VllmContainerOOMKilled", "VllmCrashLoopBackOff", "VllmKvCacheUsageHigh",
          "VllmPreemptionsRising", "VllmRemedyDriftDetected", "VllmRemedyOverridePastExpiry"]


def _policy(tmp_path: Path, text: str, name: str = "p") -> Policy:
    (tmp_path / "default.yaml").write_text((POLICIES / "default.yaml").read_text())
    path = tmp_path / f"{name}.yaml"
    path.write_text("extends: default\n" + text)
    return load_policy(path)


def _by_name(groups: list[dict]) -> dict[str, dict]:
    return {r["alert"]: r for g in groups for r in g["rules"]}


def _strip_strings(expr: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def _balanced(expr: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    pairs = {")": "(", "}": "{", "]": "["}
    for ch in _strip_strings(expr):
        if ch in depth:
            depth[ch] += 1
        elif ch in pairs:
            depth[pairs[ch]] -= 1
            if depth[pairs[ch]] < 0:
                return False
    return not any(depth.values())


def _metric_names(expr: str) -> set[str]:
    """Identifiers that are not PromQL keywords, label names in braces/by-lists, or durations."""
    bare = _strip_strings(expr)
    bare = re.sub(r"\{[^}]*\}", "", bare)           # matchers
    bare = re.sub(r"\([a-z_, ]*\)", "()", bare)      # by (...) / on (...) label lists
    bare = re.sub(r"\[[0-9a-z]+\]", "", bare)        # range durations
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare))
    return words - PROMQL_WORDS


def test_llama_8b_rules_exact_thresholds_and_selectors():
    rules = _by_name(rule_groups({"llama-8b": load_policy(POLICIES / "llama-8b.yaml")}))
    pods = 'namespace=~"llm", pod=~"llama-8b-[a-z0-9]+-[a-z0-9]+"'
    assert rules["VllmKvCacheUsageHigh"]["expr"] == (
        f"(max by (namespace, pod, model_name) (vllm:kv_cache_usage_perc{{{pods}}})"
        f" or max by (namespace, pod, model_name) (vllm:gpu_cache_usage_perc{{{pods}}})) > 0.9")
    assert rules["VllmPreemptionsRising"]["expr"] == (
        f"sum by (namespace, pod, model_name) (rate(vllm:num_preemptions_total{{{pods}}}[5m])) * 60 > 1")
    assert rules["VllmCudaOomRestart"]["expr"] == (
        f"increase(kube_pod_container_status_restarts_total{{{pods}}}[10m]) > 0"
        f" and on (namespace, pod, container) kube_pod_container_status_last_terminated_exitcode{{{pods}}} == 1"
        f' and on (namespace, pod, container) kube_pod_container_info{{{pods}, image=~".*vllm.*"}}')
    assert rules["VllmContainerOOMKilled"]["expr"].split(" and on (namespace, pod, container) ")[1] == (
        f'kube_pod_container_status_last_terminated_reason{{{pods}, reason="OOMKilled"}} == 1')
    assert rules["VllmCrashLoopBackOff"]["expr"].startswith(
        f'kube_pod_container_status_waiting_reason{{{pods}, reason="CrashLoopBackOff"}} == 1 and on ')
    assert rules["VllmRemedyDriftDetected"]["expr"] == (
        'vllm_remedy_drift_detected{host=~"@k8s/[^/]+/(llm)/(llama-8b)"} > 0')
    assert rules["VllmRemedyOverridePastExpiry"]["expr"] == (
        'vllm_remedy_override_expiry_timestamp_seconds{host=~"@k8s/[^/]+/(llm)/(llama-8b)"} < time()')
    assert [rules[a]["for"] for a in ALERTS] == ["0s", "0s", "5m", "5m", "5m", "5m", "15m"]
    assert [rules[a]["labels"]["severity"] for a in ALERTS] == [
        "critical", "critical", "critical", "warning", "warning", "warning", "warning"]
    assert rules["VllmCudaOomRestart"]["annotations"]["runbook_step"] == "Step 1: restore service"
    assert rules["VllmCudaOomRestart"]["annotations"]["runbook_url"].endswith("#step-1-restore-service")
    assert rules["VllmKvCacheUsageHigh"]["annotations"]["summary"] == (
        "vLLM KV cache on {{ $labels.namespace }}/{{ $labels.pod }} above 90% for 5m")


def test_policy_thresholds_flow_into_exprs(tmp_path):
    policy = _policy(tmp_path, "alerts: {kv_cache_usage_percent: 85.5, preemptions_per_minute: 2.5, for: 1h30m}\n"
                               "target: {namespaces: [a-b, c], deployments: [m.x]}\n")
    rules = _by_name(rule_groups({"p": policy}))
    assert rules["VllmKvCacheUsageHigh"]["expr"].endswith(") > 0.855")
    assert rules["VllmPreemptionsRising"]["expr"].endswith(" * 60 > 2.5")
    assert rules["VllmKvCacheUsageHigh"]["for"] == "1h30m"
    # a "." in a name is literal in the regex, not "any character"
    assert 'namespace=~"a-b|c", pod=~"m\\\\.x-[a-z0-9]+-[a-z0-9]+"' in rules["VllmKvCacheUsageHigh"]["expr"]


def test_empty_target_models_labels_and_custom_image(tmp_path):
    policy = _policy(tmp_path, "target: {models: [org/m], match_labels: {app.kubernetes.io/name: llm}}\n"
                               "known_good: [{image: 'reg:5000/team/server:1.2@sha256:" + "a" * 64
                               + "', flags: {max-model-len: 8192}}]\n")
    rules = _by_name(rule_groups({"p": policy}))
    assert rules["VllmKvCacheUsageHigh"]["expr"].startswith(
        '(max by (namespace, pod, model_name) (vllm:kv_cache_usage_perc{model_name=~"org/m"})')
    assert rules["VllmCrashLoopBackOff"]["expr"] == (
        'kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff"} == 1'
        ' and on (namespace, pod, container) kube_pod_container_info{image=~".*vllm.*|reg:5000/team/server(:.*|@.*)?"}'
        ' and on (namespace, pod) kube_pod_labels{label_app_kubernetes_io_name="llm"}')
    assert rules["VllmRemedyDriftDetected"]["expr"] == 'vllm_remedy_drift_detected{host=~"@k8s/[^/]+/[^/]+/[^/]+"} > 0'


@pytest.mark.parametrize("value,expected", [("a", '"a"'), ('say "hi"', r'"say \"hi\""'), ("a\\b", r'"a\\b"'),
                                            ("x\ny", r'"x\ny"')])
def test_quote(value, expected):
    assert quote(value) == expected


def test_schema_every_rule_complete_balanced_and_known_metrics():
    groups = rule_groups(load_policies(POLICIES))
    assert [g["name"] for g in groups] == ["vllm-remedy.default", "vllm-remedy.llama-8b", "vllm-remedy.footprint"]
    for group in groups:
        for rule in group["rules"]:
            assert list(rule) == ["alert", "expr", "for", "labels", "annotations"], rule
            assert re.fullmatch(r"[A-Z][A-Za-z]+", rule["alert"])
            assert re.fullmatch(r"(\d+[dhms])+", rule["for"]), rule["for"]
            assert rule["labels"]["severity"] in {"critical", "warning"}
            assert set(rule["annotations"]) == {"summary", "description", "runbook_url", "runbook_step"}
            assert rule["annotations"]["description"].endswith(f"Runbook: {rule['annotations']['runbook_step']}.")
            assert _balanced(rule["expr"]), rule["expr"]
            assert _metric_names(rule["expr"]) <= KNOWN_METRICS, _metric_names(rule["expr"]) - KNOWN_METRICS
    assert [r["alert"] for r in groups[1]["rules"]] == ALERTS
    assert [r["alert"] for r in groups[2]["rules"]] == ["VllmRemedyDriftCheckStale"]
    assert "policy" not in groups[2]["rules"][0]["labels"]


def test_schema_checker_catches_bad_exprs():
    assert not _balanced("sum(rate(x[5m])")
    assert not _balanced('x{a="}"} )(')
    assert _balanced('x{a=")"}')
    assert _metric_names("rate(vllm:num_preemption_total[5m]) > 1") - KNOWN_METRICS == {"vllm:num_preemption_total"}


def test_prometheus_rule_object_and_yaml_round_trip():
    obj = prometheus_rule({"llama-8b": load_policy(POLICIES / "llama-8b.yaml")},
                          RenderOptions(name="r", namespace="monitoring", labels={"release": "kps"},
                                        runbook_url="https://wiki/r"))
    assert obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["kind"] == "PrometheusRule"
    assert obj["metadata"] == {"name": "r", "namespace": "monitoring", "labels": {
        "app.kubernetes.io/name": "vllm-remedy", "app.kubernetes.io/component": "alerts", "release": "kps"}}
    assert yaml.safe_load(dump(obj, "yaml")) == obj
    assert json.loads(dump(obj, "json")) == obj
    assert _by_name(obj["spec"]["groups"])["VllmCrashLoopBackOff"]["annotations"]["runbook_url"] == (
        "https://wiki/r#step-1-restore-service")


def test_one_rule_list_per_policy_object():
    assert len(policy_rules(load_policy(POLICIES / "llama-8b.yaml"))) == 7


# --- CLI ---------------------------------------------------------------------------------------------------

def test_cli_directory_skips_bases(cli):
    got = cli("alerts", "-p", "policies/")
    assert got.returncode == 0, got.stderr
    obj = yaml.safe_load(got.stdout)
    assert [g["name"] for g in obj["spec"]["groups"]] == ["vllm-remedy.llama-8b", "vllm-remedy.footprint"]
    assert obj["metadata"]["name"] == "vllm-remedy" and "namespace" not in obj["metadata"]
    assert got.stderr == "vllm-remedy: policies/default: a base of llama-8b, no group of its own\n"


def test_cli_json_file_namespace_labels(cli):
    got = cli("alerts", "-p", "policies/default.yaml", "-o", "json", "-n", "monitoring", "--label", "release=kps")
    assert got.returncode == 0, got.stderr
    obj = json.loads(got.stdout)
    assert [g["name"] for g in obj["spec"]["groups"]] == ["vllm-remedy.default", "vllm-remedy.footprint"]
    assert obj["metadata"]["namespace"] == "monitoring" and obj["metadata"]["labels"]["release"] == "kps"


def test_cli_rules_output_is_a_rule_file(cli):
    got = cli("alerts", "-p", "policies/llama-8b.yaml", "-o", "rules")
    assert got.returncode == 0, got.stderr
    assert list(yaml.safe_load(got.stdout)) == ["groups"]


@pytest.mark.parametrize("args,message", [
    (["-p", "nope/"], "vllm-remedy: error: nope: no such policy file\n"),
    (["-p", "policies/llama-8b.yaml", "--label", "release"],
     "vllm-remedy: error: --label release: expected KEY=VALUE\n"),
    (["-p", "policies/llama-8b.yaml", "-p", "policies/"],
     "vllm-remedy: error: policies/llama-8b: policy 'llama-8b' is also given as policies/llama-8b.yaml\n"),
])
def test_cli_errors_one_line(cli, args, message):
    got = cli("alerts", *args)
    assert got.returncode == 2
    assert got.stdout == ""
    assert got.stderr.endswith(message)


def test_cli_empty_directory(cli, tmp_path):
    got = cli("alerts", "-p", str(tmp_path))
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr == f"vllm-remedy: error: {tmp_path}: no policies to render (expected *.yaml policy files)\n"


def test_cli_bad_policy_names_file_and_key(cli, tmp_path):
    (tmp_path / "bad.yaml").write_text("alerts: {kv_cache_usage_percent: 150}\n")
    got = cli("alerts", "-p", str(tmp_path))
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr.startswith(f"vllm-remedy: error: {tmp_path}/bad.yaml: alerts.kv_cache_usage_percent: ")
    assert got.stderr.count("\n") == 1


def test_every_runbook_url_anchor_exists_in_the_shipped_runbook():
    """runbook_url points at docs/runbook.md#<anchor>: each anchor the rules use is in that file."""
    runbook = (Path(__file__).resolve().parents[2] / "docs" / "runbook.md").read_text()
    assert DEFAULT_RUNBOOK_URL.endswith("/docs/runbook.md")
    for anchor, title in STEPS.values():
        assert f'<a id="{anchor}"></a>\n## {title}' in runbook, anchor
