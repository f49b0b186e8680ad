"""The ``@k8s`` host grammar and how a host's ``<cluster>`` becomes a kube context — pure, no I/O.

Why a grammar of our own: pyinfra hands the connector everything after ``@k8s/`` as one string, and
the forms mean different things — ``<cluster>/<namespace>/<kind>/<name>`` is one workload (``kind``
one of :data:`~vllm_remedy.kube.kinds.KINDS`, or kubectl's alias for it: ``sts``, ``deployments``,
``isvc``; ``<cluster>/<namespace>/<name>`` is the Deployment form), while ``<cluster>/<namespace>`` asks
for every vLLM workload there, of every kind. Names are checked here, at inventory time; a bad one fails
only its own host, at connect (the connector carries the reason there). A kube context whose name holds ``/`` (EKS
ARNs) cannot appear in a host name; such clusters are reached through an alias in ``k8s_contexts``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.kinds import DEPLOYMENT, KINDS, Kind

PREFIX = "@k8s"
FORMS = "@k8s/<cluster>/<namespace>/[<kind>/]<name> or @k8s/<cluster>/<namespace>"
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # DNS-1123 label (namespaces)
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")  # object names
_CLUSTER = re.compile(r"[^\s/,]+")


@dataclass(frozen=True)
class Target:
    """What one ``@k8s`` host string names; ``deployment`` (the workload's name) is None for the namespace form."""

    cluster: str
    namespace: str
    deployment: str | None = None
    kind: str = DEPLOYMENT.word

    @property
    def workload(self) -> Kind:
        """The workload kind this host acts on (a Deployment unless the host name says otherwise)."""
        return KINDS[self.kind]

    @property
    def host_name(self) -> str:
        """The inventory name pyinfra shows; round-trips through parse_target (a Deployment keeps the short form)."""
        word = "" if self.kind == DEPLOYMENT.word else f"/{self.kind}"
        tail = f"{word}/{self.deployment}" if self.deployment else ""
        return f"{PREFIX}/{self.cluster}/{self.namespace}{tail}"

    def with_deployment(self, name: str, kind: str = DEPLOYMENT.word) -> Target:
        """One host per workload when a namespace target expands to several."""
        return Target(self.cluster, self.namespace, name, kind)


#: kubectl's names for our kinds (short names, plurals, the API kind in any case) → the host-name word.
KIND_ALIASES: dict[str, str] = {
    **{word: word for word in KINDS}, **{k.resource: k.word for k in KINDS.values()},
    **{k.kind.lower(): k.word for k in KINDS.values()},
    "deploy": "deployment", "sts": "statefulset", "lws": "leaderworkerset", "isvc": "inferenceservice",
}


def canonical_kind(word: str) -> str:
    """``sts``, ``statefulsets``, ``StatefulSet`` → ``statefulset`` (as kubectl accepts them); else ``word``."""
    return KIND_ALIASES.get(word.lower(), word)


def parse_target(argument: str | None) -> Target:
    """``cluster/namespace[/[kind/]name]`` (what pyinfra passes after ``@k8s/``) → Target, or a one-line UserError."""
    shown = f"{PREFIX}/{argument}" if argument else PREFIX
    if not argument:
        raise UserError(f"{shown}: no cluster given; expected {FORMS}")
    parts = argument.split("/")
    alias_hint = "; a context name containing '/' needs an alias in host data k8s_contexts"
    if len(parts) not in (2, 3, 4) or any(not p for p in parts):
        raise UserError(f"{shown}: expected {FORMS}{alias_hint if len(parts) > 4 else ''}")
    cluster, namespace = parts[0], parts[1]
    deployment = parts[-1] if len(parts) > 2 else None
    kind = canonical_kind(parts[2]) if len(parts) == 4 else DEPLOYMENT.word
    if kind not in KINDS:
        hint = alias_hint if ":" in cluster else ""  # an EKS ARN split at its '/' looks like a kind form
        raise UserError(f"{shown}: unknown kind {kind!r}; expected one of {', '.join(KINDS)}{hint}")
    if not _CLUSTER.fullmatch(cluster):
        raise UserError(f"{shown}: cluster {cluster!r} must not contain spaces, ',' or '/'")
    if len(namespace) > 63 or not _LABEL.fullmatch(namespace):
        raise UserError(f"{shown}: namespace {namespace!r} is not a valid namespace name "
                        "(lowercase letters, digits and '-', at most 63)")
    if deployment is not None and (len(deployment) > 253 or not _SUBDOMAIN.fullmatch(deployment)):
        raise UserError(f"{shown}: {kind} {deployment!r} is not a valid {KINDS[kind].kind} name "
                        "(lowercase letters, digits, '-' and '.', at most 253)")
    return Target(cluster, namespace, deployment, kind)


@dataclass(frozen=True)
class ClusterAccess:
    """The kube context and kubeconfig (None = kubectl's KUBECONFIG / ~/.kube/config rules) for a host."""

    context: str
    kubeconfig: str | None
    via: str  # how the context was chosen, for error messages
    kubeconfig_via: str = ""  # which host data key named the kubeconfig ("" = kubectl's rules)


def resolve_access(cluster: str, *, context: str | None = None, kubeconfig: str | None = None,
                   aliases: Mapping[str, Any] | None = None) -> ClusterAccess:
    """Host data ``context`` wins; else ``k8s_contexts[<cluster>]``; else ``<cluster>`` is the context name.

    An alias maps to a context name, or to ``{context: ..., kubeconfig: ...}`` when each cluster has its
    own kubeconfig file; host data ``kubeconfig`` still overrides the alias's.
    """
    if aliases is not None and not isinstance(aliases, Mapping):
        raise UserError(f"host data k8s_contexts: expected a mapping of cluster alias to context, "
                        f"got {type(aliases).__name__}")
    alias = (aliases or {}).get(cluster)
    alias_config: str | None = None
    if isinstance(alias, Mapping):
        unknown = sorted(set(alias) - {"context", "kubeconfig"})
        if unknown or not isinstance(alias.get("context"), str) or not alias.get("context"):
            raise UserError(f"host data k8s_contexts.{cluster}: expected a context name or "
                            "{context: <name>, kubeconfig: <path>}")
        alias_config = alias.get("kubeconfig")
        if alias_config is not None and not isinstance(alias_config, str):
            raise UserError(f"host data k8s_contexts.{cluster}.kubeconfig: expected a path string")
        alias = alias["context"]
    elif alias is not None and (not isinstance(alias, str) or not alias):
        raise UserError(f"host data k8s_contexts.{cluster}: expected a context name or "
                        "{context: <name>, kubeconfig: <path>}")
    if context:
        via = "host data context"
    elif alias:
        context, via = alias, f"alias k8s_contexts.{cluster}"
    else:
        context, via = cluster, "cluster name"
    kubeconfig_via = ("host data kubeconfig" if kubeconfig else
                      f"host data k8s_contexts.{cluster}.kubeconfig" if alias_config else "")
    return ClusterAccess(context=context, kubeconfig=kubeconfig or alias_config, via=via,
                         kubeconfig_via=kubeconfig_via)
