"""The terms of vLLM's startup memory budget, each as a small formula of model, GPU and settings.

Exact terms (KV bytes per token, blocks) follow vLLM's code. The profiled terms (activation peak,
graph pool) cannot be computed from first principles; they are fits to real startup logs
(tests/data/calibration), rounded so the estimate errs toward LESS KV cache. Every constant names
the evidence it was fitted on. Non-torch memory and the CUDA context are ``non_torch``'s; the weights are
``weights``'s.
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import capture, cublas_pin, mla_release, mxfp4
from vllm_remedy.vllm.memory.encoder import encoder_gib, qwen2_vl_tower_gib
from vllm_remedy.vllm.memory.kv_layout import HYBRID_KV_SINCE as HYBRID_KV_SINCE
from vllm_remedy.vllm.memory.kv_layout import KvLayout as KvLayout
from vllm_remedy.vllm.memory.kv_layout import build
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.memory.v0_forward import v0_forward_values_per_token
from vllm_remedy.vllm.memory.weights import mxfp4_backend

# The vision encoder's profile terms: ``encoder.py``.

# V1 activation peak = the sampler warm-up on min(max_num_seqs, mnbt) dummy requests (logits, probs,
# top-k/top-p sort buffers: 14.3 B per vocab entry fitted on 13 models at 0.19.0, rounded up) plus a
# forward-pass remainder growing with hidden size (0.08-0.24 GiB observed).
V1_SAMPLER_BYTES_PER_LOGIT = 14.5
# Up to 0.16 the warm-up sorts the whole vocab: Qwen3-14B on H100 peaked at 5.64 GiB on 0.15/0.16 and
# 2.23 GiB on 0.17/0.18 with everything else equal (llm-d-planner version sweep) -> 37.6 B per logit,
# rounded up.
V1_SORT_SAMPLER_BYTES_PER_LOGIT = 38.0
# FlashInfer's path (V1 before 0.11.1 where FlashInfer imports; not fitted): the sampler holds the model-dtype logits
# (`_dummy_sampler_run`) and their float32 copy (`Sampler.forward`: `logits.to(torch.float32)`), and
# `flashinfer_sample` calls `top_k_top_p_sampling_from_logits`, which with both k and p set allocates
# `masked_logits = top_k_mask_logits(logits, top_k)` then `probs = torch.softmax(masked_logits)` (flashinfer
# sampling.py, 0.2.11 as pinned by vllm 0.10.1.1's `flashinfer` extra): dtype + 3 x 4 B per logit, no sort.
FLASHINFER_FP32_BUFFERS_PER_LOGIT = 3
V1_FORWARD_BASE_GIB = 0.09
V1_FORWARD_BYTES_PER_TOKEN_HIDDEN = 1.25  # x dtype bytes
FLOAT32_EXTRA_GIB = 0.2  # float32 runs peaked 0.3 GiB above bf16 (Llama-3.1-8B, 0.19.0)
# V0 activation = one prefill of mnbt tokens: gate/up + activation + residual copies, 3 x (I/TP + H)
# values per token (matches 0.103 GiB per 1k tokens for Llama-3.1-8B on 0.6.4 exactly), or the
# sampler over max_num_seqs logits, whichever is larger. V0's profile_run samples its dummy batch with
# SamplingParams(top_p=0.99, top_k=vocab_size - 1) "to reflect the accurate memory usage", and the V0
# Sampler's _apply_top_k_top_p does that with a full PyTorch sort (FlashInfer only when
# VLLM_USE_FLASHINFER_SAMPLER=1): the same sort as V1 before 0.17, so the same bytes per logit. Only the
# driver rank samples, so at TP >= 2 the sort lands on rank 0, whose KV budget is the smallest.
V0_FORWARD_VALUES_PER_TOKEN = 3
# Model Runner V2's dummy forward over mnbt tokens (``mrv2_activation_gib``), in values per token of (I/TP + H). NOT
# FITTED: it was fitted (3.1) on the RTX 4080 0.26.0 and L4 0.28.0 AWQ `vllm serve` logs read as 8192 batch tokens, but
# serve ran 2048 there (engine/arg_utils.py get_batch_defaults, every release 0.21-0.34), where their peak is the cold
# compile's embedding copy and any count up to ~11.9 gives the same estimate: no log constrains it. Now V0's count for
# the same MLP, read from its code (gate_up's 2 x I/TP and the activation's I/TP held at once, plus the residual, hidden
# and output copies of H); it binds only at a large mnbt with a warm or no compile. A warm torch.compile cache does not
# skip it: ``profile_run`` always runs ``_dummy_run(max_num_tokens, skip_attn=True, is_profile=True)``, whose
# ``execute_model`` calls ``self.model(**model_inputs)`` (v1/worker/gpu/model_runner.py@0.28.0), and a warm cache only
# swaps Dynamo/Inductor for the loaded artifact, which is then called on the same inputs ("Directly load AOT
# compilation", ``output = self.aot_compiled_fn(self, *args, **kwargs)``, compilation/decorators.py@0.28.0). What a
# warm start drops is the compile's autotuning (``cold_compile_gib``), not the forward.
MRV2_FORWARD_VALUES_PER_TOKEN = V0_FORWARD_VALUES_PER_TOKEN
# From 0.33.0 MRv2's profile samples a second time with SamplingParams.for_sampler_warmup() (temperature, top-k 50,
# top-p 0.9, min-p, penalties, logit bias, bad words, logprobs 5) on the same rows, so the profiled peak pays for the
# float32 logits pipeline (``_dummy_sampler_run``, v1/worker/gpu/model_runner.py@0.33.0;
# ``versions.MRV2_FULL_SAMPLER_PROFILE_SINCE``). Sized per logit as V1's non-greedy sampler warm-up (FlashInfer's
# buffers where it runs, else ``V1_SAMPLER_BYTES_PER_LOGIT``): a stand-in, not fitted (no log of 0.33 or later).
# From 0.26.0 the profile's (default) sampler pass keeps the logits in the model dtype: 0.26.0's
# ``apply_sampling_params`` works in place in the input dtype (a clone only for raw logprobs), and 0.27.0-0.34.0 copy to
# float32 only when a request needs logits processing, which the dummy batch's default states never do
# (v1/worker/gpu/sample/sampler.py; 0.33.0's ``_dummy_sampler_run``: "logits in the model dtype, no per-request
# processing"). Through 0.25.1 the float32 copy is unconditional.
MRV2_DTYPE_LOGITS_SINCE = (0, 26, 0)
# From 0.27.0 MRv2's ``profile_run`` profiles the encoder cache first (``encoder_runner.profile_encoder_cache``,
# v1/worker/gpu/model_runner.py@0.27.0; absent at 0.26.0), so the vision encoder term applies to it from then.
MRV2_ENCODER_PROFILE_SINCE = (0, 27, 0)
# A cold torch.compile compiles the model inside vLLM's profiling window, and Inductor's standalone compile autotunes
# every generated Triton kernel at compile time on full-size random copies of its inputs (torch `standalone_compile`
# forces `triton.autotune_at_compile_time`; `codegen/wrapper.py` `generate_and_run_autotune_block`): the embedding
# lookup is such a kernel, so a copy of the (vocab-parallel, 64-padded) embedding table plus the kernel's output
# over mnbt tokens briefly is the torch peak. Read in vLLM 0.17.1 with torch 2.10; it matches every cold log whose
# sampler phase is smaller: T4 0.17.1 Qwen2.5-7B-AWQ (1.02 GiB table, 0.96 logged peak), MRv2 Qwen3-8B (1.16, 1.18
# logged), Qwen2.5-0.5B (0.25, 0.25-0.31), Qwen2.5-1.5B (0.43, 0.46), Qwen2.5-7B-AWQ (1.02, 1.04). A cold 0.11.0 L4
# log shows no such peak (0.53 GiB for activation and non-torch memory against a 1.0 GiB table); the release in
# between is not pinned down, so it applies from 0.12.0, the earlier, which errs toward less KV. Not fitted.
COLD_COMPILE_EMBEDDING_SINCE = (0, 12, 0)
# From 0.27.0 the profile charges the free-memory drop since the worker's first snapshot (cudaMemGetInfo) plus the torch
# peak above what is still allocated (utils/mem_utils.py@0.27.0 ``memory_profiling``: ``total_consumed`` +
# ``transient_peak_headroom``; @0.26.0 weights + torch peak increase + non-torch increase). A cached segment that
# ``empty_cache`` cannot return (a live block left in it) is thus charged twice: as used device memory and in the peak.
# The mechanism is from source; WHEN the autotuner's embedding copy stays pinned is allocation order. The condition,
# ``cublas_pin.carves_table`` (torch's cuBLAS workspace, allocated at the profile's first GEMM and never freed, larger
# than the profile's hidden-state batch: 8.125 MiB below capability 9, 32 MiB from it), was chosen post hoc on the
# eight cold 0.27-0.30 logs whose advisory line shows it (pinned: Drolsey/syslab-server RTX 5090 Qwen3-14B-AWQ and
# Qwen3-32B-AWQ at 20 MiB, ~1.45 GiB table; 48 GB RTX 4090 Qwen3-8B at mnbt 512, 4 MiB; RTX 4090 Qwen2.5-0.5B at 3.5
# MiB. Not: 8.9 starts at 14, 16 and 32 MiB); it replaced a capability >= 12.0 condition read from the RTX 5090 logs
# alone. The size is the table, not fitted.
PINNED_AUTOTUNE_COPY_SINCE = (0, 27, 0)
# From 0.31.0 ``determine_available_memory`` runs ``profile_run``, where the cold compile autotunes, under
# ``_scoped_allocator_max_split(max_split_size_mb=20)``, exited before ``memory_profiling`` collects, empties the cache
# and measures (v1/worker/gpu_worker.py@0.31.0, the same at 0.32.0, 0.33.0, 0.34.0; absent at 0.27.1, 0.29.0, 0.30.0).
# Its comment names this mechanism: without the limit "a later small allocation can be carved out of a freed multi-GiB
# block and pin the whole segment past the empty_cache()". Under the limit the freed copy's block (>= 20 MiB) is never
# handed to a smaller request nor split (c10/cuda/CUDACachingAllocator.cpp ``get_free_block``: no block of
# max_split_size or more for a smaller request, none of size + 20 MiB or more for a larger one; ``should_split``: only
# a request below max_split_size), so its segment stays whole and ``empty_cache`` returns it (``release_blocks`` frees
# every segment without a live block). The 48 GB RTX 4090 0.29.0 mnbt-512 log shows it is that carve, not a live
# copy: its "peak activation" (1.23 GiB: peak less what is still allocated, plus the graph estimate, sized 0.23 here)
# can hold the 1.16 GiB table only if the copy was freed, and yet 1.16 GiB more stayed consumed than at mnbt 4096. The
# profile split limit is not in 0.28.0-0.30.0, so the rule stays there. Moves no recorded case (no 0.31+ cold start
# whose batch is under the workspace). Not read: a compile range below mnbt (fusion passes' endpoints, compile_sizes)
# compiles in ``compile_or_warm_up_model``, outside the limit, which 0.34 sizes the KV cache after.
PINNED_AUTOTUNE_COPY_UNTIL = (0, 31, 0)
# MRv2 graph pool, captured after the KV cache (outside the budget): 0.37-0.56 GiB "took" on 24-36 layer models
# at the default capture sizes (0.0154-0.0171 GiB per layer), 0.15 on a T4; rounded up. Only the capture-OOM check
# reads it, so too much here predicts a capture OOM that does not happen and too little one that does.
MRV2_GRAPH_GIB_PER_LAYER = 0.0175
# From 0.29.0 MRv2 captures its graphs once into a throwaway pool before the KV cache exists and the worker subtracts
# that estimate from the budget (``versions.MRV2_GRAPHS_IN_BUDGET_SINCE``; v1/worker/gpu/cudagraph_utils.py@0.29.0
# ``profile_cudagraph_memory``: PIECEWISE graphs measured in full, FULL graphs as the first capture + (n - 1) x
# max(second capture, 1 MiB), so it exceeds the shared pool it stands for). One logged point: the 28-layer
# Qwen2.5-1.5B on a T4 (0.30.0) "0.15 GiB (actual), 0.34 GiB (estimated)", 0.0121 GiB per layer, rounded up (fitted
# on that case alone). From 0.34.0 the estimate is skipped (the KV cache is sized after capture). It measures the
# sizes the start captures, so a smaller default largest size (max_num_seqs < 256, mnbt < 512) shrinks it
# (``capture.default_sizes_scale``). The advisory line prints it inside "peak activation" (gpu_worker.py@0.29.0:
# ``peak_activation_memory`` = peak headroom + estimate; its "CUDAGraph memory" is the real capture): the 48 GB RTX
# 4090 0.29.0 Qwen3-8B starts at max_num_seqs 8 leave 0.07-0.09 GiB for it over the cold compile's 1.16 GiB table.
MRV2_GRAPH_ESTIMATE_GIB_PER_LAYER = 0.0125
# V1 from 0.20 reserves, inside the KV budget, not the pool it will capture but its own estimate of it
# (v1/worker/gpu_model_runner.py ``profile_cudagraph_memory``): per mode the first (largest) capture plus the
# second capture's growth, at least 1 MiB, times the remaining sizes; the graphs share one pool, so the second
# capture mostly reuses the first's memory. Logged estimates: 0.14 GiB ("Estimated CUDA graph memory") for the
# 48-layer Qwen3-30B-A3B on an H100 (0.22.1) and 0.11 GiB (the "Actual usage" advisory line) for Qwen3-Coder-30B-A3B
# on an A100 (0.26.1), 0.0023-0.0029 GiB per layer; rounded up to 0.004 (fitted on those two). The 0.19-era pool
# term (1.2 GiB for 48 layers) had stood in for it. Checked, not fitted, on a 94-layer TP 4 start on RTX PRO 6000
# cards (0.32 logged, 0.38 charged). Dense full-attention models too: the function has no MoE branch
# (gpu_model_runner.py@0.20.1), and a dense 0.20.1 start on an RTX 3090 (Orpheus 3B, 28 layers, kawshikbuet17/
# tts-playground) leaves 0.17 GiB for it after its cold-compile peak and non-torch memory (0.11 charged; checked, not
# fitted). Sliding-window models keep the pool term: estimates of 0.6-0.8 GiB appear in public logs of hybrid models
# (gpt-oss-120b's graphs take about 1 GiB on an H100).
V1_GRAPH_ESTIMATE_GIB_PER_LAYER = 0.004
V0_ACTIVATION_BASE_GIB = 0.02
# MoE: routed tokens x top-k through gate/up, with sort/permute buffers (Mixtral 8x7B, 0.19.0).
MOE_FACTOR = 2.0
MOE_BASE_GIB = 0.1
# Before 0.11 every MoE kernel allocates its intermediate caches per call (fused_moe.py / fused_marlin_moe.py
# `torch.empty`, and modular_kernel.py's workspace13/workspace2 at 0.10.0-0.10.2), so they are freed when the dummy
# forward returns, before the sampler warm-up: a phase of its own, not a sum with the sampler. 0.11.0 gives the modular
# kernel class-level buffers that persist (`SharedResizableBuffer`), later the WorkspaceManager (0.13.0), which the
# single-GPU bf16 path adopts at 0.14.0; from 0.11 the term stays additive (less KV where a path keeps its buffers).
# Checked, not fitted: the H100 0.10.2 Qwen3-30B-A3B advisory logs 5.58 GiB peak activation, the sampler's sort alone.
MOE_BUFFERS_PERSIST_SINCE = (0, 11, 0)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _moe_gib(model: ModelSpec, res: Resolved, backend: mxfp4.Backend | None = None) -> float:
    """Routed-expert buffers charged on top of the sampler phase (fitted on Mixtral, 0.19.0): the fused-MoE modular
    kernel takes them from a workspace that vLLM keeps between forwards (v0.16.0 v1/worker/workspace.py). The mxfp4
    Triton path allocates its own per call, a forward-phase peak instead (``_transient_moe_bytes``)."""
    if not model.is_moe or backend == "triton":
        return 0.0
    inter = model.moe_intermediate_size or model.intermediate_size
    routed = res.mnbt * max(1, model.experts_per_token) * 2 * inter / res.tp * res.weight_dtype_bytes
    return routed * MOE_FACTOR / GIB + MOE_BASE_GIB


def _transient_moe_bytes(model: ModelSpec, res: Resolved, backend: mxfp4.Backend | None) -> float:
    """The mxfp4 Triton MoE's per-call buffers (``mxfp4.triton_forward_bytes``), freed before the sampler runs."""
    if backend != "triton":
        return 0.0
    return mxfp4.triton_forward_bytes(model, res.mnbt, res.tp, res.weight_dtype_bytes)


def _dense_forward_bytes(model: ModelSpec, res: Resolved) -> float:
    """Peak of V1's dummy forward over mnbt tokens (v1/worker/gpu_model_runner.py ``profile_run``: ``_dummy_run``
    then ``_dummy_sampler_run``): the MLP's gate/up, activation and residual copies, V0's per-token count (fitted
    on vllm#10517). Not for MoE, whose routed buffers are ``_moe_gib``'s. It exceeds the sampler phase only at a
    large mnbt or few sequences: Seed-OSS-36B at TP 2 on 0.11.2 logged 1.98 GiB more profile peak at mnbt
    32,768 than at 8,192 (xuchu0726 logs), where 3 x (13,824 + 5,120) x 2 B x 24,576 tokens gives 1.97 GiB.
    """
    if model.is_moe:
        return 0.0
    per_token = V0_FORWARD_VALUES_PER_TOKEN * (model.intermediate_size / res.tp + model.hidden_size)
    return res.mnbt * per_token * res.weight_dtype_bytes


def cold_compile_gib(model: ModelSpec, res: Resolved) -> float:
    """The torch peak of a cold torch.compile inside the profile (``COLD_COMPILE_EMBEDDING_SINCE``): the autotuner's
    copy of the embedding table and the lookup's output over mnbt tokens. None with --enforce-eager (no compile) or a
    warm compile cache (the compiled artifacts are loaded, nothing is autotuned)."""
    if res.enforce_eager or res.compile_cache_warm or res.rules.version < COLD_COMPILE_EMBEDDING_SINCE:
        return 0.0
    rows = _round_up(model.vocab_size, 64) // res.tp + res.mnbt
    return rows * model.hidden_size * res.weight_dtype_bytes / GIB


def pinned_compile_gib(model: ModelSpec, res: Resolved, capability: tuple[int, int] | None = None) -> float:
    """The cold compile's embedding copy charged a second time, as consumed (non-torch) memory, from 0.27.0
    (``PINNED_AUTOTUNE_COPY_SINCE``) to 0.30.x, before the profile ran under the 20 MiB split limit
    (``PINNED_AUTOTUNE_COPY_UNTIL``), when the cuBLAS workspace is read to carve the freed copy
    (``cublas_pin.carves_table``: the profile's hidden-state batch is smaller than the workspace); 0 where no cold
    compile happens. The workspace and the carve are from source; that this size comparison decides it is post hoc."""
    if not cublas_pin.carves_table(model, res, capability):
        return 0.0
    version = res.rules.version
    if not PINNED_AUTOTUNE_COPY_SINCE <= version < PINNED_AUTOTUNE_COPY_UNTIL or cold_compile_gib(model, res) == 0.0:
        return 0.0
    return _round_up(model.vocab_size, 64) // res.tp * model.hidden_size * res.weight_dtype_bytes / GIB


def mrv2_activation_gib(model: ModelSpec, res: Resolved, capability: tuple[int, int] | None = None) -> float:
    """Model Runner V2's profile peak (v1/worker/gpu/model_runner.py ``profile_run``): one ``_dummy_run`` over mnbt
    tokens without attention, then ``_dummy_sampler_run`` on min(mnbt, max_num_seqs) rows while the forward's hidden
    states are still held: the logits, and before 0.26 the sampler's float32 copy (``MRV2_DTYPE_LOGITS_SINCE``; the
    dummy requests skip top-k/top-p, so nothing sorts). The forward phase is sized per token like V0's, with its own
    count of values (``MRV2_FORWARD_VALUES_PER_TOKEN``); a cold compile's autotuning is a phase of its own
    (``cold_compile_gib``).
    From 0.33 a second, full-pipeline sampler pass on the same rows; from 0.27 the encoder profile."""
    dt = res.weight_dtype_bytes
    rows = min(res.max_num_seqs, res.mnbt)
    per_logit = dt if res.rules.version >= MRV2_DTYPE_LOGITS_SINCE else dt + 4.0  # + the float32 copy before 0.26
    if res.rules.runner_v2_full_sampler_profile:  # the warm-up pass (MRV2_FULL_SAMPLER_PROFILE_SINCE)
        full = dt + 4.0 * FLASHINFER_FP32_BUFFERS_PER_LOGIT if res.flashinfer_sampler else V1_SAMPLER_BYTES_PER_LOGIT
        per_logit = max(per_logit, full)
    sampler = rows * model.vocab_size * per_logit + res.mnbt * model.hidden_size * dt
    forward = 0.0
    if not model.is_moe:  # warm or cold: the loaded or compiled graph runs the forward (MRV2_FORWARD_VALUES_PER_TOKEN)
        forward = res.mnbt * MRV2_FORWARD_VALUES_PER_TOKEN * (model.intermediate_size / res.tp + model.hidden_size) * dt
    extra = FLOAT32_EXTRA_GIB if dt == 4 else 0.0
    backend = mxfp4_backend(model, res, capability)
    forward = max(forward, _transient_moe_bytes(model, res, backend))
    encoder = encoder_gib(model, res) if res.rules.version >= MRV2_ENCODER_PROFILE_SINCE else 0.0
    return max(sampler, forward) / GIB + extra + _moe_gib(model, res, backend) + encoder


def activation_gib(model: ModelSpec, res: Resolved, capability: tuple[int, int] | None = None) -> float:
    """Peak PyTorch memory of the profile run above the weights: the runner's own phases, or a cold compile's
    autotuning when that is larger (one phase for every runner; it is 0 where no compile happens). The GPU's
    ``capability`` picks an mxfp4 checkpoint's MoE backend."""
    return max(_profile_phases_gib(model, res, capability), cold_compile_gib(model, res))


def _profile_phases_gib(model: ModelSpec, res: Resolved, capability: tuple[int, int] | None) -> float:
    """The profile run's forward and sampler phases, per runner (V0, V1, Model Runner V2)."""
    dt = res.weight_dtype_bytes
    if res.runner_v2:
        return mrv2_activation_gib(model, res, capability)
    backend = mxfp4_backend(model, res, capability)
    if res.rules.engine == "V1":
        reqs = min(res.max_num_seqs, res.mnbt)
        if res.flashinfer_sampler:
            per_logit = dt + 4.0 * FLASHINFER_FP32_BUFFERS_PER_LOGIT
        elif res.rules.sampler_sorts:
            per_logit = V1_SORT_SAMPLER_BYTES_PER_LOGIT
        else:
            per_logit = V1_SAMPLER_BYTES_PER_LOGIT
        sampler = reqs * model.vocab_size * per_logit
        forward = res.mnbt * model.hidden_size * V1_FORWARD_BYTES_PER_TOKEN_HIDDEN * dt
        extra = FLOAT32_EXTRA_GIB if dt == 4 else 0.0
        # profile_run frees the dummy forward's intermediates before the sampler warm-up (only the hidden
        # states survive), so the torch peak is the larger of the two phases, not their sum.
        moe_phase = _transient_moe_bytes(model, res, backend) + forward
        peak = max(sampler + forward, _dense_forward_bytes(model, res), moe_phase)
        moe = _moe_gib(model, res, backend)
        if res.rules.version < MOE_BUFFERS_PERSIST_SINCE:  # per-call MoE caches: the forward phase, not a sum
            peak, moe = max(peak, moe * GIB), 0.0
        lm = peak / GIB + V1_FORWARD_BASE_GIB + extra + moe + encoder_gib(model, res)
        return max(lm, qwen2_vl_tower_gib(model, res))  # a tower freed before the LM run: a phase of its own
    per_token = v0_forward_values_per_token(model, res.tp, res.rules.version) * dt  # rows at the MLP's peak
    forward = res.mnbt * per_token
    sampler = min(res.max_num_seqs, res.mnbt) * model.vocab_size * V1_SORT_SAMPLER_BYTES_PER_LOGIT
    return max(forward, sampler) / GIB + V0_ACTIVATION_BASE_GIB + _moe_gib(model, res, backend)


def cudagraph_gib(model: ModelSpec, res: Resolved) -> float:
    """CUDA-graph memory: the pool captured after the KV cache (0.65-1.85 GiB observed on 0.19.0, growing with
    depth; from 0.20 reserved inside the V1 budget), for full-attention models from 0.20 vLLM's own, smaller estimate;
    none with --enforce-eager; Model Runner V2's own per-layer pool (outside its budget through 0.28), from 0.29 its
    larger in-budget estimate (``MRV2_GRAPH_ESTIMATE_GIB_PER_LAYER``), at 0.34 the pool again (captured before the
    KV cache is sized). Charged as at the default sizes; ``capture.pool_scale`` scales it to the sizes captured (on V0
    those max_num_seqs bounds)."""
    if res.enforce_eager or res.cudagraphs_off:
        return 0.0
    if res.runner_v2:
        if res.rules.runner_v2_graphs_in_budget and not res.rules.kv_sized_after_warmup:
            return MRV2_GRAPH_ESTIMATE_GIB_PER_LAYER * model.num_layers * capture.default_sizes_scale(res)
        return MRV2_GRAPH_GIB_PER_LAYER * model.num_layers
    if res.rules.cudagraph_in_budget and not model.sliding_layers:
        return V1_GRAPH_ESTIMATE_GIB_PER_LAYER * model.num_layers
    return 0.5 + 0.0145 * model.num_layers


def kv_bytes_per_token(model: ModelSpec, res: Resolved) -> int:
    """Per-rank KV bytes for one token in every layer (exact, as vLLM allocates a full-attention layer)."""
    return model.num_layers * _kv_bytes_per_layer_token(model, res)


def _kv_bytes_per_layer_token(model: ModelSpec, res: Resolved) -> int:
    """MLA keeps one latent "head" (kv_lora_rank + qk_rope_head_dim) per token; attention keeps K and V per KV
    head on this rank (replicated when TP exceeds the KV heads)."""
    if model.is_mla:  # latent or full K/V by release, quantization and VLLM_MLA_DISABLE; V3.2's indexer
        return mla_release.kv_bytes_per_layer_token(model, res.mla, res.rules.version, res.rules.engine, res.tp,
                                                     res.kv_dtype_bytes, res.mla_cache_dtype, res.weight_dtype_bytes)
    heads = max(1, model.num_kv_heads // res.tp)
    return 2 * heads * model.head_dim * res.kv_dtype_bytes


def kv_layout(model: ModelSpec, res: Resolved) -> KvLayout:
    """The groups vLLM forms for this model and version (``kv_layout.build``)."""
    page = _kv_bytes_per_layer_token(model, res) * res.block_size
    return build(model, page, res.block_size, res.rules.engine, res.rules.version, res.in_flight_batches)
