"""The shape every remedy returns: a :class:`Plan` holding an ordered ladder of :class:`Step` changes.

Remedies are pure (observed state + policy → Plan); operations turn a chosen Step into a patch. A Step is
self-contained — apply it alone to the current Deployment and you get its ``prediction`` — so an operator
(or an operation) can pick any rung, not only the first, without replaying the ones above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from vllm_remedy.vllm.memory import Estimate
from vllm_remedy.vllm.outcomes import sized_json

API_VERSION = "vllm-remedy.io/v1alpha1"


@dataclass(frozen=True)
class TemplateChange:
    """Pod-template edits outside the vLLM command line (what pins the GPU and how many the pod gets).

    ``node_selector`` keys are set, ``drop_node_selector`` keys removed (a conflicting pin with another label
    scheme); ``gpu_limit`` is ``resources.limits[gpu_resource]`` of the vLLM container (None: unchanged).
    """

    node_selector: Mapping[str, str] = field(default_factory=dict)
    drop_node_selector: tuple[str, ...] = ()
    gpu_limit: int | None = None
    gpu_resource: str = "nvidia.com/gpu"

    @property
    def empty(self) -> bool:
        """No template edit; with no flags either, the planner reads its first rung as "no change needed"."""
        return not self.node_selector and not self.drop_node_selector and self.gpu_limit is None

    def to_json(self) -> dict[str, Any]:
        """The edits under their Kubernetes field names, unchanged parts left out."""
        out: dict[str, Any] = {}
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.drop_node_selector:
            out["dropNodeSelector"] = list(self.drop_node_selector)
        if self.gpu_limit is not None:
            out["resources"] = {"limits": {self.gpu_resource: self.gpu_limit}}
        return out

    def describe(self) -> list[str]:
        """One phrase per edit (``nodeSelector k=v``, ``limits nvidia.com/gpu: 2``) for ``Step.describe``."""
        parts = [f"nodeSelector {k}={v}" for k, v in self.node_selector.items()]
        parts += [f"drop nodeSelector {k}" for k in self.drop_node_selector]
        if self.gpu_limit is not None:
            parts.append(f"limits {self.gpu_resource}: {self.gpu_limit}")
        return parts


@dataclass(frozen=True)
class Step:
    """One candidate change: flags to set/unset, template edits, why, and what vLLM is predicted to do.

    ``set`` uses canonical dash names without ``--`` (the cmdline layer's spelling) and string values ready
    for ``ServerCommand.edit``. ``temporary`` steps must revert after ``revert_after`` (an enforce-eager toggle).
    """

    rank: int
    lever: str
    reason: str
    prediction: Estimate
    set: Mapping[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    template: TemplateChange = field(default_factory=TemplateChange)
    temporary: bool = False
    revert_after: timedelta | None = None
    gpu: str | None = None  # the GPU product the prediction is for (differs from the plan's when swapped)
    drop: tuple[str, ...] = ()  # bare words argparse leaves over, as written: the edit removes them (edit(drop=...))

    def describe(self) -> str:
        """``--max-model-len 16384 --gpu-memory-utilization 0.93 nodeSelector ...`` for tables and logs; a removed
        stray word is named (``remove the word stray``), so a step that only removes one never reads ``(no change)``
        beside a diff that removes it."""
        parts = [f"--{k} {v}" if v != "true" else f"--{k}" for k, v in self.set.items()]
        parts += [f"unset --{k}" for k in self.unset]
        parts += self.template.describe()
        parts += [f"remove the word {w}" for w in self.drop]
        return " ".join(parts) or "(no change)"

    def to_json(self) -> dict[str, Any]:
        """The step for ``plan -o json``: canonical flag names and ``revertAfterSeconds`` for a temporary toggle."""
        return {
            "rank": self.rank,
            "lever": self.lever,
            "set": dict(self.set),
            "unset": list(self.unset),
            "template": self.template.to_json(),
            "reason": self.reason,
            "temporary": self.temporary,
            "revertAfterSeconds": int(self.revert_after.total_seconds()) if self.revert_after else None,
            "gpu": self.gpu,
            "drop": list(self.drop),
            "prediction": self.prediction.to_json(),
        }


@dataclass(frozen=True)
class Plan:
    """A remedy's answer: the problem seen, the current prediction, and the ladder (smallest change first).

    ``verdict``: ``no_change_needed``, ``change`` (steps non-empty), ``no_fitting_change`` (nothing predicted
    to work within policy), ``outside_gpu_budget`` (the failure is not one a GPU budget change fixes) or
    ``refused_as_written`` (vLLM stops the command as written and only its notes' advice fixes it, not a flag).
    """

    kind: str
    verdict: str
    problem: str
    current: Estimate
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()
    subject: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``plan -o json`` document, versioned by ``apiVersion`` so scripts can rely on its shape."""
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "subject": dict(self.subject),
            "verdict": self.verdict,
            "problem": self.problem,
            "current": sized_json(self.current),  # a start refused at config time has no KV figures
            "steps": [s.to_json() for s in self.steps],
            "notes": list(self.notes),
        }
