"""What the device holds while V1 captures its CUDA graphs, after the KV cache is allocated.

V1 sizes the KV cache as the budget less the weights, the profile's torch peak and the non-torch growth, but the
peak itself is not kept: ``memory_profiling`` ends with ``gc.collect()`` and ``empty_cache()`` before it measures
(utils/__init__.py@0.10.2, @0.11.0; utils/mem_utils.py@0.19.1, @0.26.0, @0.27.1), and ``profile_run`` deletes its
dummy outputs and clears the encoder cache first (v1/worker/gpu_model_runner.py@0.11.0). So when
``compile_or_warm_up_model`` runs (after ``initialize_from_config`` allocated the cache, v1/worker/gpu_worker.py
@0.10.2 through @0.32.0), the activation's room is free: the graphs outside the budget and that step's own transient
allocations have it, plus whatever the budget left unrequested. A capture OOM needs graphs + transient above both.

The step's transients, in order (gpu_worker.py ``compile_or_warm_up_model``, same order @0.10.2, @0.11.0, @0.19.1,
@0.26.0, @0.27.1): compile-size warm-ups (none by default), ``kernel_warmup`` (on capability >= 9.0 FlashInfer's
autotune and DeepGEMM's warm-up run a forward over max_num_batched_tokens, model_executor/warmup/kernel_warmup.py
@0.10.2, @0.11.0, @0.26.0, @0.27.1), ``capture_model`` (eager warm-up forwards at the capture sizes, at most the
largest), then the sampler warm-up: V1 runs ``_dummy_run(min(max_num_seqs, mnbt))`` and ``_dummy_sampler_run`` on
those rows, the profile's sampler phase again; Model Runner V2 runs ``warmup_kernels`` (v1/worker/gpu/warmup.py
@0.26.0): min(max_num_seqs, mnbt // 2, ...) requests with ``SamplingParams.for_sampler_warmup()``, the full float32
sampling pipeline the profile's pass skipped before 0.33.

V0 from 0.6.4 frees the profile's activation the same way (``torch.cuda.empty_cache()`` after ``profile_run``,
worker/worker.py@0.6.4.post1; ``memory_profiling``'s ``gc.collect()`` and ``empty_cache()``, utils.py@0.6.6.post1 and
@0.8.5.post1), then ``initialize_cache`` allocates the cache and ``_warm_up_model`` only captures (compile-size
warm-ups aside): no sampler warm-up follows (worker/worker.py@0.6.4.post1, @0.6.6.post1, @0.8.5.post1). Its transient
is the capture's eager forwards.

Under WSL2 the capture does not fail for lack of device memory: the Windows driver (WSL's GPU is the Windows
driver's) falls back to shared system memory when the GPU's is exhausted ("CUDA - Sysmem Fallback Policy", driver
536.40 and newer, NVIDIA answer 5490: applications "continue to run, albeit at lower speeds"), and WSL2 does not
honour the per-program policy that turns it off (microsoft/WSL#11050: a 30 GiB tensor allocated on a 15.99 GiB card).
One RTX 4080 machine's logs show it (mrpid12org/imageworks, vLLM 0.10.2, 67 piecewise sizes; "free" below is from
each advisory line's own figures): the same LLaVA-1.5-7B AWQ start captured 1.29 GiB of graphs at 0.85
(vllm_llava_awq_correct.log) but "took 0.48 GiB" at 0.9 (vllm_serve_correct.log), where 0.61 GiB was free, in 13 s
instead of 8; its other captures at 0.85 and 0.9 end with 0.11-0.14 GiB free (one 0.22), and one that found the card
full "took 0.00 GiB" in 52 s (vllm_llava_server.log). So the capture-OOM verdict is not given under WSL2
(``spills_to_host``); the peak still says what the card lacks. The shared memory's own limit is not read, nor is any
other OOM (a KV cache pinned by a flag, the profile, the weights) changed: no WSL case shows one. Written after the
RTX 4080 verdict (post hoc).

Written after the capture-OOM verdicts on six calibration cases whose logs show the capture finished: post hoc (V0's
after a blind T4 0.8.5 AWQ start, batch 2026-12-06b). Not read, so left as they were (the whole activation stays
charged): V0 before 0.6.4, and V1 on capability >= 9.0 or an unknown card (the autotune forward reaches the profile's
forward phase). Not sized: MRv2's warm-up prompt logprobs
(one prompt token per request) and the capture's eager forwards beyond the dense MLP's values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from vllm_remedy.vllm.catalog import GIB, GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import capture, pinned, terms, weights
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.memory.settings import EngineSettings, resolve

#: ``kernel_warmup`` runs FlashInfer's autotune (and DeepGEMM's warm-up) forward over mnbt tokens from this capability.
AUTOTUNE_CAPABILITY = (9, 0)
#: V0 frees the profile's activation before the cache from this release (worker/worker.py@0.6.4.post1).
V0_FREES_PROFILE_SINCE = (0, 6, 4)


def transient_gib(model: ModelSpec, res: Resolved, capability: tuple[int, int] | None, activation: float) -> float:
    """The largest torch allocation live above the weights, non-torch memory and KV cache while graphs are captured
    and the sampler warmed up; ``activation`` (the profile's peak, freed before the cache) where not read."""
    r = res.rules
    if r.engine == "V0":  # only the capture's eager forwards follow the cache (no sampler warm-up)
        if r.version < V0_FREES_PROFILE_SINCE:
            return activation
        return min(activation, _capture_forward_bytes(model, res) / GIB)
    if r.budget == "absolute":
        return activation
    dt = res.weight_dtype_bytes
    backend = weights.mxfp4_backend(model, res, capability)
    moe = terms._moe_gib(model, res, backend)  # from 0.11 kept between forwards (``MOE_BUFFERS_PERSIST_SINCE``)
    extra = terms.FLOAT32_EXTRA_GIB if dt == 4 else 0.0
    forward = _capture_forward_bytes(model, res)
    if res.runner_v2:
        rows = min(res.max_num_seqs, max(1, res.mnbt // 2))  # warmup_kernels: prompt of 2 tokens per request
        if res.flashinfer_sampler:
            per_logit = dt + 4.0 * terms.FLASHINFER_FP32_BUFFERS_PER_LOGIT
        else:
            per_logit = terms.V1_SAMPLER_BYTES_PER_LOGIT
        return max(rows * model.vocab_size * per_logit, forward) / GIB + extra + moe
    if capability is None or capability >= AUTOTUNE_CAPABILITY:
        return activation
    reqs = min(res.max_num_seqs, res.mnbt)
    if res.flashinfer_sampler:
        per_logit = dt + 4.0 * terms.FLASHINFER_FP32_BUFFERS_PER_LOGIT
    elif r.sampler_sorts:
        per_logit = terms.V1_SORT_SAMPLER_BYTES_PER_LOGIT
    else:
        per_logit = terms.V1_SAMPLER_BYTES_PER_LOGIT
    hidden = reqs * model.hidden_size * terms.V1_FORWARD_BYTES_PER_TOKEN_HIDDEN * dt
    sampler = reqs * model.vocab_size * per_logit + hidden
    held = moe if r.version >= terms.MOE_BUFFERS_PERSIST_SINCE else 0.0
    return min(activation, max(sampler, forward) / GIB + terms.V1_FORWARD_BASE_GIB + extra + held)


def _capture_forward_bytes(model: ModelSpec, res: Resolved) -> float:
    """A dense forward's MLP values over the largest captured batch (the capture's eager warm-ups), V0's count."""
    tokens = min(capture.largest_capture(res), res.mnbt)
    per_token = terms.V0_FORWARD_VALUES_PER_TOKEN * (model.intermediate_size / res.tp + model.hidden_size)
    return tokens * per_token * res.weight_dtype_bytes


def spills_to_host(settings: EngineSettings) -> bool:
    """Whether graphs the card cannot hold are captured in host memory instead of failing (WSL2; the docstring)."""
    return settings.wsl


class Predicted(Protocol):
    """The figures of an ``Estimate`` the capture step is split from (``core`` imports this module)."""

    total_gib: float
    peak_gib: float
    cudagraph_gib: float
    activation_gib: float


@dataclass(frozen=True)
class CaptureRoom:
    """What the capture step had on a start predicted to die there, for the message that says so: the graphs are
    measured against ``left``, not against the card less the budget."""

    unrequested: float  # the card less the budget, other processes and the context the snapshot saw
    freed: float  # the profile's activation, freed before the KV cache (0 for a flag-sized cache: not read)
    transient: float  # what the capture's eager warm-ups and the sampler warm-up hold besides the graphs

    @property
    def left(self) -> float:
        """The room the graphs had."""
        return self.unrequested + self.freed - self.transient


def capture_room(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings, est: Predicted) -> CaptureRoom:
    """``est``'s capture step split into its parts, from the same terms ``estimate`` added up (its peak is the card's
    used memory at the snapshot plus the budget, plus graphs + transient - freed activation when that is positive)."""
    res = resolve(model, gpu, settings)
    if pinned.pinned(res):  # ``pinned.start_peak`` holds the activation at capture: nothing freed is counted
        return CaptureRoom(est.total_gib - (est.peak_gib - est.cudagraph_gib), 0.0, 0.0)
    transient = transient_gib(model, res, gpu.capability, est.activation_gib)
    base = est.peak_gib - max(0.0, est.cudagraph_gib - est.activation_gib + transient)
    return CaptureRoom(est.total_gib - base, est.activation_gib, transient)
