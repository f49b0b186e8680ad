"""The @k8s host grammar and context resolution (pure): exact Targets, exact one-line errors, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_remedy.connectors.hosts import ClusterAccess, Target, parse_target, resolve_access
from vllm_remedy.errors import UserError


@pytest.mark.parametrize(("argument", "expected"), [
    ("rehearsal/llm/llama-8b", Target("rehearsal", "llm", "llama-8b")),
    ("rehearsal/llm", Target("rehearsal", "llm", None)),
    ("gke_acme_europe-west4_prod/serving/qwen2.5-72b", Target("gke_acme_europe-west4_prod", "serving", "qwen2.5-72b")),
    ("kind-kind/default/a", Target("kind-kind", "default", "a")),
    ("prod/llm/statefulset/llama-8b", Target("prod", "llm", "llama-8b", "statefulset")),
    ("prod/llm/leaderworkerset/llama-405b", Target("prod", "llm", "llama-405b", "leaderworkerset")),
    ("prod/llm/inferenceservice/qwen", Target("prod", "llm", "qwen", "inferenceservice")),
])
def test_parse_target_forms(argument: str, expected: Target) -> None:
    got = parse_target(argument)
    assert got == expected
    assert got.host_name == "@k8s/" + argument


@pytest.mark.parametrize(("argument", "message"), [
    (None, "@k8s: no cluster given; expected @k8s/<cluster>/<namespace>/[<kind>/]<name> or @k8s/<cluster>/<namespace>"),
    ("onlyone", "@k8s/onlyone: expected @k8s/<cluster>/<namespace>/[<kind>/]<name> or @k8s/<cluster>/<namespace>"),
    ("a//b", "@k8s/a//b: expected @k8s/<cluster>/<namespace>/[<kind>/]<name> or @k8s/<cluster>/<namespace>"),
    ("a/llm/", "@k8s/a/llm/: expected @k8s/<cluster>/<namespace>/[<kind>/]<name> or @k8s/<cluster>/<namespace>"),
    ("arn:aws:eks:us-east-1:1:cluster/prod/llm/llama",
     "@k8s/arn:aws:eks:us-east-1:1:cluster/prod/llm/llama: unknown kind 'llm'; expected one of deployment, "
     "statefulset, leaderworkerset, inferenceservice; a context name containing '/' needs an alias in host data "
     "k8s_contexts"),
    ("arn:aws:eks:us-east-1:1:cluster/prod/llm/deployment/llama",
     "@k8s/arn:aws:eks:us-east-1:1:cluster/prod/llm/deployment/llama: expected @k8s/<cluster>/<namespace>/"
     "[<kind>/]<name> or @k8s/<cluster>/<namespace>; a context name containing '/' needs an alias in host data "
     "k8s_contexts"),
    ("prod/llm/daemonset/llama", "@k8s/prod/llm/daemonset/llama: unknown kind 'daemonset'; expected one of "
                                 "deployment, statefulset, leaderworkerset, inferenceservice"),
    ("prod/llm/statefulset/Llama", "@k8s/prod/llm/statefulset/Llama: statefulset 'Llama' is not a valid StatefulSet "
                                   "name (lowercase letters, digits, '-' and '.', at most 253)"),
    ("my cluster/llm", "@k8s/my cluster/llm: cluster 'my cluster' must not contain spaces, ',' or '/'"),
    ("a/LLM/x", "@k8s/a/LLM/x: namespace 'LLM' is not a valid namespace name (lowercase letters, digits and '-', "
                "at most 63)"),
    ("a/llm/Llama_8b", "@k8s/a/llm/Llama_8b: deployment 'Llama_8b' is not a valid Deployment name (lowercase "
                       "letters, digits, '-' and '.', at most 253)"),
    ("a/" + "n" * 64, f"@k8s/a/{'n' * 64}: namespace '{'n' * 64}' is not a valid namespace name (lowercase letters, "
                      "digits and '-', at most 63)"),
])
def test_parse_target_rejects_with_one_line(argument: str | None, message: str) -> None:
    with pytest.raises(UserError) as err:
        parse_target(argument)
    assert str(err.value) == message
    assert "\n" not in str(err.value)


def test_with_deployment_keeps_cluster_and_namespace() -> None:
    ns = parse_target("prod/llm")
    assert ns.with_deployment("llama-8b") == Target("prod", "llm", "llama-8b")
    assert ns.with_deployment("llama-8b").host_name == "@k8s/prod/llm/llama-8b"
    assert ns.with_deployment("llama-8b", "statefulset").host_name == "@k8s/prod/llm/statefulset/llama-8b"


def test_explicit_deployment_kind_is_the_short_form() -> None:
    """``.../deployment/<name>`` and ``.../<name>`` are the same host: pyinfra must not see it twice."""
    assert parse_target("prod/llm/deployment/llama-8b") == parse_target("prod/llm/llama-8b")
    assert parse_target("prod/llm/deployment/llama-8b").host_name == "@k8s/prod/llm/llama-8b"


_label = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
_cluster = st.from_regex(r"[A-Za-z0-9_:.@-]{1,30}", fullmatch=True)


@given(cluster=_cluster, namespace=_label, deployment=st.one_of(st.none(), _label),
       kind=st.sampled_from(["deployment", "statefulset", "leaderworkerset", "inferenceservice"]))
def test_host_name_round_trips(cluster: str, namespace: str, deployment: str | None, kind: str) -> None:
    target = Target(cluster, namespace, deployment, kind if deployment else "deployment")
    assert parse_target(target.host_name[len("@k8s/"):]) == target


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({}, ClusterAccess("prod", None, "cluster name")),
    ({"aliases": {"prod": "gke_acme_europe-west4_prod"}}, ClusterAccess("gke_acme_europe-west4_prod", None,
                                                                       "alias k8s_contexts.prod")),
    ({"aliases": {"staging": "x"}}, ClusterAccess("prod", None, "cluster name")),
    ({"context": "explicit", "aliases": {"prod": "aliased"}}, ClusterAccess("explicit", None, "host data context")),
    ({"aliases": {"prod": {"context": "arn:aws:eks:eu-west-1:1:cluster/prod", "kubeconfig": "/etc/kube/eks"}}},
     ClusterAccess("arn:aws:eks:eu-west-1:1:cluster/prod", "/etc/kube/eks", "alias k8s_contexts.prod",
                   "host data k8s_contexts.prod.kubeconfig")),
    ({"kubeconfig": "/mine", "aliases": {"prod": {"context": "c", "kubeconfig": "/theirs"}}},
     ClusterAccess("c", "/mine", "alias k8s_contexts.prod", "host data kubeconfig")),
])
def test_resolve_access(kwargs: dict, expected: ClusterAccess) -> None:
    assert resolve_access("prod", **kwargs) == expected


@pytest.mark.parametrize(("aliases", "message"), [
    (["prod"], "host data k8s_contexts: expected a mapping of cluster alias to context, got list"),
    ({"prod": 3}, "host data k8s_contexts.prod: expected a context name or {context: <name>, kubeconfig: <path>}"),
    ({"prod": {"kubeconfig": "/x"}},
     "host data k8s_contexts.prod: expected a context name or {context: <name>, kubeconfig: <path>}"),
    ({"prod": {"context": "c", "user": "u"}},
     "host data k8s_contexts.prod: expected a context name or {context: <name>, kubeconfig: <path>}"),
    ({"prod": {"context": "c", "kubeconfig": 7}}, "host data k8s_contexts.prod.kubeconfig: expected a path string"),
])
def test_resolve_access_rejects_bad_aliases(aliases: object, message: str) -> None:
    with pytest.raises(UserError) as err:
        resolve_access("prod", aliases=aliases)  # type: ignore[arg-type]
    assert str(err.value) == message
