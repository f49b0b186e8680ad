"""Does the live Deployment match its policy? The game's own check, for detection and for the verdict.

Pure: the Deployment, its pods, the nodes, the policy and the cluster time in; findings out, each keyed
(``flag:max-model-len``, ``gpu``, ``toggle:enforce-eager``) so a scenario can name the one it expects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, read_toggles
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.budget import PRODUCT_LABELS
from vllm_remedy.vllm.cmdline import find_server

EAGER = "enforce-eager"


@dataclass(frozen=True)
class Finding:
    """One policy breach; ``key`` is stable so a scenario's policy detection can name it, or its prefix (``flag``)."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def node_product(node: Mapping[str, Any]) -> str | None:
    """The GPU product a node advertises, from the same labels pinning uses (GFD, GKE, Karpenter); None without one."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return next((str(labels[k]) for k in PRODUCT_LABELS if labels.get(k)), None)


def pinned(spec: Mapping[str, Any], label: str) -> str | None:
    """The product ``nodeSelector[label]`` pins (the runbook's step-4 form; affinity is not read), or None."""
    return ((spec.get("nodeSelector") or {}).get(label)) or None


def findings(deployment: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], nodes: Mapping[str, Mapping[str, Any]],
             policy: Policy, now: float, container: str | None = None) -> list[Finding]:
    """Every way the running Deployment breaks ``policy`` right now; [] when it complies."""
    out: list[Finding] = []
    template = (deployment.get("spec") or {}).get("template") or {}
    spec = template.get("spec") or {}
    try:
        server = find_server(spec, container)
    except UserError as exc:
        return [Finding("server", str(exc))]
    out += [Finding(f"flag:{v.flag}", str(v)) for v in policy.check_flags(dict(server.flags))]
    products = list(policy.gpu.products)
    if products:
        pin = pinned(spec, policy.gpu.label)
        if pin not in products:
            out.append(Finding("gpu-pin", f"nodeSelector {policy.gpu.label}={pin or '(none)'}: expected one of "
                               f"{', '.join(products)}"))
        for pod in pods:
            name = (pod.get("spec") or {}).get("nodeName")
            if not name or (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue
            got = node_product(nodes.get(name) or {})
            if got not in products:
                out.append(Finding("gpu", f"pod {pod['metadata']['name']} runs on {name} ({got or 'no GPU label'}): "
                                   f"expected {', '.join(products)}"))
    keys = Keys(policy.annotation_prefix)
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    try:
        toggles = read_toggles(keys, notes)
    except UserError as exc:
        return [*out, Finding("toggle", str(exc))]
    for toggle in toggles:
        if toggle.expired(now):
            out.append(Finding(f"toggle:{toggle.name}", f"expired at {toggle.expires} and still in force"))
    eager = EAGER in server.flags
    if eager and not any(t.name == EAGER for t in toggles):
        out.append(Finding(f"toggle:{EAGER}", "--enforce-eager is on without a recorded expiry"))
    if eager and not policy.enforce_eager.allowed:
        out.append(Finding(f"flag:{EAGER}", "--enforce-eager is not allowed by policy"))
    return out
