"""What an operation needs from its ``@k8s`` host: the connector's client, target, policy and annotation keys.

Why through the connector: it already resolved the kube context, checked the Deployment exists and
runs vLLM, and loaded the policy at connect time (bad input fails there, one line per host). Facts go
through the verb language; only writes and waits use the client directly, from FunctionCommands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.facts.deployment import Deployment
from vllm_remedy.facts.pods import Pods
from vllm_remedy.facts.statefulset import StatefulSetState
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.kinds import DEPLOYMENT, KINDS, STATEFULSET
from vllm_remedy.operations.util import planned
from vllm_remedy.policy import Policy


@dataclass(frozen=True)
class K8sHost:
    """One ``@k8s/<cluster>/<namespace>/<deployment>`` host as operations see it."""

    name: str
    client: KubeClient
    namespace: str
    deployment: str
    keys: Keys
    policy: Policy
    container: str | None
    kind: str = DEPLOYMENT.word  # the workload's kind (``kube.kinds``); ``deployment`` above is its name

    @property
    def deployment_path(self) -> str:
        """The workload's API path: what writes target and what ``observe`` keys the read basis by."""
        kind = KINDS[self.kind]
        return KubeClient.object_path(self.namespace, kind.resource, self.deployment, kind.group)

    @property
    def where(self) -> str:
        """``deployment <ns>/<name>`` (or its kind), how summaries, refusals and diff headers name the target."""
        return f"{self.kind} {self.namespace}/{self.deployment}"


def k8s_host(host: Any) -> K8sHost:
    """The host's connection; a UserError (one line) when the host is not a connected ``@k8s`` host.

    With no policy in host data the defaults of ``policy.Policy`` apply (the runbook's conservative base).
    """
    connector = getattr(host, "connector", None)
    client = getattr(connector, "client", None)
    scope = getattr(connector, "scope", None)
    if client is None or scope is None:
        raise UserError(f"{getattr(host, 'name', host)}: not a connected @k8s host; vllm_remedy operations "
                        "run on @k8s/<cluster>/<namespace>/<deployment> hosts")
    policy = getattr(connector, "policy", None) or Policy()
    return K8sHost(name=host.name, client=client, namespace=scope.namespace, deployment=scope.deployment,
                   keys=getattr(connector, "keys", None) or Keys(policy.annotation_prefix), policy=policy,
                   container=scope.container, kind=getattr(scope, "kind", DEPLOYMENT.word))


def pods_fact(host: Any, **kwargs: Any) -> Any:
    """The Pods fact (``kwargs`` as the fact takes them) — a StatefulSet's pods in the same shape (its fact's
    ``pod_rows``, crashed containers' logs read); while changes are detected, as the run's earlier operations leave
    them (``planned.pods``: after a planned template change, none is of the current revision)."""
    path = k8s_host(host).deployment_path
    if k8s_host(host).kind == STATEFULSET.word:
        facts = host.get_fact(StatefulSetState)
        return planned.pods(host, path, None if facts is None else facts["pod_rows"])
    return planned.pods(host, path, host.get_fact(Pods, **kwargs))


def deployment_object(host: Any) -> dict[str, Any]:
    """The host's workload of its kind as the API sent it — a Deployment (its fact's object) or a StatefulSet (its
    fact's ``statefulset``), both keeping the pod template at ``spec.template``: what writes are planned on. While
    changes are detected, as the run's earlier operations plan to leave it (``planned.current``)."""
    ctx = k8s_host(host)
    if ctx.kind == STATEFULSET.word:
        return planned.current(host, ctx.deployment_path, host.get_fact(StatefulSetState)["statefulset"])
    return planned.current(host, ctx.deployment_path, host.get_fact(Deployment)["object"])
