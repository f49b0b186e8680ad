"""What the namespace host form expands to, by kind, against the rehearsal cluster (with and without RBAC)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from fixtures.sim_world import deployment, make_sim, nginx
from fixtures.sts_world import vllm_statefulset, web
from vllm_remedy.connectors.namespaces import list_vllm_workloads
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.sim.api.auth import load as load_auth


def test_every_served_kind_is_listed_and_a_forbidden_one_is_named(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    auth = load_auth({"tokens": {
        "t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
        "t-deploy": {"user": "deploy-only", "rules": [
            {"verbs": ["get", "list"], "resources": ["deployments.apps"], "namespaces": ["llm"]}]}}})
    sim = make_sim(tmp_path, auth=auth, users={"admin": "t-admin", "deploy-only": "t-deploy"})
    try:
        store = sim.clusters["a"].store
        for obj in (deployment(), nginx()):
            store.create("deployments.apps", obj)
        store.create("statefulsets.apps", vllm_statefulset())
        store.create("statefulsets.apps", web(1))  # nginx: not vLLM, and no GPU: silently not a host
        admin = KubeClient.for_context("a", str(sim.kubeconfig))
        assert list_vllm_workloads(admin, "llm") == [("deployment", "llama-8b"), ("statefulset", "llama-70b")]
        limited = KubeClient.for_context("a-deploy-only", str(sim.kubeconfig))
        with caplog.at_level(logging.WARNING):
            assert list_vllm_workloads(limited, "llm", "@k8s/a/llm") == [("deployment", "llama-8b")]
        assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
            "@k8s/a/llm: not listing statefulsets: forbidden (grant get/list on statefulsets.apps to see vLLM "
            "StatefulSets here)"]
    finally:
        sim.server.stop()
