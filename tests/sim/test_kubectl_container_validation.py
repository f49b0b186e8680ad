"""A container a real apiserver refuses is refused by the rehearsal cluster too, in its words (hostile review 15b, F13):
``validateContainerCommon`` requires each container's ``image`` and a ``name`` that is an RFC 1123 label, and
``validateContainers`` refuses a name used twice, in a Pod's spec and a workload's pod template alike. The classic
case is a JSON merge patch that replaces the ``containers`` list (RFC 7386) and drops the image: real Kubernetes
answers ``spec.template.spec.containers[0].image: Required value``; the rehearsal used to store it and run an
image-less container. Real kubectl 1.32 against the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fixtures import sim_world

V = "32"
IMAGE = "vllm/vllm-openai:v0.11.0"
LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
         "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_world.Sim]:
    sim_world.require_kubectl(V)
    s = sim_world.make_sim(tmp_path_factory.mktemp("container-validation"))
    yield s
    s.server.stop()


def _refused(got: Any) -> str:
    assert got.returncode == 1, (got.stdout, got.stderr)
    return str(got.stderr)


def _deployment(name: str, containers: list[dict[str, Any]], kind: str = "Deployment") -> dict[str, Any]:
    labels = {"app": name}
    spec: dict[str, Any] = {"selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "llm"}, "spec": spec}


def _pod(name: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"containers": containers}}


def test_a_merge_patch_that_drops_the_image_is_refused_and_nothing_changes(world) -> None:
    doc = _deployment("mp", [{"name": "vllm", "image": IMAGE, "args": ["m", "--max-model-len", "8192"]}])
    assert world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc)).returncode == 0
    replaced = [{"name": "vllm", "args": ["m", "--max-model-len", "4096"]}]  # a merge patch replaces the whole list
    patch = {"spec": {"template": {"spec": {"containers": replaced}}}}
    said = _refused(world.kubectl(V, "-n", "llm", "patch", "deploy", "mp", "--type", "merge", "-p", json.dumps(patch)))
    assert said == 'The Deployment "mp" is invalid: spec.template.spec.containers[0].image: Required value\n'
    stored = world.clusters["a"].store.find("deployments.apps", "llm", "mp")
    container = stored["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == IMAGE and container["args"][-1] == "8192", container


@pytest.mark.parametrize(("doc", "said"), [
    (_pod("noimage", [{"name": "vllm"}]), 'The Pod "noimage" is invalid: spec.containers[0].image: Required value\n'),
    (_pod("badname", [{"name": "Vllm_1", "image": IMAGE}]),
     f'The Pod "badname" is invalid: spec.containers[0].name: Invalid value: "Vllm_1": {LABEL}\n'),
    (_pod("twice", [{"name": "vllm", "image": IMAGE}, {"name": "vllm", "image": IMAGE}]),
     'The Pod "twice" is invalid: spec.containers[1].name: Duplicate value: "vllm"\n'),
    (_deployment("sts", [{"name": "vllm"}], "StatefulSet"),
     'The StatefulSet "sts" is invalid: spec.template.spec.containers[0].image: Required value\n'),
    (_deployment("noname", [{"image": IMAGE}]),
     'The Deployment "noname" is invalid: spec.template.spec.containers[0].name: Required value\n'),
])
def test_kubectl_create_refuses_a_container_the_apiserver_refuses(world, doc: dict[str, Any], said: str) -> None:
    assert _refused(world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc))) == said
    kind = {"Pod": "pods", "Deployment": "deployments.apps", "StatefulSet": "statefulsets.apps"}[doc["kind"]]
    assert world.clusters["a"].store.find(kind, "llm", doc["metadata"]["name"]) is None
