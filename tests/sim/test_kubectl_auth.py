"""kubectl auth whoami / can-i --list and DELETE answers, as real kubectl 1.32 and the Python client see them."""

from __future__ import annotations

import pytest

from fixtures import sim_world
from fixtures.sim_world import deployment
from vllm_remedy.sim.api.auth import load

sim = sim_world.sim
V = "32"
DRIFT = "system:serviceaccount:llm:vllm-remedy-drift"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def test_whoami_and_can_i_list_without_auth(sim):
    who = sim.kubectl(V, "auth", "whoami", timeout=30)
    assert who.returncode == 0, who.stderr
    assert who.stdout.split("\n")[1].split() == ["Username", "kubernetes-admin"]
    rules = sim.kubectl(V, "auth", "can-i", "--list", "-n", "llm", timeout=30)
    assert rules.returncode == 0, rules.stderr
    assert [line.split() for line in rules.stdout.splitlines()[1:]] == [["*.*", "[]", "[]", "[*]"],
                                                                        ["[*]", "[]", "[*]"]]


def test_whoami_and_can_i_list_for_the_shipped_drift_role(tmp_path):
    manifest = sim_world.ROOT / "manifests" / "rbac-drift.yaml"
    if not manifest.exists():
        pytest.skip("manifests/rbac-drift.yaml not present")
    roles = load({"tokens": {"t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
                             "t-drift": {"user": DRIFT}}})
    s = sim_world.make_sim(tmp_path, auth=roles, users={"admin": "t-admin", "drift": "t-drift"})
    try:
        assert s.kubectl(V, "apply", "-f", str(manifest)).returncode == 0
        who = s.kubectl(V, "auth", "whoami", "-o", "json", context="a-drift", timeout=30)
        assert who.returncode == 0, who.stderr
        import json

        info = json.loads(who.stdout)["status"]["userInfo"]
        assert info["username"] == DRIFT and "system:serviceaccounts:llm" in info["groups"]
        listed = s.kubectl(V, "auth", "can-i", "--list", "-n", "llm", context="a-drift", timeout=30)
        assert listed.returncode == 0, listed.stderr
        rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:] if line.strip()}
        assert "get" in rows["deployments.apps"] and "patch" not in rows["deployments.apps"]
        assert "selfsubjectrulesreviews.authorization.k8s.io" in rows  # every user may ask
    finally:
        s.server.stop()


def test_delete_answers_a_status_for_immediate_kinds_and_the_object_for_pods(sim):
    from kubernetes import client, config

    store = sim.clusters["a"].store
    store.create("deployments.apps", deployment())
    store.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "llm"},
                                "data": {"a": "b"}})
    api = config.new_client_from_config(str(sim.kubeconfig), context="a")

    def plain(answer) -> dict:  # the client hands some answers back as dicts, some as models
        return answer if isinstance(answer, dict) else api.sanitize_for_serialization(answer)

    status = plain(client.AppsV1Api(api).delete_namespaced_deployment("llama-8b", "llm"))
    assert (status["kind"], status["status"], status["details"]) == (
        "Status", "Success", {"group": "apps", "kind": "deployments", "name": "llama-8b",
                              "uid": status["details"]["uid"]})
    gone = plain(client.CoreV1Api(api).delete_namespaced_config_map("c", "llm"))
    assert (gone["status"], gone["details"]["kind"], "group" in gone["details"]) == ("Success", "configmaps", False)
    sim_world.call(sim.url(), "POST", "/api/v1/namespaces/llm/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "image": "busybox:1.36"}]}})
    code, _, pod = sim_world.call(sim.url(), "DELETE", "/api/v1/namespaces/llm/pods/p")
    assert (code, pod["kind"], pod["metadata"]["name"]) == (200, "Pod", "p")  # pods return the object
    got = sim.kubectl(V, "-n", "llm", "delete", "configmap", "missing", timeout=30)
    assert got.stderr.strip() == 'Error from server (NotFound): configmaps "missing" not found'


def test_an_rbac_style_api_groups_key_is_refused_not_ignored():
    """Ignoring ``apiGroups`` would widen a rule to every group: the auth file is refused, naming the key."""
    from vllm_remedy.errors import UserError

    rule = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}
    with pytest.raises(UserError, match=r"auth.yaml: tokens\.t1\.rules\[0\]: unknown key 'apiGroups'"):
        load({"tokens": {"t1": {"user": "ops", "rules": [rule]}}}, "auth.yaml")


def test_can_i_list_for_a_restricted_token_shows_only_real_rows(tmp_path):
    """One token rule naming resources of two API groups is two RBAC rules, not their cross product (no
    ``pods.apps``, no ``deployments.*``); a group-less name is the groups that serve it."""
    reader = {"verbs": ["get", "list"], "namespaces": ["llm"], "resources": ["pods", "pods/log", "deployments.apps"]}
    roles = load({"tokens": {"t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
                             "t-ro": {"user": "reader", "rules": [reader]}}})
    s = sim_world.make_sim(tmp_path, auth=roles, users={"admin": "t-admin", "ro": "t-ro"})
    try:
        listed = s.kubectl(V, "auth", "can-i", "--list", "-n", "llm", context="a-ro", timeout=30)
        assert listed.returncode == 0, listed.stderr
        rows = {line.split()[0]: line.split("]", 2)[-1].strip() for line in listed.stdout.splitlines()[1:]
                if line.strip() and not line.startswith("[")}
        assert rows["pods"] == rows["pods/log"] == rows["deployments.apps"] == "[get list]", listed.stdout
        assert not {"pods.apps", "pods.apps/log", "pods.*/log", "deployments.*", "pods.*"} & rows.keys(), listed.stdout
    finally:
        s.server.stop()
