"""What the budget planner is asked: the running start, the policy and what the failed start showed.

Moved out of ``planner`` so that the modules the planner reads (``lever_notes``, ``policy_gpu``) name the request
without importing the planner itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from vllm_remedy.policy import Policy
from vllm_remedy.remedies.budget.observed import KvObservation
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.memory.settings import split_run, tp_split_problem
from vllm_remedy.vllm.outcomes import Failure


@dataclass(frozen=True)
class BudgetRequest:
    """Everything the planner looks at. ``settings`` are the running ones (``other_process_gib`` included);
    ``failure`` is what the log classifier saw; ``logged_kv_tokens`` the KV size that log printed, if any;
    ``observed`` everything it showed of the KV cache (memory, vLLM's estimated maximum length), which wins."""

    model: ModelSpec
    gpu: GpuSpec
    settings: EngineSettings
    policy: Policy | None = None
    failure: Failure | None = None
    target_concurrency: float | None = None
    node_gpus: int | None = None
    logged_kv_tokens: int | None = None
    observed: KvObservation | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    gpu_label: str | None = None  # the label value the pod is pinned to now, if any
    #: pods one engine spans (a LeaderWorkerSet group's size, its TP × PP counted as ``tp``): the policy's GPUs per pod
    #: bound the running size that many times over
    engine_pods: int = 1

    @cached_property
    def tp_refused(self) -> str | None:
        """vLLM's refusal of the running TP size (``tp_split_problem``), asked once a plan: ``_base``, the problems and
        each step's reason read it."""
        return tp_split_problem(self.model, self.settings.tp, split_run(self.model, self.gpu, self.settings))
