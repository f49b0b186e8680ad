"""Secrets as Kubernetes serves them, and the kubelet's refusal to start a container whose env names a missing one.

``kubectl create secret`` is how a runbook hands vLLM its HF token; a rehearsal cluster that 404s it, or runs a pod
whose ``secretKeyRef`` points nowhere, rehearses a cluster that does not exist.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures import sim_world

V = "32"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_world.Sim]:
    """One cluster at 120x with one L40S node, shared by the module (each test names its own objects)."""
    sim_world.require_kubectl(V)
    s = sim_world.make_sim(tmp_path_factory.mktemp("secrets"), speed=120, start=True)
    s.clusters["a"].store.create("nodes", sim_world.gpu_node("gpu-1"))
    yield s
    for c in s.clusters.values():
        c.stop()
    s.server.stop()


def ok(got: Any) -> str:
    assert got.returncode == 0, got.stderr
    return str(got.stdout)


def test_kubectl_creates_lists_and_deletes_a_secret_with_base64_data(world):
    k = world.kubectl
    assert ok(k(V, "-n", "llm", "create", "secret", "generic", "hf", "--from-literal=token=hf_abc")).strip() == (
        "secret/hf created")
    got = world.clusters["a"].store.get("secrets", "llm", "hf")
    assert (got["data"], got["type"]) == ({"token": base64.b64encode(b"hf_abc").decode()}, "Opaque")
    rows = [re.split(r"\s{2,}", line.strip()) for line in ok(k(V, "-n", "llm", "get", "secrets")).splitlines()]
    assert rows[0] == ["NAME", "TYPE", "DATA", "AGE"] and rows[1][:3] == ["hf", "Opaque", "1"]
    assert ok(k(V, "-n", "llm", "get", "secret", "hf", "-o", "jsonpath={.data.token}")) == "aGZfYWJj"
    assert ok(k(V, "-n", "llm", "delete", "secret", "hf")).strip() == 'secret "hf" deleted'
    assert world.clusters["a"].store.find("secrets", "llm", "hf") is None


def test_string_data_is_merged_into_data_on_write_and_bad_base64_refused(world):
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(config.new_client_from_config(str(world.kubeconfig), context="a"))
    made = core.create_namespaced_secret("llm", client.V1Secret(
        metadata=client.V1ObjectMeta(name="mixed"), data={"a": base64.b64encode(b"1").decode(), "b": "Mg=="},
        string_data={"b": "two", "c": "3"}))
    assert made.string_data is None and made.type == "Opaque"
    assert {k: base64.b64decode(v).decode() for k, v in made.data.items()} == {"a": "1", "b": "two", "c": "3"}
    patched = core.patch_namespaced_secret("mixed", "llm", {"stringData": {"a": "uno"}})
    assert base64.b64decode(patched.data["a"]).decode() == "uno" and patched.string_data is None
    names = [s.metadata.name for s in core.list_namespaced_secret("llm").items]
    assert "mixed" in names
    with pytest.raises(ApiException) as bad:
        core.create_namespaced_secret("llm", {"metadata": {"name": "bad"}, "data": {"x": "not base64!"}})
    assert bad.value.status == 400


def _pod(name: str, env: list[dict[str, Any]] | None = None,
         env_from: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox", "command": ["sleep", "3600"]}
    if env:
        container["env"] = env
    if env_from:
        container["envFrom"] = env_from
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeName": "gpu-1", "containers": [container]}}


def _waiting(world: sim_world.Sim, name: str) -> dict[str, Any]:
    pod = world.clusters["a"].store.find("pods", "llm", name) or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict((statuses[0].get("state") or {}).get("waiting") or {})


def _running(world: sim_world.Sim, name: str) -> bool:
    pod = world.clusters["a"].store.find("pods", "llm", name) or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return "running" in (statuses[0].get("state") or {})


@pytest.mark.parametrize(("name", "env", "env_from", "message"), [
    ("ref-secret", [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "token"}}}], None,
     'secret "nope" not found'),
    ("ref-cm", [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nocm", "key": "x"}}}], None,
     'configmap "nocm" not found'),
    ("from-secret", None, [{"secretRef": {"name": "nope"}}], 'secret "nope" not found'),
    ("from-cm", None, [{"configMapRef": {"name": "nocm"}}], 'configmap "nocm" not found'),
    ("no-key", [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "present", "key": "tokn"}}}], None,
     "couldn't find key tokn in Secret llm/present"),
])
def test_a_missing_env_source_leaves_the_container_in_create_container_config_error(world, name, env, env_from,
                                                                                    message):
    store = world.clusters["a"].store
    if store.find("secrets", "llm", "present") is None:
        ok(world.kubectl(V, "-n", "llm", "create", "secret", "generic", "present", "--from-literal=token=t"))
    store.create("pods", _pod(name, env, env_from))
    assert world.clusters["a"].wait_for(lambda: _waiting(world, name).get("reason") == "CreateContainerConfigError",
                                        20), store.find("pods", "llm", name)
    assert _waiting(world, name)["message"] == message
    row = re.split(r"\s{2,}", ok(world.kubectl(V, "-n", "llm", "get", "pod", name, "--no-headers")).strip())
    assert row[1:3] == ["0/1", "CreateContainerConfigError"]
    events = ok(world.kubectl(V, "-n", "llm", "get", "events", "--field-selector", f"involvedObject.name={name}"))
    assert f"Error: {message}" in events


def test_an_optional_source_is_skipped_and_a_late_secret_lets_the_container_start(world):
    store = world.clusters["a"].store
    store.create("pods", _pod("optional", [{"name": "T", "valueFrom": {"secretKeyRef": {
        "name": "absent", "key": "k", "optional": True}}}], [{"configMapRef": {"name": "absent", "optional": True}}]))
    assert world.clusters["a"].wait_for(lambda: _running(world, "optional"), 20), store.find("pods", "llm", "optional")
    store.create("pods", _pod("late", [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "late", "key": "k"}}}]))
    assert world.clusters["a"].wait_for(lambda: _waiting(world, "late").get("reason") == "CreateContainerConfigError",
                                        20)
    ok(world.kubectl(V, "-n", "llm", "create", "secret", "generic", "late", "--from-literal=k=v"))
    assert world.clusters["a"].wait_for(lambda: _running(world, "late"), 30), store.find("pods", "llm", "late")
