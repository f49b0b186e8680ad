"""The vLLM container simulator: pods start, crash-loop or OOM exactly as the memory model says vLLM would.

``install(cluster)`` switches a Cluster to it; scenario annotation keys are in ``keys``.
"""

from vllm_remedy.sim.vllm_pod.keys import GPU_USED_GIB, LOAD, OOM_KILLED
from vllm_remedy.sim.vllm_pod.runtime import VllmRuntime, install

__all__ = ["GPU_USED_GIB", "LOAD", "OOM_KILLED", "VllmRuntime", "install"]
