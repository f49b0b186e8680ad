"""Which batch sizes vLLM captures as CUDA graphs, and how the graph pool shrinks when fewer are captured.

The pool (``terms.cudagraph_gib``) was fitted on starts at the version's default sizes. Graphs are captured
largest first into one shared pool, so the pool is mostly the largest batch's buffers plus a per-graph part
that does not shrink with the batch. No public log pairs two capture sizes with everything else equal
(vllm#17201 reports "1-2 GiB" saved at 128 instead of 512 on large models), so the shrinking half is an
assumption chosen to err toward MORE graph memory: only ``1 - FIXED_SHARE`` of the pool scales with the size.
"""

from __future__ import annotations

from vllm_remedy.vllm.memory.flag_values import CAPTURE_FLAGS_SINCE
from vllm_remedy.vllm.memory.settings import Resolved
from vllm_remedy.vllm.versions import VersionRules

#: The largest batch captured by default; from 0.11.1 also at most twice max-num-seqs (vllm#26016).
DEFAULT_MAX_CAPTURE = 512
TWICE_SEQS_SINCE = (0, 11, 1)
#: Share of the fitted pool that does not shrink with the largest captured size (see the module docstring).
FIXED_SHARE = 0.5
#: The smallest largest-size the planner proposes: below 8 even a handful of decoding requests runs eager.
MIN_CAPTURE = 8


def capture_flag(r: VersionRules) -> str | None:
    """The flag this release takes for the largest captured size: ``max-cudagraph-capture-size`` (0.11.1+),
    ``cuda-graph-sizes`` (0.9.0-0.11.0), None before (only ``--compilation-config`` sets it)."""
    if r.version >= CAPTURE_FLAGS_SINCE["max-cudagraph-capture-size"]:
        return "max-cudagraph-capture-size"
    if r.version >= CAPTURE_FLAGS_SINCE["cuda-graph-sizes"]:
        return "cuda-graph-sizes"
    return None


def default_capture(res: Resolved) -> int:
    """The largest size this version captures when no flag says otherwise."""
    if res.rules.version >= TWICE_SEQS_SINCE:
        return min(DEFAULT_MAX_CAPTURE, 2 * res.max_num_seqs)
    return DEFAULT_MAX_CAPTURE


def largest_capture(res: Resolved) -> int:
    """The largest captured batch size the start will use."""
    return res.capture_size if res.capture_size is not None else default_capture(res)


def default_sizes_scale(res: Resolved) -> float:
    """Model Runner V2's in-budget graph estimate relative to the one fitted (the T4 0.30.0 start, at the default
    largest size 512) when this start's DEFAULT sizes are smaller. From 0.29 the estimate captures the graphs the
    start will capture (v1/worker/gpu/cudagraph_utils.py@0.29.0 ``profile_cudagraph_memory`` runs ``capture_model``
    over the manager's capture descriptors), whose largest size defaults to min(2 x max_num_seqs, 512), then capped
    by max-num-batched-tokens (config/vllm.py@0.29.0, same through 0.33.0): fewer and smaller graphs. How much of the
    estimate shrinks is not in source; ``FIXED_SHARE`` is kept (it errs toward more graph memory). 1.0 when a flag
    sets the size, which ``pool_scale`` scales instead."""
    if res.capture_size is not None:
        return 1.0
    largest = min(default_capture(res), res.mnbt, DEFAULT_MAX_CAPTURE)
    return FIXED_SHARE + (1 - FIXED_SHARE) * largest / DEFAULT_MAX_CAPTURE


def pool_scale(res: Resolved) -> float:
    """The graph pool relative to the fitted one: 1.0 at the default sizes."""
    if res.capture_size is None:
        return 1.0
    return FIXED_SHARE + (1 - FIXED_SHARE) * res.capture_size / default_capture(res)
