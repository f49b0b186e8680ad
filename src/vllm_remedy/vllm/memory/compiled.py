"""The memory settings ``--compilation-config`` / ``-O`` / ``--optimization-level`` carry: CUDA graphs off, nothing
compiled, or the capture sizes the config sets (``cmdline.compilation`` reads them per release).

Kept out of ``settings`` so that ``EngineSettings.from_flags`` stays the list of flags that move the budget. Whether
the start runs V1 (where these apply) is ``resolve``'s business, not the flags'.
"""

from __future__ import annotations

from collections.abc import Mapping

from vllm_remedy.vllm.cmdline import compilation
from vllm_remedy.vllm.memory.config_values import optimization_refusal
from vllm_remedy.vllm.versions import rules

#: Flag keys that carry a compilation config (``-O...`` is ``optimization-level`` in the argv reading).
KEYS = ("compilation-config", "optimization-level")


def compilation_settings(flags: Mapping[str, str], version: str | None) -> dict[str, object]:
    """``EngineSettings`` keyword arguments from the compilation flags in ``flags`` (canonical keys), empty when there
    are none. The config's capture sizes win over a capture-size flag (0.9-0.11.0: ``init_with_cudagraph_sizes`` keeps
    the user's config sizes; from 0.11.1 the two together are refused as mutually exclusive, engine/arg_utils.py)."""
    if not any(k in flags or k.startswith(("compilation-config.", "cc.")) for k in (*KEYS, *flags)):
        return {}
    if (refused := optimization_refusal(flags, rules(version).version, rules(version).label)) is not None:
        raise refused  # VllmConfig refuses the level (``config_values``)
    read = compilation.read(flags, rules(version).version)
    out: dict[str, object] = {}
    if read.graphs_off:
        out["cudagraphs_off"] = True
    if read.compile_off:
        out["compile_off"] = True
    if read.sizes_set:
        out["capture_sizes_in_config"] = True
        if read.max_capture is not None:
            out["cudagraph_capture_size"] = read.max_capture
    return out
