"""Runbook steps 2–3 as a pyinfra operation that only reads: the report is printed once per host.

Why an operation that never yields: the deploy stays "one step, one file, one operation" like the
others, and the report appears in ``--dry``, prompted and ``-y`` runs alike, exactly once per host.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.facts.gpu_memory import GpuMemory
from vllm_remedy.facts.history import RolloutHistory
from vllm_remedy.facts.nodes import GpuNodes
from vllm_remedy.facts.pods import Pods
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.operations.util import k8s_host, show
from vllm_remedy.remedies.diagnose import crashed_containers, diagnose_lines

#: Log lines read per crashed container: a whole vLLM start, like the Pods fact reads.
LOG_TAIL = 3000


@operation(is_idempotent=True)
def report(tail: int = LOG_TAIL) -> Iterator[FunctionCommand]:
    """
    Print the startup log evidence, the bad-vs-good revision diff and the GPU picture (pods on each node, GPU
    memory held outside the pod from the DCGM exporter and vLLM's own startup line); change nothing.

    + tail: lines of each crashed container's log to read for the runbook's grep

    **Example:**

    .. code:: python

        diagnose.report(name="Read the startup log and what changed")
    """
    ctx = k8s_host(host)
    history = host.get_fact(RolloutHistory)
    pods = host.get_fact(Pods)
    nodes = host.get_fact(GpuNodes)
    if history is None or pods is None or nodes is None:
        return  # pyinfra already failed the host with the fact's error
    logs: dict[str, list[str]] = {}
    for pod, container, previous in crashed_containers(pods, ctx.container):
        try:
            text = ctx.client.pod_log(ctx.namespace, pod, container, previous=previous, tail_lines=tail)
        except KubeError:
            continue  # the Pods fact already carries why the log is unreadable
        logs[f"{pod}/{container}"] = text.splitlines()
    memory = host.get_fact(GpuMemory)  # None only when the fact failed, which pyinfra reports for the host
    show(state, host, diagnose_lines(history, pods, nodes, logs, ctx.policy, ctx.container, memory, ctx.namespace),
         topic="diagnose")
    return
    yield  # a generator that never yields: diagnosis is read-only
