"""An answered write survives ``kill -9`` of the rehearsal server, as on etcd.

Real processes only: ``vllm-remedy sim up`` runs as a child of the test (so ``kill -9`` and reaping
are ours), writes go through the ``kubernetes`` client, and the process is killed right after each
2xx — well inside the one second the old periodic flush needed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

SEED = "namespaces: [llm]\n"


@contextmanager
def served(state: Path, seed: Path) -> Iterator[tuple[subprocess.Popen[bytes], client.ApiClient, str]]:
    """``sim up`` (foreground, our child) on ``state``; yields the process, a client of its kubeconfig and
    what it printed before it served."""
    (state / "sim.json").unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "vllm_remedy", "sim", "up", "--state", str(state), "--seed",
                             str(seed), "--cluster", "a", "--speed", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        before: list[str] = []  # what it logged before serving (replay warnings)
        while not (line := proc.stdout.readline().decode()).startswith("rehearsal cluster serving"):
            assert line, "sim up exited: " + "".join(before)
            before.append(line)
        info = json.loads((state / "sim.json").read_text())
        api = config.new_client_from_config(config_file=info["kubeconfig"], context="a")
        with api:
            yield proc, api, "".join(before)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()


def kill9(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def configmap(name: str, value: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"v": value})


def deployment(name: str) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]))))


def present(api: client.ApiClient) -> dict[str, tuple[str, str]]:
    """kind/name → (resourceVersion, payload) of what the test writes, as the restarted server has it."""
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    found = {f"cm/{c.metadata.name}": (c.metadata.resource_version, (c.data or {}).get("v", ""))
             for c in core.list_namespaced_config_map("llm").items}
    for d in apps.list_namespaced_deployment("llm").items:
        found[f"deploy/{d.metadata.name}"] = (d.metadata.resource_version, str(d.spec.replicas))
    return found


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    path = tmp_path / "seed.yaml"
    path.write_text(SEED)
    return path


def assert_kept(got: dict[str, tuple[str, str]], acked: dict[str, tuple[str, str]]) -> None:
    """Every acknowledged write is there. ConfigMaps keep its exact resourceVersion; the Deployment
    controller may move a Deployment on (status), so there: same spec, resourceVersion not older."""
    assert got.keys() == acked.keys()
    for key, (rv, payload) in acked.items():
        if key.startswith("cm/"):
            assert got[key] == (rv, payload), key
        else:
            assert got[key][1] == payload and int(got[key][0]) >= int(rv), key


def test_every_acknowledged_write_survives_kill_9(tmp_path, seed):
    state = tmp_path / "state"
    writes = [  # (what it leaves, the call), one server process per write: POST, PUT, PATCH, DELETE
        ("cm/one", lambda core, apps: core.create_namespaced_config_map("llm", configmap("one", "1"))),
        ("cm/one", lambda core, apps: core.replace_namespaced_config_map("one", "llm", configmap("one", "2"))),
        ("deploy/web", lambda core, apps: apps.create_namespaced_deployment("llm", deployment("web"))),
        ("deploy/web", lambda core, apps: apps.patch_namespaced_deployment_scale(
            "web", "llm", {"spec": {"replicas": 3}})),
        ("-cm/one", lambda core, apps: core.delete_namespaced_config_map("one", "llm")),
    ]
    acked: dict[str, tuple[str, str]] = {}
    highest = 0
    for key, write in writes:
        with served(state, seed) as (proc, api, _):
            assert_kept(present(api), acked)  # everything acknowledged before the last kill -9
            result = write(client.CoreV1Api(api), client.AppsV1Api(api))
            kill9(proc)  # right after the 2xx: no periodic flush can have run
        if key.startswith("-"):
            acked.pop(key[1:])
            continue
        rv = result.metadata.resource_version
        assert int(rv) > highest  # resourceVersion never goes back across restarts
        highest = int(rv)
        acked[key] = (rv, result.data["v"] if key.startswith("cm/") else str(result.spec.replicas))
    with served(state, seed) as (_, api, _):
        assert_kept(present(api), acked)
    assert acked.keys() == {"deploy/web"}


def test_torn_last_record_is_dropped_and_the_server_starts(tmp_path, seed):
    state = tmp_path / "state"
    with served(state, seed) as (proc, api, _):
        core = client.CoreV1Api(api)
        kept = core.create_namespaced_config_map("llm", configmap("kept", "1"))
        torn = core.create_namespaced_config_map("llm", configmap("torn", "1"))
        kill9(proc)
    newest = sorted(state.glob("a.*.wal"))[-1]
    size = newest.stat().st_size
    with open(newest, "r+b") as fh:  # cut the last record in half: a crash in the middle of its append
        fh.truncate(size - 20)
    with served(state, seed) as (_, api, logged):
        assert "dropped a torn last record" in logged
        core = client.CoreV1Api(api)
        assert core.read_namespaced_config_map("kept", "llm").metadata.resource_version == \
            kept.metadata.resource_version
        with pytest.raises(ApiException) as gone:
            core.read_namespaced_config_map("torn", "llm")
        assert gone.value.status == 404
        again = core.create_namespaced_config_map("llm", configmap("after", "1"))
        # the torn write's resourceVersion was handed out before the crash: never reused
        assert int(again.metadata.resource_version) > int(torn.metadata.resource_version)
