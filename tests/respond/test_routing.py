"""Alert → inventory host and deploy: exactly one host or none, never a guess."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from vllm_remedy.alerts.rules import footprint_rules, policy_rules
from vllm_remedy.policy import DEFAULT_POLICY
from vllm_remedy.respond.routing import ACTIONS, RENDERED, InventoryHost, route
from vllm_remedy.respond.webhook import Alert

HOSTS = [InventoryHost("@k8s/prod/llm/llama-8b", "prod", "llm", "llama-8b"),
         InventoryHost("@k8s/prod/llm/mistral", "prod", "llm", "mistral"),
         InventoryHost("@k8s/staging/llm/llama-8b", "staging", "llm", "llama-8b")]
PODS = {("prod", "llama-8b-6b765dc795-abcde"): "llama-8b", ("staging", "llama-8b-6b765dc795-abcde"): "llama-8b"}


def alert(name: str = "VllmCrashLoopBackOff", **labels: str) -> Alert:
    return Alert("firing", {"alertname": name, **labels}, {}, datetime(2026, 1, 1, tzinfo=timezone.utc), "f1")


def owner(host: InventoryHost, namespace: str, pod: str) -> str | None:
    return PODS.get((host.cluster, pod)) if namespace == "llm" else None


def test_every_alert_it_answers_is_one_the_alerts_command_renders() -> None:
    rendered = {r.alert for r in policy_rules(DEFAULT_POLICY) + footprint_rules()}
    assert set(ACTIONS) <= rendered
    assert {ACTIONS["VllmCrashLoopBackOff"], ACTIONS["VllmCudaOomRestart"], ACTIONS["VllmKvCacheUsageHigh"]} == {
        "restore", "load_guard"}


def test_a_pod_resolves_to_its_deployment_in_the_named_cluster() -> None:
    got = route(alert(namespace="llm", pod="llama-8b-6b765dc795-abcde", cluster="prod"), HOSTS, owner)
    assert (got.host, got.deploy) == (HOSTS[0], "restore")
    got = route(alert("VllmKvCacheUsageHigh", namespace="llm", deployment="mistral"), HOSTS, owner)
    assert (got.host, got.deploy) == (HOSTS[1], "load_guard")


@pytest.mark.parametrize(("labels", "reason"), [
    ({"namespace": "llm", "pod": "llama-8b-6b765dc795-abcde"}, "matches 2 hosts"),  # two clusters: ambiguous
    ({"namespace": "other", "deployment": "llama-8b"}, "other/llama-8b names no inventory host"),
    ({"namespace": "llm", "pod": "gone-pod", "cluster": "prod"}, "prod/llm/pod gone-pod names no inventory host"),
    ({"namespace": "llm"}, "neither a deployment nor a pod label"),
    ({"pod": "x"}, "no namespace label"),
])
def test_no_single_host_means_ignored(labels: dict[str, str], reason: str) -> None:
    got = route(alert(**labels), HOSTS, owner)
    assert got.host is None and reason in got.reason


def test_an_alert_no_deploy_answers_is_ignored() -> None:
    got = route(alert("VllmRemedyDriftDetected", namespace="llm", deployment="llama-8b"), HOSTS, owner)
    assert got.host is None and got.reason.startswith("alert VllmRemedyDriftDetected: no deploy answers it")


def test_metrics_label_only_the_alerts_vllm_remedy_renders() -> None:
    assert {r.alert for r in policy_rules(DEFAULT_POLICY) + footprint_rules()} == RENDERED
