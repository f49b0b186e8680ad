"""What every verb of the ``@k8s`` connector works on and how it answers: the host's ``Scope``, ``VerbError`` for
a bad command, and one compact JSON line per answer.

A module of its own because the verbs live in two modules (``verbs``: a workload's objects, pods and logs, and the
dispatch; ``gpu_verbs``: the nodes and what their GPUs hold) and the connector, the set reads of
``operations.set_reads`` and the snapshot tests build a ``Scope`` too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vllm_remedy.kube.client import KubeClient


class VerbError(Exception):
    """The command is not a verb we know, or its arguments are wrong: one line for stderr."""


@dataclass(frozen=True)
class Scope:
    """What every verb works on: one Deployment through one client."""

    client: KubeClient
    namespace: str
    deployment: str
    annotation_prefix: str
    container: str | None = None  # the vLLM container chosen at connect (host data or the only one)
    kind: str = "deployment"  # the workload kind of the host (kube.kinds); ``deployment`` names the workload


def json_line(value: Any) -> str:
    """One answer line: compact, keys sorted, so equal answers are equal text."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
