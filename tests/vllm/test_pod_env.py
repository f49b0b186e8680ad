"""pod_env: a variable's value in vLLM's process, from env, envFrom and the ConfigMaps checked with it."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import pod_env

X = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
MAPS = {"cm": {X: "1", "flag": "true"}}


def read(env: list | None = None, env_from: list | None = None, maps: dict | None = None) -> pod_env.EnvValue:
    box = {"command": ["vllm", "serve", "m"], "env": env or [], "envFrom": env_from or []}
    return pod_env.read(box, X, maps)


def test_literal_values_and_kubernetes_expansion():
    assert read([{"name": X, "value": "1"}]).value == "1"
    assert read([{"name": "A", "value": "true"}, {"name": X, "value": "$(A)"}]).value == "true"
    assert read([{"name": X, "value": "$(LATER)"}, {"name": "LATER", "value": "1"}]).value == "$(LATER)"
    assert read([{"name": "A", "value": "1"}, {"name": X, "value": "$$(A)"}]).value == "$(A)"  # escaped


def test_config_maps_among_the_manifests_are_read():
    ref = {"configMapKeyRef": {"name": "cm", "key": "flag"}}
    assert read([{"name": X, "valueFrom": ref}], maps=MAPS).value == "true"
    assert read(env_from=[{"configMapRef": {"name": "cm"}}], maps=MAPS).value == "1"
    assert read(env_from=[{"configMapRef": {"name": "cm"}, "prefix": "P_"}], maps=MAPS).value is None
    missing = {"configMapKeyRef": {"name": "cm", "key": "nope", "optional": True}}
    assert read([{"name": X, "valueFrom": missing}], maps=MAPS) == pod_env.EnvValue(X, None)
    # env wins over envFrom
    assert read([{"name": X, "value": "0"}], [{"configMapRef": {"name": "cm"}}], MAPS).value == "0"


def test_what_the_manifests_do_not_hold_is_unknown():
    assert "not among the manifests" in read([{"name": X, "valueFrom": {"configMapKeyRef": {
        "name": "cm", "key": "k"}}}]).unknown
    assert "secretKeyRef" in read([{"name": X, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]).unknown
    assert "Secret s" in read(env_from=[{"secretRef": {"name": "s"}}]).unknown
    assert read([{"name": X, "value": "1"}], [{"secretRef": {"name": "s"}}]).value == "1"  # env overrides it


def test_config_maps_are_collected_from_documents_and_lists():
    docs = [{"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}},
            {"kind": "List", "items": [{"kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"n": 1}}]},
            {"kind": "Deployment"}]
    assert pod_env.config_maps(docs, "default") == {"a": {"k": "v"}, "b": {"n": "1"}}


def test_a_config_map_counts_only_in_the_pods_namespace():
    """Kubernetes resolves configMapKeyRef and envFrom in the pod's own namespace: a ConfigMap of the same name in
    another namespace among the files says nothing of it (the second hostile review's H4)."""
    docs = [{"kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "other"}, "data": {"allow": "1"}},
            {"kind": "ConfigMap", "metadata": {"name": "plain"}, "data": {"k": "v"}}]
    assert pod_env.config_maps(docs, "llm") == {}
    assert pod_env.config_maps(docs, "other") == {"cfg": {"allow": "1"}}
    assert pod_env.config_maps(docs, "llm", default="llm") == {"plain": {"k": "v"}}  # namespace-less: check -n's


def test_a_non_string_env_value_is_a_manifest_kubernetes_refuses():
    """`value: True` unquoted decodes as a boolean; the API server refuses a non-string env[].value (400), so no pod
    runs with it. Read as the text "True" it counted as set and allowed the long length (review L7)."""
    for value, kind in ((True, "a boolean"), (1, "an integer")):
        with pytest.raises(UserError) as err:
            read([{"name": X, "value": value}])
        # YAML's spelling is gone once decoded (`y` and `true` are both True): no guess at the quoted text (review L3)
        assert str(err.value) == (f"env {X}: value {value!r} is {kind}, not a string, so Kubernetes refuses the "
                                  "manifest (quote the value as you meant it)")
    assert pod_env.invalid({"env": [{"name": "OTHER", "value": False}]}) is not None  # any entry: the pod is refused
    assert read([{"name": X, "value": None}]).value == ""  # `value:` (null) is the empty string, not "None"


@pytest.mark.parametrize(("env", "why"), [
    ("FOO=1", "env is a string ('FOO=1'), not a list of {name, value} entries"),
    (["FOO=1"], "env[0] is a string ('FOO=1'), not a {name, value} entry"),
    ([{"value": "1"}], "env[0] has no name"),
    ([{"name": 5, "value": "1"}], "env[0] has name 5, an integer, not a string"),
    ([{"name": X, "value": "1", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
     f"env {X}: both value and valueFrom are set"),
])
def test_env_shapes_kubernetes_refuses_are_named(env, why):
    """The API server refuses each of these shapes (review M5): the reason names the entry, never reads past it."""
    got = pod_env.invalid({"env": env})
    assert got is not None and got.startswith(why) and got.count("Kubernetes refuses the manifest") == 1, got


def test_env_shapes_kubernetes_takes_pass():
    assert pod_env.invalid({"env": [{"name": X, "value": "", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}) is None
    assert pod_env.invalid({"env": [{"name": X}, {"name": "Y", "value": None}]}) is None
    assert pod_env.invalid({"env": None}) is None


def test_a_config_map_with_non_string_data_is_refused():
    """ConfigMap data is map[string]string: `{X: 1}` unquoted is refused by the API server (review M5)."""
    doc = {"kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"ok": "1", X: 1}}
    assert pod_env.config_map_problem(doc) == (f"ConfigMap cfg: data.{X}: value 1 is an integer, not a string, so "
                                               "Kubernetes refuses it (data is map[string]string: quote the value as "
                                               "you meant it)")
    assert pod_env.config_map_problem({**doc, "data": {X: "1"}}) is None
    assert pod_env.config_map_problem({**doc, "data": {X: None}}) is None  # null decodes as "" (review 4, L2)
    assert pod_env.config_maps([{**doc, "data": {X: None}}], "default").popitem()[1] == {X: ""}
    assert pod_env.config_map_problem({"kind": "Secret", "data": {X: 1}}) is None
