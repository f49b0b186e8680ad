"""What an AWQ checkpoint's load leaves in PyTorch's allocator beyond its tensors, on vLLM's Marlin path (0.26-0.29).

Post hoc: written while looking for the RTX 5090 0.28.0 Qwen3-AWQ starts' unexplained consumed memory (their
``known_over``); the sequence is read from source, the allocator replayed (``alloc_sim``), nothing fitted.

Source (vLLM 0.28.0 wheel; ``_convert_awq_to_standard_format``, ``AutoAWQMarlinLinearMethod`` and
``MarlinLinearKernel.process_weights_after_loading`` are the same at 0.26.0, 0.27.1 and 0.29.0, apart from reload
bookkeeping; 0.30.0 was not read and 0.31.0 differs):

* The method: ``AutoAWQConfig.get_quant_method`` (layers/quantization/auto_awq.py) takes Marlin on CUDA, where
  ``choose_mp_linear_kernel`` (kernels/linear/__init__.py) picks ``MarlinLinearKernel`` for a zero-point uint4 layer
  on any card but capability 9.0 (CUTLASS W4A8 and Machete ask for exactly 9.0; AllSpark refuses zero points). The
  RTX 4090 0.29.0 log says "Using MarlinLinearKernel for AutoAWQMarlinLinearMethod".
* Construction (``create_weights``), under ``_scoped_allocator_max_split(20)`` like all of ``Worker.load_model``
  (v1/worker/gpu_worker.py): per linear int32 ``qweight`` [K, N/8], int32 ``qzeros`` [K/g, N/8], ``scales`` [K/g, N];
  module order qkv, o, (rotary cos/sin cache once: rotary_embedding/base.py, float32 [max_pos, dim/2] freqs, cos, sin,
  their [max_pos, dim] concatenation, cast to the model dtype), attention's six 4-byte scale tensors
  (attention.py ``set_default_quant_scales``, created on the device), q/k norms, gate_up, down, the two layer norms.
* Loading: ``copy_`` of a host tensor into a narrowed, non-contiguous shard (q/k/v and gate/up columns) goes through
  a contiguous device temporary (ATen native/cuda/Copy.cu ``copy_requires_temporaries`` branch).
* ``process_weights_after_loading`` per linear (model_loader/utils.py): the AWQ-to-standard conversion's K x N int32
  temporaries and the new qweight/qzeros; Marlin's workspace (one int32 per SM), zero points unpacked on the host and
  copied back [K/g, N] int32, permuted twice, packed to [K/g, N/8]; ``gptq_marlin_repack`` into a new qweight; scales
  permuted into a new tensor (marlin_utils.py ``marlin_permute_scales``). Each replaced tensor is freed as its last
  reference goes (Python frees a frame's locals in order). Attention then recreates its two host scales on the CPU.

Checked, not fitted: the replay's allocated bytes give 5.706 GiB for Qwen3-8B-AWQ (RTX 4090 0.29.0 logs "Model
loading took 5.71 GiB"), 9.437 for Qwen3-14B-AWQ (the L40S 0.28.0 write-up: 9.44) and 5.293 for Qwen2.5-7B-AWQ (RTX
4080 0.26.0: 5.29); its free rests (0.016 GiB for the 8B) match that log's consumed memory exceeding the load by
0.03 GiB more than its bf16 twin's does (0.14 against 0.11, within the logs' 0.01 rounding).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory.alloc_pools import Recorder, Trace
from vllm_remedy.vllm.memory.alloc_sim import MIB

# Releases whose AWQ Marlin path was read and found identical (see the docstring).
AWQ_MARLIN_SEQUENCE_SINCE = (0, 26, 0)
AWQ_MARLIN_SEQUENCE_UNTIL = (0, 30, 0)
# From 0.27.0 the budget charges the drop in free device memory (utils/mem_utils.py ``total_consumed``): free rests in
# segments a live block holds count; before, "Model loading took" (``max_memory_allocated``) counted only blocks.
CONSUMED_BUDGET_SINCE = (0, 27, 0)
LOAD_MAX_SPLIT = 20 * MIB
# What the replayed sequence is for, in the disk memo's key beside the code's digest.
RELEASE_RULE = (*AWQ_MARLIN_SEQUENCE_SINCE, *AWQ_MARLIN_SEQUENCE_UNTIL, LOAD_MAX_SPLIT)
# ``--quantization`` values AutoAWQConfig.override_quantization_method turns into auto_awq for an AWQ checkpoint.
AWQ_USER_QUANT = frozenset({"awq", "awq_marlin", "auto_awq", "marlin"})
# Marlin's workspace is one int32 per SM (marlin_utils.py ``marlin_make_workspace_new``): 512 B blocks up to 128 SMs,
# 1 KiB up to 256; the catalog has no SM count, so the larger (less KV) is taken.
WORKSPACE_BYTES = 1024
ATTN_DEVICE_SCALES = 6  # _k/_v/_q/_prob_scale buffers and _k/_v_scale_cpu, made under the device context
ATTN_CPU_SCALES = 2  # _k/_v_scale_cpu, recreated on the host by Attention.process_weights_after_loading
# Decoders built of exactly these modules (qkv, o, gate_up, down, rotary, attention, norms): models/qwen2.py,
# qwen3.py, llama.py (Mistral maps to Llama's classes). Qwen2 builds qkv_proj with bias=True; Qwen3 adds q/k norms.
DENSE_ARCHITECTURES = frozenset({"Qwen2ForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"})
QKV_BIAS_ARCHITECTURES = frozenset({"Qwen2ForCausalLM"})
QK_NORM_ARCHITECTURES = frozenset({"Qwen3ForCausalLM"})


def applies(model: ModelSpec, quantization: str | None, capability: tuple[int, int] | None,
            version: tuple[int, int, int], tp: int) -> bool:
    """Whether a start loads a dense 4-bit zero-point AWQ checkpoint through Marlin in a release whose sequence was
    read, for the decoders whose module list is replayed (others are left to ``alloc_tail``)."""
    return (model.quantization == "awq" and model.weight_bits == 4 and model.zero_points
            and model.group_size is not None and model.group_size > 0
            and model.architecture in DENSE_ARCHITECTURES and not model.is_moe and model.vision_params_b == 0
            and (quantization is None or quantization in AWQ_USER_QUANT)
            and capability is not None and capability >= (7, 5) and capability != (9, 0)
            and AWQ_MARLIN_SEQUENCE_SINCE <= version < AWQ_MARLIN_SEQUENCE_UNTIL
            and _shapes(model, tp) is not None)


class ReplayInputs(NamedTuple):
    """Everything the replay reads: equal inputs, equal bytes (``awq_marlin_table`` is keyed by them)."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    group: int
    layers: int
    vocab: int
    max_pos: int
    tied: bool
    qkv_bias: bool
    qk_norm: bool
    tp: int
    dtype_bytes: int


def replay_inputs(model: ModelSpec, tp: int, dtype_bytes: int) -> ReplayInputs:
    return ReplayInputs(model.hidden_size, model.num_heads, model.num_kv_heads, model.head_dim,
                        model.intermediate_size, model.group_size or 0, model.num_layers, model.vocab_size,
                        model.max_model_len, model.tie_word_embeddings, model.architecture in QKV_BIAS_ARCHITECTURES,
                        model.architecture in QK_NORM_ARCHITECTURES, tp, dtype_bytes)


def _shapes(model: ModelSpec, tp: int) -> tuple[tuple[str, int, int], ...] | None:
    return _linear_shapes(replay_inputs(model, tp, 0))


def _linear_shapes(m: ReplayInputs) -> tuple[tuple[str, int, int], ...] | None:
    """Per-rank (name, K, N) of qkv, o, gate_up, down; None where a dimension does not divide into groups/packs."""
    q = m.heads * m.head_dim // m.tp
    kv = max(1, m.kv_heads // m.tp) * m.head_dim
    inter = m.intermediate // m.tp
    hidden = m.hidden
    shapes = (("qkv", hidden, q + 2 * kv), ("o", q, hidden), ("gate_up", hidden, 2 * inter), ("down", inter, hidden))
    g = m.group
    ok = all(k % g == 0 and k % 8 == 0 and n % 8 == 0 for _, k, n in shapes)
    return shapes if ok else None


def overhead_gib(model: ModelSpec, tp: int, dtype_bytes: int, version: tuple[int, int, int]) -> float:
    """What the budget charges for the load beyond the tensors' bytes: blocks' unsplit rests, and from 0.27 the free
    rests of segments a live block holds. Call only where ``applies``."""
    requested, allocated, reserved = replay(model, tp, dtype_bytes)
    return ((reserved if version >= CONSUMED_BUDGET_SINCE else allocated) - requested) / GIB


def replay(model: ModelSpec, tp: int, dtype_bytes: int) -> tuple[int, int, int]:
    """(requested, allocated, reserved) bytes per rank after loading and ``empty_cache``: the catalog's and popular
    checkpoints from ``awq_marlin_table`` (written by the replay), others replayed once per machine (``replayed``)."""
    from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED  # only where an AWQ load is replayed

    inputs = replay_inputs(model, tp, dtype_bytes)
    return REPLAYED.get(inputs) or replayed(inputs)


@lru_cache(maxsize=64)
def replayed(m: ReplayInputs) -> tuple[int, int, int]:
    """``simulate``'s bytes through the disk memo (``awq_marlin_memo``): a shape outside the table is replayed once
    per machine and code version, then read (~0.2 ms) by every later process."""
    from vllm_remedy.vllm.memory import awq_marlin_memo  # only where an AWQ load is replayed

    return awq_marlin_memo.memoized(m, RELEASE_RULE, lambda: simulate(m))


def warm(model: ModelSpec, tps: tuple[int, ...] = (1, 2, 4, 8), dtype_bytes: int = 2) -> int:
    """Replay (or read from the memo) ``model``'s AWQ Marlin load at each TP it can run at, so that the estimates
    that follow find it in this process: for the layer that resolves a model's config (the I/O belongs there, not
    in an estimate). 16-bit activations, the only ones Marlin takes. How many were not in the table."""
    from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED

    done = 0
    for tp in tps:
        if applies(model, None, (8, 0), AWQ_MARLIN_SEQUENCE_SINCE, tp):
            inputs = replay_inputs(model, tp, dtype_bytes)
            if inputs not in REPLAYED:
                replayed(inputs)
                done += 1
    return done


@lru_cache(maxsize=64)
def simulate(m: ReplayInputs) -> tuple[int, int, int]:
    """The replay itself, cached (a plan estimates the same model many times). Each layer makes the same requests,
    so they are recorded once (layer 0, which also builds the rotary cache, and layer 1 for the others) and replayed
    per pool from compiled templates (``alloc_pools``): the bytes of a replay through ``CachingAllocator`` by key."""
    shapes = _linear_shapes(m)
    assert shapes is not None
    a = Recorder()
    g, hidden, layers, dtype_bytes = m.group, m.hidden, m.layers, m.dtype_bytes
    vocab = -(-m.vocab // 64) * 64 // m.tp
    a.malloc("embed", vocab * hidden * dtype_bytes)
    _construct(a, m, shapes, 0)
    first = a.take()
    _construct(a, m, shapes, 1)
    other = a.take()
    a.malloc("norm", hidden * dtype_bytes)
    if not m.tied:
        a.malloc("lm_head", vocab * hidden * dtype_bytes)
    last = a.take()
    inter, q = shapes[2][2] // 2, shapes[1][1]
    kv = (shapes[0][2] - q) // 2
    # Checkpoint shards copied into narrowed columns (gate, up, k, q, v), each through a temporary freed at once: a
    # layer's pass leaves the allocator as it found it but for the segments it had to add, so once a pass adds none
    # the remaining layers' passes change nothing.
    for n in (inter, inter, kv, q, kv):
        for nbytes in (hidden * n // 2, hidden // g * n // 2, hidden // g * n * dtype_bytes):
            a.drop(a.scratch(nbytes))
    shards = a.take()
    for name, k, n in shapes:
        _process(a, (0, name), k, n, g, dtype_bytes, m.qkv_bias and name == "qkv")
    process = a.take()
    for i in range(ATTN_DEVICE_SCALES - ATTN_CPU_SCALES, ATTN_DEVICE_SCALES):
        a.free((0, "attn", i))  # recreated on the host
    host = a.take()
    trace = Trace(LOAD_MAX_SPLIT)
    templates = ((first, 0), (other, 1), (last, 0), (shards, 0), (process, 0), (host, 0))
    for ops, base in templates:
        trace.declare(ops, base)
    trace.size_for(layers)
    first_ops, other_ops, last_ops, shard_ops, process_ops, host_ops = (trace.compile(*t) for t in templates)
    for pool in (0, 1):  # the small pool, then the large: they share nothing
        trace.run(first_ops[pool], (0,))
        trace.run(other_ops[pool], range(1, layers))
        trace.run(last_ops[pool], (0,))
        trace.probe_until_settled(shard_ops[pool], layers)
        trace.run(process_ops[pool], range(layers))
        trace.run(host_ops[pool], range(layers))
    trace.empty_cache()
    return trace.requested, trace.allocated, trace.reserved


def _construct(a: Recorder, m: ReplayInputs, shapes: tuple[tuple[str, int, int], ...], layer: int) -> None:
    """One decoder layer's ``create_weights`` and buffers, in module order (the rotary cache once, in layer 0)."""
    g, hd, dtype_bytes = m.group, m.head_dim, m.dtype_bytes
    for name, k, n in shapes:
        a.malloc((layer, name, "qweight"), k * n // 2)
        a.malloc((layer, name, "qzeros"), k // g * n // 2)
        a.malloc((layer, name, "scales"), k // g * n * dtype_bytes)
        if name == "qkv" and m.qkv_bias:
            a.malloc((layer, name, "bias"), n * dtype_bytes)
        if name == "o":
            if layer == 0:
                _rotary(a, m.max_pos, hd, dtype_bytes)
            for i in range(ATTN_DEVICE_SCALES):
                a.malloc((layer, "attn", i), 4)
            if m.qk_norm:
                a.malloc((layer, "q_norm"), hd * dtype_bytes)
                a.malloc((layer, "k_norm"), hd * dtype_bytes)
    a.malloc((layer, "ln1"), m.hidden * dtype_bytes)
    a.malloc((layer, "ln2"), m.hidden * dtype_bytes)


def _rotary(a: Recorder, max_pos: int, dim: int, dtype_bytes: int) -> None:
    """RotaryEmbedding._compute_cos_sin_cache then ``cache.to(dtype)`` (rotary_embedding/base.py)."""
    arange = a.scratch(dim // 2 * 4)  # 1.0 / (base ** (arange / dim)): each temporary freed by the next op
    ratio = a.scratch(dim // 2 * 4)
    a.drop(arange)
    power = a.scratch(dim // 2 * 4)
    a.drop(ratio)
    inv_freq = a.scratch(dim // 2 * 4)
    a.drop(power)
    t = a.scratch(max_pos * 4)
    freqs, cos, sin = (a.scratch(max_pos * dim // 2 * 4) for _ in range(3))
    cat = a.scratch(max_pos * dim * 4)
    a.drop(inv_freq, t, freqs, cos, sin)
    a.malloc("rotary", max_pos * dim * dtype_bytes)
    a.drop(cat)


def _process(a: Recorder, key: tuple[int, str], k: int, n: int, g: int, dtype_bytes: int, bias: bool) -> None:
    """One linear's process_weights_after_loading: the AWQ-to-standard conversion, then Marlin's."""
    packed, zp_packed, zp = k * n // 2, k // g * n // 2, k // g * n * 4
    order, shifts = a.scratch(64), a.scratch(32)
    t1, t2 = a.scratch(8 * packed), a.scratch(8 * packed)  # (qw >> shifts), then & mask
    a.drop(t1)
    t3 = a.scratch(8 * packed)  # [:, :, reverse_order]
    a.drop(t2)
    t4 = a.scratch(8 * packed)  # << shifts, summed into the new qweight
    a.malloc((*key, "std_qweight"), packed)
    a.drop(t4)
    z1, z2 = a.scratch(zp), a.scratch(zp)  # the same on the zero points
    a.drop(z1)
    z3 = a.scratch(zp)
    a.drop(z2)
    z4 = a.scratch(zp)  # reshape of the transposed zero points copies
    a.drop(z3)
    z5 = a.scratch(zp)
    a.malloc((*key, "std_qzeros"), zp_packed)
    a.drop(z5, order, shifts)  # then the frame's locals: qw, unpacked, qz, unpacked_zp
    a.free((*key, "qweight"))
    a.drop(t3)
    a.free((*key, "qzeros"))
    a.drop(z4)
    a.malloc((*key, "workspace"), WORKSPACE_BYTES)
    unpacked = a.scratch(zp)  # unpack_cols: host unpack, copied back
    index = a.scratch(512)  # scale_perm list as a device index
    perm = a.scratch(zp)
    a.drop(index)
    index = a.scratch(64)  # interleave array
    inter = a.scratch(zp)
    a.drop(index, perm)
    a.malloc((*key, "marlin_qzeros"), zp_packed)  # pack_cols: host pack, copied back
    a.drop(inter, unpacked)
    a.free((*key, "std_qzeros"))
    a.malloc((*key, "marlin_qweight"), packed)  # gptq_marlin_repack
    a.free((*key, "std_qweight"))
    index = a.scratch(512)
    a.malloc((*key, "marlin_scales"), k // g * n * dtype_bytes)  # marlin_permute_scales
    a.drop(index)
    a.free((*key, "scales"))
    if bias:
        index = a.scratch(256)
        a.malloc((*key, "marlin_bias"), n * dtype_bytes)  # marlin_permute_bias
        a.drop(index)
        a.free((*key, "bias"))
