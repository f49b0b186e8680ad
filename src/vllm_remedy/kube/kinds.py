"""The workload kinds vLLM is deployed as, and where each keeps its pod template (pure, no I/O).

Why one table: the host grammar, the connector's reads and the namespace expansion must agree on which
kinds exist, which API group serves each (a CRD kind may simply not be installed), and where the vLLM
container sits — a Deployment's template is ``spec.template``, an LWS has a leader and a worker template,
a KServe InferenceService puts its containers under ``spec.predictor``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    """One workload kind: its host-name word, API kind, group/version, resource, and pod spec locations."""

    word: str  # as written in a host name: @k8s/<cluster>/<namespace>/<word>/<name>
    kind: str  # the API's kind
    group: str  # group/version, as in an API path
    resource: str  # the plural resource name
    pod_specs: tuple[tuple[str, ...], ...]  # paths to each pod spec (or container holder) of the object
    remediable: bool = False  # whether our deploys may write to it (others: read, detect, refuse)

    def pod_specs_of(self, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every pod spec (or container-holding mapping) the object carries, in table order; missing ones skipped."""
        out = []
        for path in self.pod_specs:
            node: Any = obj
            for key in path:
                node = node.get(key) if isinstance(node, Mapping) else None
            if isinstance(node, dict):
                out.append(node)
        return out


DEPLOYMENT = Kind("deployment", "Deployment", "apps/v1", "deployments", (("spec", "template", "spec"),),
                  remediable=True)
STATEFULSET = Kind("statefulset", "StatefulSet", "apps/v1", "statefulsets", (("spec", "template", "spec"),),
                   remediable=True)
LEADERWORKERSET = Kind("leaderworkerset", "LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", "leaderworkersets",
                       (("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
                        ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")), remediable=True)
INFERENCESERVICE = Kind("inferenceservice", "InferenceService", "serving.kserve.io/v1beta1", "inferenceservices",
                        (("spec", "predictor"),), remediable=True)

KINDS: dict[str, Kind] = {k.word: k for k in (DEPLOYMENT, STATEFULSET, LEADERWORKERSET, INFERENCESERVICE)}


def kind_named(word: str) -> Kind | None:
    """The Kind for a host name's kind word, or None when it is not one we know."""
    return KINDS.get(word)
