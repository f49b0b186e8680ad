"""The Helm values change that makes a vLLM flag change survive the next ``helm upgrade`` (pure).

Why: a Deployment rendered by a Helm chart is rewritten from the release's values on every upgrade, so a
fix written to the live object lasts only until then. Most charts' value names are their own, so for them
we say which flag must change and how to upgrade keeping the other values; for the vLLM production-stack
chart (vllm-project/production-stack, ``helm/templates/deployment-vllm-multi.yaml``) we know how each
``servingEngineSpec.modelSpec[].vllmConfig`` key renders, so the hint is the exact ``--set`` paths. That chart
renders no ``nodeSelector``: a node pin becomes ``modelSpec[].nodeSelectorTerms`` (the template's required node
affinity, one term ANDing the labels as a nodeSelector does), and ``replicas`` is ``modelSpec[].replicaCount``.
Any other manifest field is named as such, with the values left to find by hand: no key is guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: production-stack ``vllmConfig`` keys by the vLLM flag each renders (``enableChunkedPrefill``/
#: ``enablePrefixCaching`` are booleans rendering ``--[no-]enable-…``; the rest render ``--flag value``).
STACK_KEYS = {
    "enable-chunked-prefill": "enableChunkedPrefill",
    "enable-prefix-caching": "enablePrefixCaching",
    "max-model-len": "maxModelLen",
    "dtype": "dtype",
    "tensor-parallel-size": "tensorParallelSize",
    "max-num-seqs": "maxNumSeqs",
    "gpu-memory-utilization": "gpuMemoryUtilization",
    "max-loras": "maxLoras",
}
#: Flags the chart renders from other modelSpec keys (or fixes): never part of ``vllmConfig.extraArgs``.
STACK_OWN = {"host", "port", "enable-lora", "enable-auto-tool-choice", "tool-call-parser", "kv-transfer-config",
             "chat-template"}
STACK_LABELS = ("helm-release-name", "model")  # every engine Deployment the chart renders carries both


def is_production_stack(labels: Mapping[str, str]) -> bool:
    """Whether a Deployment was rendered by the vLLM production-stack chart (its engine labels, or its chart label)."""
    chart = str(labels.get("helm.sh/chart", ""))
    return all(labels.get(k) for k in STACK_LABELS) or chart.startswith("vllm-stack-")


def _flag(name: str, value: str) -> str:
    return f"--{name}" if value == "true" else f"--{name}={value}"


def stack_sets(entry: str, old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """``--set`` options turning production-stack values rendering flags ``old`` into ``new``.

    ``entry`` is the ``modelSpec`` element's path (its index is the user's); a removed key is set to
    ``null`` (Helm deletes it); flags the chart has no key for go to ``vllmConfig.extraArgs``, which a
    ``--set`` replaces as a whole, so the whole new list is given.
    """
    base = f"{entry}.vllmConfig"
    out = []
    for flag, key in STACK_KEYS.items():
        if old.get(flag) == new.get(flag):
            continue
        value = new.get(flag)
        out.append(f"--set {base}.{key}={'null' if value is None else value}")
    extra_old = {k: v for k, v in old.items() if k not in STACK_KEYS and k not in STACK_OWN}
    extra_new = {k: v for k, v in new.items() if k not in STACK_KEYS and k not in STACK_OWN}
    if extra_old != extra_new:
        items = ",".join(_flag(k, v) for k, v in extra_new.items())
        out.append(f"--set '{base}.extraArgs={{{items}}}'")
    return out


#: Manifest paths (as ``gitops._paths`` names them) the production-stack chart renders from a modelSpec key.
NODE_SELECTOR, REPLICAS = "spec.template.spec.nodeSelector", "spec.replicas"


def stack_placement(entry: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``--set``/``--set-json`` options for the Deployment fields production-stack renders from modelSpec keys
    other than vllmConfig (node pin, replica count), and the notes they need; both empty when neither changes."""
    def pod(obj: Mapping[str, Any]) -> Mapping[str, Any]:
        return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    sets: list[str] = []
    notes: list[str] = []
    old_pin, new_pin = pod(before).get("nodeSelector") or {}, pod(after).get("nodeSelector") or {}
    if old_pin != new_pin:
        terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": [str(v)]} for k, v in new_pin.items()]}]
        sets.append(f"--set-json '{entry}.nodeSelectorTerms={json.dumps(terms if new_pin else None)}'")
        notes.append(f"helm: the chart renders no nodeSelector; {entry}.nodeSelectorTerms renders the same pin as a "
                     f"required node affinity (ignored while {entry}.affinity is set)")
    old_n, new_n = (before.get("spec") or {}).get("replicas"), (after.get("spec") or {}).get("replicas")
    if old_n != new_n and new_n is not None:
        sets.append(f"--set {entry}.replicaCount={new_n}")
    return sets, notes


def by_hand(chart: str, other: tuple[str, ...]) -> list[str]:
    """Manifest fields whose values key is unknown: named plainly, the key left to the operator."""
    whose = "the chart's" if chart == "<chart>" else f"chart {chart}'s"
    return [f"helm: the manifest's {o} — {whose} value that renders it is not known here: find it in the chart's "
            "values by hand" for o in other]


def helm_lines(release: str, namespace: str, labels: Mapping[str, str], old: Mapping[str, str],
               new: Mapping[str, str], other: tuple[str, ...] = (), before: Mapping[str, Any] | None = None,
               after: Mapping[str, Any] | None = None) -> list[str]:
    """The ``helm:`` hint lines under a warning or refusal for a Helm-rendered vLLM workload (``before``/``after``:
    the objects, for the fields production-stack renders from modelSpec keys)."""
    chart = str(labels.get("helm.sh/chart", "")).rpartition("-")[0] or "<chart>"
    upgrade = f"helm upgrade {release} {chart} -n {namespace} --reuse-values"
    if is_production_stack(labels):
        model = labels.get("model", "<name>")
        entry = "servingEngineSpec.modelSpec[<i>]"
        placed, notes = stack_placement(entry, before or {}, after or {})
        sets = stack_sets(entry, old, new) + placed
        out = [f"helm: {upgrade} {' '.join(sets)}"] if sets else []
        out += [f"helm: <i> is the index of the servingEngineSpec.modelSpec entry with name: {model}"] if sets else []
        out += notes
        other = tuple(o for o in other if not o.startswith((f"{NODE_SELECTOR}:", f"{NODE_SELECTOR}.", f"{REPLICAS}:")))
    else:
        changes = [f"--{k} {'unset' if new.get(k) is None else new[k]}" for k in sorted(set(old) | set(new))
                   if old.get(k) != new.get(k)]
        out = [f"helm: set the values of release {namespace}/{release} that render {', '.join(changes)}, then "
               f"{upgrade} -f <those values>"] if changes else []
    return out + by_hand(chart, other)
