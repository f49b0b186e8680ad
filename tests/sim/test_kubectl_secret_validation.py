"""Secrets and ConfigMaps a real apiserver refuses with 422 Invalid are refused here too, in its words.

A runbook that creates the HF token Secret or a TLS Secret for the gateway must fail on the rehearsal cluster where it
fails on a real one: a key that is no config key, a typed Secret without its keys, a change of ``type``, an edit of an
``immutable`` Secret. Real kubectl 1.32 (create, apply, patch, replace) and the official Python client are driven
against the server, and what kubectl prints is asserted.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fixtures import sim_world

V = "32"
KEY_RULE = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
            "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
WHEN_IMMUTABLE = "field is immutable when `immutable` is set"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_world.Sim]:
    """One cluster (no controllers needed: these are API answers), shared by the module."""
    sim_world.require_kubectl(V)
    s = sim_world.make_sim(tmp_path_factory.mktemp("secret-validation"))
    yield s
    s.server.stop()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secret(name: str, kind: str | None = None, data: dict[str, str] | None = None,
            string_data: dict[str, str] | None = None, **more: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "llm"}}
    if kind:
        doc["type"] = kind
    if data is not None:
        doc["data"] = {k: _b64(v) for k, v in data.items()}
    if string_data is not None:
        doc["stringData"] = string_data
    return doc | more


def _refused(got: Any) -> str:
    assert got.returncode == 1, (got.stdout, got.stderr)
    return str(got.stderr)


def _core(world: sim_world.Sim) -> Any:
    from kubernetes import client, config

    return client.CoreV1Api(config.new_client_from_config(str(world.kubeconfig), context="a"))


def test_kubectl_create_refuses_a_key_that_is_no_config_key(world):
    doc = _secret("bad-key", string_data={"hf token": "hf_abc"})
    err = _refused(world.kubectl(V, "create", "-f", "-", stdin=yaml.safe_dump(doc)))
    assert err == f'The Secret "bad-key" is invalid: data[hf token]: Invalid value: "hf token": {KEY_RULE}\n'
    assert world.clusters["a"].store.find("secrets", "llm", "bad-key") is None


def test_kubectl_apply_refuses_a_tls_secret_without_its_key(world):
    doc = _secret("gw-tls", "kubernetes.io/tls", data={"tls.crt": "CERT"})
    err = _refused(world.kubectl(V, "apply", "-f", "-", stdin=yaml.safe_dump(doc)))
    assert err == 'The Secret "gw-tls" is invalid: data[tls.key]: Required value\n'
    doc = _secret("gw-none", "kubernetes.io/tls", data={})
    err = _refused(world.kubectl(V, "apply", "-f", "-", stdin=yaml.safe_dump(doc)))
    assert err == ('The Secret "gw-none" is invalid: \n* data[tls.crt]: Required value\n'
                   '* data[tls.key]: Required value\n')
    doc = _secret("gw-ok", "kubernetes.io/tls", data={"tls.crt": "CERT", "tls.key": ""})  # empty is present
    assert world.kubectl(V, "apply", "-f", "-", stdin=yaml.safe_dump(doc)).returncode == 0


@pytest.mark.parametrize(("doc", "causes"), [
    (_secret("ba", "kubernetes.io/basic-auth", data={}),
     [("FieldValueRequired", "data[username]", "Required value"),
      ("FieldValueRequired", "data[password]", "Required value")]),
    (_secret("ssh", "kubernetes.io/ssh-auth", data={"ssh-privatekey": ""}),
     [("FieldValueRequired", "data[ssh-privatekey]", "Required value")]),
    (_secret("dcj", "kubernetes.io/dockerconfigjson", data={}),
     [("FieldValueRequired", "data[.dockerconfigjson]", "Required value")]),
    (_secret("dcj-bad", "kubernetes.io/dockerconfigjson", data={".dockerconfigjson": "nope"}),
     [("FieldValueInvalid", "data[.dockerconfigjson]",
       "Invalid value: \"<secret contents redacted>\": invalid character 'o' in literal null (expecting 'u')")]),
    (_secret("dc-list", "kubernetes.io/dockercfg", data={".dockercfg": "[]"}),
     [("FieldValueInvalid", "data[.dockercfg]", "Invalid value: \"<secret contents redacted>\": json: cannot "
                                                "unmarshal array into Go value of type map[string]interface {}")]),
    (_secret("sa", "kubernetes.io/service-account-token"),
     [("FieldValueRequired", "metadata.annotations[kubernetes.io/service-account.name]", "Required value")]),
    (_secret("dots", data={"..": "x", "..a": "y"}),
     [("FieldValueInvalid", "data[..]", "Invalid value: \"..\": must not be '..'"),
      ("FieldValueInvalid", "data[..a]", "Invalid value: \"..a\": must not start with '..'")]),
    (_secret("long", data={"k" * 254: "x"}),
     [("FieldValueInvalid", f"data[{'k' * 254}]", f"Invalid value: \"{'k' * 254}\": must be no more than 253 "
                                                  "characters")]),
])
def test_the_client_gets_invalid_with_the_apiservers_causes(world, doc, causes):
    from kubernetes.client.rest import ApiException

    with pytest.raises(ApiException) as refused:
        _core(world).create_namespaced_secret("llm", doc)
    status = json.loads(refused.value.body)
    assert (refused.value.status, status["reason"]) == (422, "Invalid")
    name = doc["metadata"]["name"]
    assert (status["details"]["kind"], status["details"]["name"]) == ("Secret", name)
    assert [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]] == causes
    texts = [f"{field}: {message}" for _, field, message in causes]
    assert status["message"] == f'Secret "{name}" is invalid: ' + (texts[0] if len(texts) == 1 else
                                                                   "[" + ", ".join(texts) + "]")


def test_type_is_immutable_on_patch_and_replace(world):
    k = world.kubectl
    assert k(V, "-n", "llm", "create", "secret", "generic", "typed", "--from-literal=token=t").returncode == 0
    err = _refused(k(V, "-n", "llm", "patch", "secret", "typed", "-p", '{"type":"kubernetes.io/basic-auth"}'))
    assert err == ('The Secret "typed" is invalid: \n* type: Invalid value: "kubernetes.io/basic-auth": field is '
                   'immutable\n* data[username]: Required value\n* data[password]: Required value\n')
    doc = _secret("typed", "kubernetes.io/ssh-auth", data={"ssh-privatekey": "k"})
    err = _refused(k(V, "replace", "-f", "-", stdin=yaml.safe_dump(doc)))
    assert err == 'The Secret "typed" is invalid: type: Invalid value: "kubernetes.io/ssh-auth": field is immutable\n'
    assert world.clusters["a"].store.get("secrets", "llm", "typed")["type"] == "Opaque"


def test_an_immutable_secret_keeps_its_data_and_the_flag(world):
    k = world.kubectl
    doc = _secret("frozen", data={"token": "one"}, immutable=True)
    assert k(V, "apply", "-f", "-", stdin=yaml.safe_dump(doc)).returncode == 0
    err = _refused(k(V, "-n", "llm", "patch", "secret", "frozen", "-p", '{"stringData":{"token":"two"}}'))
    assert err == f'The Secret "frozen" is invalid: data: Forbidden: {WHEN_IMMUTABLE}\n'
    thawed = _secret("frozen", data={"token": "one"}, immutable=False)
    err = _refused(k(V, "replace", "-f", "-", stdin=yaml.safe_dump(thawed)))
    assert err == f'The Secret "frozen" is invalid: immutable: Forbidden: {WHEN_IMMUTABLE}\n'
    labelled = k(V, "-n", "llm", "label", "secret", "frozen", "team=llm")  # metadata stays editable
    assert labelled.returncode == 0, labelled.stderr
    assert base64.b64decode(world.clusters["a"].store.get("secrets", "llm", "frozen")["data"]["token"]) == b"one"


def test_configmaps_take_the_same_key_rule_and_immutability(world):
    k = world.kubectl
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flags", "namespace": "llm"},
           "data": {"max model len": "8192", "ok": "1"}, "binaryData": {"ok": _b64("1")}}
    err = _refused(k(V, "create", "-f", "-", stdin=yaml.safe_dump(doc)))
    assert err == ('The ConfigMap "flags" is invalid: \n'
                   f'* data[max model len]: Invalid value: "max model len": {KEY_RULE}\n'
                   '* data[ok]: Invalid value: "ok": duplicate of key present in binaryData\n')
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen", "namespace": "llm"},
           "data": {"MAX_MODEL_LEN": "8192"}, "immutable": True}
    assert k(V, "apply", "-f", "-", stdin=yaml.safe_dump(doc)).returncode == 0
    err = _refused(k(V, "-n", "llm", "patch", "configmap", "frozen", "-p", '{"data":{"MAX_MODEL_LEN":"4096"}}'))
    assert err == f'The ConfigMap "frozen" is invalid: data: Forbidden: {WHEN_IMMUTABLE}\n'
