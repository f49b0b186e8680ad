"""The policy's utilization bounds applied to a flag the manifest leaves unset: the release's own default.

``policy.check_flags`` judges the flags written in argv; vLLM runs with ``--gpu-memory-utilization`` at its
release's default when it is absent (0.9, 0.92 from 0.20, 1.0 from 0.34 with the extensible KV cache). The
planner bounds that effective value (``remedies/budget/planner._base``), so ``check`` must too, or a 0.34
manifest passes ``check`` while ``plan`` on the same file and policy rejects it.
"""

from __future__ import annotations

from vllm_remedy.drift.checks import DRIFT, PASS, Check
from vllm_remedy.policy import Policy
from vllm_remedy.policy.flags import FractionBounds
from vllm_remedy.vllm.cmdline import ServerCommand, canonical_key
from vllm_remedy.vllm.memory import EngineSettings

FLAG = "gpu-memory-utilization"


def check_default_utilization(policy: Policy, server: ServerCommand, settings: EngineSettings | None) -> Check:
    """flag-bounds for an unset utilization: DRIFT when the release's default lies outside the policy's bounds."""
    bounds = policy.flag_bounds(FLAG)
    if any(canonical_key(k) == FLAG for k in server.flags) or settings is None or not isinstance(
            bounds, FractionBounds):
        return Check("flag-bounds", PASS, f"{FLAG} set, or unbounded, or not known")
    value = settings.gpu_memory_utilization
    if bounds.contains(value):
        return Check("flag-bounds", PASS, f"{FLAG} unset: the release's default {value:g} is within bounds")
    release = f"vLLM {settings.version}" if settings.version else "the newest vLLM release (the image names none)"
    return Check("flag-bounds", DRIFT, f"--{FLAG} is not set: {release} runs it at its default {value:g}; expected "
                 f"{bounds.describe()} (the policy bounds the effective value); set it explicitly")
