"""Names and sizes a real apiserver refuses are refused by the rehearsal cluster too, in its words (hostile review
2026-12-06, finding 3): ``metadata.name`` must be a lowercase RFC 1123 subdomain for ConfigMaps, Secrets, Pods,
Deployments and ReplicaSets (``ValidateObjectMeta`` with ``NameIsDNSSubdomain``), and a ConfigMap's data plus
binaryData or a Secret's decoded data may total at most 1 MiB (``core.MaxSecretSize``: ``field.TooLong``, whose
nameless root path prints as ``[]`` for a ConfigMap). Real kubectl 1.32 against the server."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fixtures import sim_world

V = "32"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_world.Sim]:
    sim_world.require_kubectl(V)
    s = sim_world.make_sim(tmp_path_factory.mktemp("name-validation"))
    yield s
    s.server.stop()


def _refused(got: Any) -> str:
    assert got.returncode == 1, (got.stdout, got.stderr)
    return str(got.stderr)


def _doc(kind: str, name: str, **more: Any) -> dict[str, Any]:
    api = "apps/v1" if kind == "Deployment" else "v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "llm"}, **more}


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": "m"}
    return _doc("Deployment", name, spec={"selector": {"matchLabels": labels}, "template": {
        "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "vllm/vllm-openai:v0.11.0"}]}}})


@pytest.mark.parametrize(("doc", "said"), [
    (_doc("ConfigMap", "Bad_Name", data={"k": "v"}), 'The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid '
     f'value: "Bad_Name": {SUBDOMAIN}\n'),
    (_doc("Secret", "Bad_Name", stringData={"k": "v"}), 'The Secret "Bad_Name" is invalid: metadata.name: Invalid '
     f'value: "Bad_Name": {SUBDOMAIN}\n'),
    (_deployment("Bad_M"), f'The Deployment "Bad_M" is invalid: metadata.name: Invalid value: "Bad_M": {SUBDOMAIN}\n'),
])
def test_kubectl_create_refuses_a_name_that_is_no_subdomain(world, doc: dict[str, Any], said: str) -> None:
    assert _refused(world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc))) == said
    kind = {"ConfigMap": "configmaps", "Secret": "secrets", "Deployment": "deployments.apps"}[doc["kind"]]
    assert world.clusters["a"].store.find(kind, "llm", doc["metadata"]["name"]) is None


def test_kubectl_create_configmap_refuses_a_bad_name(world) -> None:
    err = _refused(world.kubectl(V, "-n", "llm", "create", "configmap", "Bad_Name", "--from-literal=k=v"))
    assert err == ('error: failed to create configmap: ConfigMap "Bad_Name" is invalid: metadata.name: Invalid '
                   f'value: "Bad_Name": {SUBDOMAIN}\n')


def test_a_lowercase_dotted_name_is_taken(world) -> None:
    doc = _doc("ConfigMap", "vllm.flags-1", data={"k": "v"})
    assert world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc)).returncode == 0


def test_kubectl_refuses_a_configmap_over_one_mib(world) -> None:
    doc = _doc("ConfigMap", "big", data={"a": "x" * (MIB // 2), "b": "y" * (MIB // 2 + 1)})
    err = _refused(world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc)))
    assert err == 'The ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes\n'
    doc = _doc("ConfigMap", "full", data={"a": "x" * (MIB // 2), "b": "y" * (MIB // 2)})
    assert world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc)).returncode == 0


def test_kubectl_refuses_a_secret_over_one_mib_decoded(world) -> None:
    doc = _doc("Secret", "big", data={"a": base64.b64encode(b"x" * (MIB + 1)).decode()})
    err = _refused(world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc)))
    assert err == 'The Secret "big" is invalid: data: Too long: must have at most 1048576 bytes\n'
