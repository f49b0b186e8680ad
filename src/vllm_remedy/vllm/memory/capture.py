"""Which batch sizes vLLM captures as CUDA graphs, and how the graph pool shrinks when fewer are captured.

The pool (``terms.cudagraph_gib``) was fitted on starts at the version's default sizes. Graphs are captured
largest first into one shared pool, so the pool is mostly the largest batch's buffers plus a per-graph part
that does not shrink with the batch. No public log pairs two capture sizes with everything else equal
(vllm#17201 reports "1-2 GiB" saved at 128 instead of 512 on large models), so the shrinking half is an
assumption chosen to err toward MORE graph memory: only ``1 - FIXED_SHARE`` of the pool scales with the size.

V0 (0.5.5-0.10.x) captures one graph per size of its own list, bounded by ``max_num_seqs`` (``v0_capture_sizes``),
and no capture-size flag of V1 reaches it. Derived from source: which sizes a start captures (how many graphs, the
largest batch). Not derived: the pool per graph and per batch row (the V0 logs read give one "took" figure per start,
all at the default 256); the charged pool (``terms.cudagraph_gib``) stands at the default 256 and only
``1 - FIXED_SHARE`` of it scales with the largest size, as for V1. ``max_seq_len_to_capture`` sizes only the capture's
block table (largest batch x blocks of that length x 4 bytes, freed after the capture: 2 MiB at 256 x 32,768 tokens,
attention/backends/utils.py@0.6.3 ``CommonAttentionState.graph_capture``), which is not charged.
"""

from __future__ import annotations

from vllm_remedy.vllm.memory.flag_values import CAPTURE_FLAGS_SINCE
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.versions import VersionRules

#: The largest batch captured by default; from 0.11.1 also at most twice max-num-seqs (vllm#26016).
DEFAULT_MAX_CAPTURE = 512
TWICE_SEQS_SINCE = (0, 11, 1)
#: Share of the fitted pool that does not shrink with the largest captured size (see the module docstring).
FIXED_SHARE = 0.5
#: The smallest largest-size the planner proposes: below 8 even a handful of decoding requests runs eager.
MIN_CAPTURE = 8
#: V0's capture list: 1, 2, 4, then steps of 8 (worker/model_runner.py@0.5.5-0.6.4 ``_BATCH_SIZES_TO_CAPTURE``, up to
#: 256; config.py@0.6.5-0.9.2 and config/__init__.py@0.10.0-0.10.2 ``_set_cudagraph_sizes``' V0 branch, up to 8 x 1024).
V0_STEP = 8
V0_LIST_MAX = 256
V0_CONFIG_LIST_SINCE = (0, 6, 5)
V0_CONFIG_LIST_MAX = 8 * 1024
#: The largest size V0 captures at its default max_num_seqs (256), where the charged pool stands.
V0_DEFAULT_CAPTURE = 256


def capture_flag(r: VersionRules) -> str | None:
    """The flag this release takes for the largest captured size: ``max-cudagraph-capture-size`` (0.11.1+),
    ``cuda-graph-sizes`` (0.9.0-0.11.0), None before (only ``--compilation-config`` sets it) and on V0, whose branch of
    ``_set_cudagraph_sizes`` reads max_num_seqs, not --cuda-graph-sizes (config.py@0.9.0-0.9.2,
    config/__init__.py@0.10.0-0.10.2): there --max-num-seqs bounds the sizes (``v0_size_flags``)."""
    if r.engine == "V0":
        return None
    if r.version >= CAPTURE_FLAGS_SINCE["max-cudagraph-capture-size"]:
        return "max-cudagraph-capture-size"
    if r.version >= CAPTURE_FLAGS_SINCE["cuda-graph-sizes"]:
        return "cuda-graph-sizes"
    return None


def v0_capture_sizes(version: tuple[int, int, int], max_num_seqs: int) -> list[int]:
    """The batch sizes V0 captures, ascending. 0.5.5-0.6.4: the list's sizes up to max_num_seqs padded by
    ``_get_graph_batch_size`` (itself up to 2, 4 up to 4, else the next multiple of 8), 256 at most
    (worker/model_runner.py@0.5.5 ``capture_model``; ``_get_max_graph_batch_size``@0.6.0-0.6.4). From 0.6.5 the
    smallest listed size at or above max_num_seqs bounds them, up to 8,192 (``_set_cudagraph_sizes``@0.6.5-0.10.2; its
    sequence-parallelism filter at TP > 1, a pass config option off by default, is not read)."""
    top = V0_CONFIG_LIST_MAX if version >= V0_CONFIG_LIST_SINCE else V0_LIST_MAX
    listed = [1, 2, 4, *range(V0_STEP, top + 1, V0_STEP)]
    if version < V0_CONFIG_LIST_SINCE:
        padded = max_num_seqs if max_num_seqs <= 2 else 4 if max_num_seqs <= 4 else -(-max_num_seqs // 8) * 8
        return [b for b in listed if b <= padded]
    bound = next((b for b in listed if b >= max_num_seqs), listed[-1])
    return [b for b in listed if b <= bound]


def v0_size_flags(r: VersionRules) -> str:
    """What sets V0's capture sizes in this release, for the planner's note: --max-num-seqs alone before 0.6.5
    (engine/arg_utils.py@0.5.5-0.6.4 has no --compilation-config), from 0.6.5 also --compilation-config's
    cudagraph_capture_sizes (engine/arg_utils.py@0.6.5 adds the flag; ``init_with_cudagraph_sizes`` takes them)."""
    if r.version < V0_CONFIG_LIST_SINCE:
        return f"vLLM {r.label} (V0) captures CUDA graphs up to --max-num-seqs, the only flag that sets their sizes " \
               "(it has no --compilation-config)"
    return f"vLLM {r.label} (V0) captures CUDA graphs up to --max-num-seqs, or at --compilation-config's " \
           "cudagraph_capture_sizes (which the planner does not write; its V1 capture-size flags do not reach V0)"


def default_capture(res: Resolved) -> int:
    """The largest size this version captures when no flag says otherwise."""
    if res.rules.engine == "V0":
        return v0_capture_sizes(res.rules.version, res.max_num_seqs)[-1]
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
    """The graph pool relative to the fitted one: 1.0 at the default sizes; on V0 relative to the sizes its default
    max_num_seqs (256) captures, which is where the charged pool stands (the module docstring)."""
    if res.rules.engine == "V0":
        return FIXED_SHARE + (1 - FIXED_SHARE) * largest_capture(res) / V0_DEFAULT_CAPTURE
    if res.capture_size is None:
        return 1.0
    return FIXED_SHARE + (1 - FIXED_SHARE) * res.capture_size / default_capture(res)
