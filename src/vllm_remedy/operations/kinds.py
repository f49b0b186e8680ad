"""Which workload kinds a deploy handles, and the one-line refusal for the others.

Why: a namespace host (``@k8s/<cluster>/<namespace>``) expands to every vLLM workload of every kind, so a
deploy written for Deployments meets StatefulSets and LeaderWorkerSets too. Reading them with a
Deployment-only fact fails the host with the connector's "reads a deployment, and this host is a
statefulset"; a deploy instead says what it does not do for that kind, names the host, and changes nothing.

    from vllm_remedy.operations import kinds

    if kinds.handles("deployment"):
        ...  # the Deployment operations
    else:
        kinds.unsupported(name="Pin the GPU type", what="pinning the GPU type")
"""

from __future__ import annotations

from collections.abc import Iterator

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.kube.kinds import DEPLOYMENT, KINDS
from vllm_remedy.operations.util import k8s_host, refuse


def kind_of(target: object = None) -> str:
    """The host's workload kind word (``kube.kinds``); a host without ``k8s_kind`` data is a Deployment."""
    data = getattr(target if target is not None else host, "data", None)
    return str((data.get("k8s_kind") if data is not None else None) or DEPLOYMENT.word)


def handles(*words: str) -> bool:
    """Whether the current host's kind is one of ``words`` (the kinds the calling deploy's operations read)."""
    return kind_of() in words


@operation()
def unsupported(what: str) -> Iterator[FunctionCommand]:
    """
    Refuse, in one line naming the host's kind, a remediation this deploy does not make for that kind.

    + what: the remediation, as the line names it ("pinning the GPU type")
    """
    ctx = k8s_host(host)
    kind = KINDS.get(ctx.kind)
    yield from refuse(state, host, f"{ctx.where}: {what} is not supported for a {kind.kind if kind else ctx.kind} "
                      "yet; nothing was changed")
