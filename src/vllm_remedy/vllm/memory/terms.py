"""The terms of vLLM's startup memory budget, each as a small formula of model, GPU and settings.

Exact terms (KV bytes per token, blocks) follow vLLM's code. The profiled terms (activation peak,
non-torch memory, CUDA context, graph pool) cannot be computed from first principles; they are
fits to real startup logs (tests/data/calibration), rounded so the estimate errs toward LESS KV
cache. Every constant names the evidence it was fitted on.
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, GpuSpec, ModelSpec
from vllm_remedy.vllm.memory.settings import Resolved

# Weights: logged "Model loading took" is params x bytes / TP plus 0.01-0.09 GiB of buffers (rotary
# caches, padding) across the calibration logs; 0.10 covers them all.
WEIGHT_BUFFERS_GIB = 0.10
# 4-bit checkpoints carry group scales / zero points (group 128, fp16): ~6 % on top of the packed weights.
INT4_SCALE_OVERHEAD = 1.06

# V1 activation peak = the sampler warm-up on min(max_num_seqs, mnbt) dummy requests (logits, probs,
# top-k/top-p sort buffers: 14.3 B per vocab entry fitted on 13 models at 0.19.0, rounded up) plus a
# forward-pass remainder growing with hidden size (0.08-0.24 GiB observed).
V1_SAMPLER_BYTES_PER_LOGIT = 14.5
# Up to 0.16 the warm-up sorts the whole vocab: Qwen3-14B on H100 peaked at 5.64 GiB on 0.15/0.16 and
# 2.23 GiB on 0.17/0.18 with everything else equal (llm-d-planner version sweep) -> 37.6 B per logit,
# rounded up.
V1_SORT_SAMPLER_BYTES_PER_LOGIT = 38.0
V1_FORWARD_BASE_GIB = 0.09
V1_FORWARD_BYTES_PER_TOKEN_HIDDEN = 1.25  # x dtype bytes
FLOAT32_EXTRA_GIB = 0.2  # float32 runs peaked 0.3 GiB above bf16 (Llama-3.1-8B, 0.19.0)
# V0 activation = one prefill of mnbt tokens: gate/up + activation + residual copies, 3 x (I/TP + H)
# values per token (matches 0.103 GiB per 1k tokens for Llama-3.1-8B on 0.6.4 exactly), or the
# sampler over max_num_seqs logits, whichever is larger.
V0_FORWARD_VALUES_PER_TOKEN = 3
V0_SAMPLER_BYTES_PER_LOGIT = 5.0
V0_ACTIVATION_BASE_GIB = 0.02
# MoE: routed tokens x top-k through gate/up, with sort/permute buffers (Mixtral 8x7B, 0.19.0).
MOE_FACTOR = 2.0
MOE_BASE_GIB = 0.1

# CUDA context (+ cuBLAS workspace) per process: 0.51 GiB on H100 (llm-d logs), 0.35 GiB on RTX 3090
# (vllm#10517). NCCL + custom all-reduce add ~1.0 GiB per rank at TP >= 2 before vLLM's snapshot.
CONTEXT_BIG_GPU_GIB = 0.51
CONTEXT_SMALL_GPU_GIB = 0.37
NCCL_INIT_GIB = 1.03


def context_gib(gpu: GpuSpec, tp: int) -> float:
    """Memory the process holds before loading weights (CUDA context, NCCL at TP >= 2)."""
    base = CONTEXT_BIG_GPU_GIB if gpu.total_gib >= 70 else CONTEXT_SMALL_GPU_GIB
    return base + (NCCL_INIT_GIB if tp >= 2 else 0.0)


def weight_bits(model: ModelSpec, quantization: str | None, dtype_bytes: int) -> int:
    """Bits per stored weight: the checkpoint's quantization, else online ``--quantization fp8``, else dtype."""
    if model.quantization and model.weight_bits < 16:
        return model.weight_bits
    if quantization in ("fp8", "fbgemm_fp8", "ptpc_fp8", "modelopt"):
        return 8
    if quantization in ("bitsandbytes",):
        return 4
    return 8 * dtype_bytes


def weights_gib(model: ModelSpec, res: Resolved, quantization: str | None) -> float:
    """Per-rank weight memory: embeddings stay 16-bit in quantized checkpoints, the rest is packed."""
    bits = weight_bits(model, quantization, res.weight_dtype_bytes)
    params = model.params_b * 1e9
    if bits >= 16:
        total = params * bits / 8
    else:
        embed = model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2)
        body = (params - embed) * bits / 8 * (INT4_SCALE_OVERHEAD if bits <= 4 else 1.0)
        total = embed * 2 + body
    return total / res.tp / GIB + WEIGHT_BUFFERS_GIB


def _moe_gib(model: ModelSpec, res: Resolved) -> float:
    if not model.is_moe:
        return 0.0
    inter = model.moe_intermediate_size or model.intermediate_size
    routed = res.mnbt * max(1, model.experts_per_token) * 2 * inter / res.tp * res.weight_dtype_bytes
    return routed * MOE_FACTOR / GIB + MOE_BASE_GIB


def activation_gib(model: ModelSpec, res: Resolved) -> float:
    """Peak PyTorch memory of the profile run above the weights."""
    dt = res.weight_dtype_bytes
    if res.rules.engine == "V1":
        reqs = min(res.max_num_seqs, res.mnbt)
        per_logit = V1_SORT_SAMPLER_BYTES_PER_LOGIT if res.rules.sampler_sorts else V1_SAMPLER_BYTES_PER_LOGIT
        sampler = reqs * model.vocab_size * per_logit
        forward = res.mnbt * model.hidden_size * V1_FORWARD_BYTES_PER_TOKEN_HIDDEN * dt
        extra = FLOAT32_EXTRA_GIB if dt == 4 else 0.0
        return (sampler + forward) / GIB + V1_FORWARD_BASE_GIB + extra + _moe_gib(model, res)
    per_token = V0_FORWARD_VALUES_PER_TOKEN * (model.intermediate_size / res.tp + model.hidden_size) * dt
    forward = res.mnbt * per_token
    sampler = min(res.max_num_seqs, res.mnbt) * model.vocab_size * V0_SAMPLER_BYTES_PER_LOGIT
    return max(forward, sampler) / GIB + V0_ACTIVATION_BASE_GIB + _moe_gib(model, res)


def non_torch_gib(gpu: GpuSpec, res: Resolved) -> float:
    """Memory outside PyTorch's allocator that vLLM charges to the budget.

    "increase" budgets count only what grows during profiling: 0.24-0.27 GiB at TP=1 (0.19.0), but
    2.06-2.21 GiB per rank at TP >= 2 from 0.11 on (custom all-reduce buffers; llm-d 0.19.0 logs), <= 0.6
    in 0.9-0.10 (notes), 1.6 GiB on V0 0.7 (vllm#13061 rank 0, fitted). "absolute" budgets also
    count the CUDA context and NCCL, which are already in the device's used memory.
    """
    r = res.rules
    tp2 = res.tp >= 2
    if r.budget == "absolute":
        return context_gib(gpu, res.tp) + (0.6 if tp2 else 0.0)
    if r.engine == "V0":
        return 1.6 if tp2 else 0.25
    if not tp2:
        return 0.27
    if r.version < (0, 11, 0):
        return 0.6
    return 2.12 if res.tp == 2 else 2.22


def cudagraph_gib(model: ModelSpec, res: Resolved) -> float:
    """CUDA-graph pool: 0.65-1.85 GiB observed (0.19.0), growing with depth; none with --enforce-eager."""
    if res.enforce_eager:
        return 0.0
    return 0.5 + 0.0145 * model.num_layers


def kv_bytes_per_token(model: ModelSpec, res: Resolved) -> int:
    """Per-rank KV bytes for one token across all layers (exact, as vLLM allocates them)."""
    if model.is_mla:
        return model.num_layers * ((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)) * res.kv_dtype_bytes
    heads = max(1, model.num_kv_heads // res.tp)
    return model.num_layers * 2 * heads * model.head_dim * res.kv_dtype_bytes
