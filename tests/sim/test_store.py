"""The store keeps Kubernetes' write semantics; controllers and the HTTP layer rely on each of these."""

from __future__ import annotations

import time

import pytest

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.store import ApiError, Store


@pytest.fixture
def store() -> Store:
    return Store(clock=Clock(speed=60))


def deployment(replicas: int = 1) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "llama-8b", "namespace": "llm"}, "spec": {"replicas": replicas}}


def test_create_assigns_identity_and_generation(store):
    made = store.create("deployments.apps", deployment())
    assert made["metadata"]["generation"] == 1
    assert int(made["metadata"]["resourceVersion"]) == 2
    assert made["metadata"]["uid"]


def test_noop_update_keeps_resource_version(store):
    made = store.create("deployments.apps", deployment())
    again = store.update("deployments.apps", made)
    assert again["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert store.resource_version == made["metadata"]["resourceVersion"]


def test_spec_change_bumps_generation_status_does_not(store):
    made = store.create("deployments.apps", deployment())
    made["spec"]["replicas"] = 3
    changed = store.update("deployments.apps", made)
    assert changed["metadata"]["generation"] == 2
    changed["status"] = {"observedGeneration": 2}
    after_status = store.update("deployments.apps", changed, status=True)
    assert after_status["metadata"]["generation"] == 2
    assert after_status["status"] == {"observedGeneration": 2}


def test_stale_resource_version_is_409(store):
    made = store.create("deployments.apps", deployment())
    fresh = dict(made, spec={"replicas": 2})
    store.update("deployments.apps", fresh)
    stale = dict(made, spec={"replicas": 5})
    with pytest.raises(ApiError) as err:
        store.update("deployments.apps", stale)
    assert err.value.code == 409
    assert store.get("deployments.apps", "llm", "llama-8b")["spec"]["replicas"] == 2


def test_watch_replays_from_resource_version(store):
    made = store.create("deployments.apps", deployment())
    start = int(made["metadata"]["resourceVersion"])
    store.mutate("deployments.apps", "llm", "llama-8b", lambda o: o["spec"].update(replicas=4))
    events = list(store.watch("deployments.apps", "llm", start, deadline=time.monotonic() + 0.05))
    assert [(e.type, e.object["spec"]["replicas"]) for e in events] == [("MODIFIED", 4)]


def test_dry_run_stores_nothing(store):
    made = store.create("deployments.apps", deployment())
    made["spec"]["replicas"] = 9
    preview = store.update("deployments.apps", made, dry_run=True)
    assert preview["metadata"]["generation"] == 2
    assert store.get("deployments.apps", "llm", "llama-8b")["spec"]["replicas"] == 1
