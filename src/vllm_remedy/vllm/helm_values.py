"""The Helm values change that makes a vLLM flag change survive the next ``helm upgrade`` (pure).

Why: a Deployment rendered by a Helm chart is rewritten from the release's values on every upgrade, so a
fix written to the live object lasts only until then. Most charts' value names are their own, so for them
we say which flag must change and how to upgrade keeping the other values; for the vLLM production-stack
chart (vllm-project/production-stack, ``helm/templates/deployment-vllm-multi.yaml``) we know how each
``servingEngineSpec.modelSpec[].vllmConfig`` key renders, so the hint is the exact ``--set`` paths.
"""

from __future__ import annotations

from collections.abc import Mapping

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


def helm_lines(release: str, namespace: str, labels: Mapping[str, str], old: Mapping[str, str],
               new: Mapping[str, str], other: tuple[str, ...] = ()) -> list[str]:
    """The ``helm:`` hint lines under a warning or refusal for a Helm-rendered vLLM Deployment."""
    chart = str(labels.get("helm.sh/chart", "")).rpartition("-")[0] or "<chart>"
    upgrade = f"helm upgrade {release} {chart} -n {namespace} --reuse-values"
    if is_production_stack(labels):
        model = labels.get("model", "<name>")
        sets = stack_sets("servingEngineSpec.modelSpec[<i>]", old, new)
        out = [f"helm: {upgrade} {' '.join(sets)}"] if sets else []
        out += [f"helm: <i> is the index of the servingEngineSpec.modelSpec entry with name: {model}"] if sets else []
    else:
        changes = [f"--{k} {'unset' if new.get(k) is None else new[k]}" for k in sorted(set(old) | set(new))
                   if old.get(k) != new.get(k)]
        out = [f"helm: set the values of release {namespace}/{release} that render {', '.join(changes)}, then "
               f"{upgrade} -f <those values>"] if changes else []
    out += [f"helm: also change {o}" for o in other]
    return out
