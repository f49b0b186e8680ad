"""vLLM's startup memory model: ``estimate(model, gpu, settings) -> Estimate``.

Split in three: ``settings`` (flags and the version's defaults), ``terms`` (one formula per budget
term, fitted constants documented there) and ``core`` (the budget, blocks and outcome).
"""

from vllm_remedy.vllm.memory.core import Estimate, estimate
from vllm_remedy.vllm.memory.settings import EngineSettings, Resolved, resolve

__all__ = ["EngineSettings", "Estimate", "Resolved", "estimate", "resolve"]
