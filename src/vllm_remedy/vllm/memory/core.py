"""Predict what a vLLM start does on one GPU: the memory split, the KV cache and the outcome.

Pure arithmetic on frozen inputs, so the planner can call it thousands of times (well under a
millisecond each; see bench/bench_memory.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import arch_release, batch_words, dtype_support, rope_dispatch
from vllm_remedy.vllm.catalog import GIB, GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import (
    capture,
    chunked,
    cublas_pin,
    pinned,
    post_capture,
    refusal_order,
    start_checks,
    terms,
)
from vllm_remedy.vllm.memory.kv_layout import check_rule
from vllm_remedy.vllm.memory.non_torch import context_gib, nccl_outside_budget, non_torch_gib
from vllm_remedy.vllm.memory.refusal_order import RefusedBy, Stage
from vllm_remedy.vllm.memory.resolved import Resolved
from vllm_remedy.vllm.memory.settings import (
    EngineSettings,
    engine_rules,
    resolve,
    split_run,
    tp_split_problem,
)
from vllm_remedy.vllm.memory.unmodelled import DECIDED_BEFORE, CannotPredict
from vllm_remedy.vllm.memory.weights import mla_absorbed_bytes, weights_gib
from vllm_remedy.vllm.outcomes import REFUSED_BEFORE_SIZING, Outcome
from vllm_remedy.vllm.versions import rules

# Which config refuses a ``config_refused`` start (``Estimate.refused_by``): the model config (an architecture or
# quantization method the release lacks, ``arch_release``), the env's VLLM_USE_V1 (``engine_env.Refusal``), the TP size
# (``tp_split_problem``: the heads at config time, the rest as the weights are created), the quantization for the card
# or checkpoint (``quant_support``), the scheduler config's batch below the length (``batch_refused``). Which one
# speaks when several refuse is vLLM's order (``refusal_order``). The callers that prefix the words
# (``remedies.predict``) read it.
# Fields that say why, not how much: the JSON views keep their own ``refusal`` key (or none), so ``to_json`` drops them.
_REFUSAL_FIELDS = ("refusal", "refused_by", "refused_at")


@dataclass(frozen=True)
class Estimate:
    """The predicted start. GiB figures are per GPU (per TP rank); ``peak_gib`` includes graphs,
    CUDA context and other processes, so ``total_gib - peak_gib`` is the real headroom."""

    outcome: Outcome
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    cudagraph_gib: float
    kv_cache_gib: float
    kv_cache_tokens: int
    gpu_blocks: int
    max_concurrency: float
    max_model_len: int
    peak_gib: float
    total_gib: float
    needed_kv_gib: float | None = None  # KV one max-length request needs (max_len_exceeds_kv)
    suggested_max_model_len: int | None = None  # as vLLM would print it
    # Every vLLM check passes, but the CUDA graphs, captured after the KV cache and outside the budget (before
    # 0.20), do not fit what is left on the card: the start dies in capture (Failure.CUDAGRAPH_CAPTURE_OOM).
    graph_capture_oom: bool = False
    # Every vLLM check passes, but a flag-sized KV cache (--kv-cache-memory-bytes, --num-gpu-blocks-override) does not
    # fit what weights, activation, non-torch memory and the context leave: nothing compares it with the card, so the
    # start dies allocating it (Failure.KV_CACHE_ALLOCATION_OOM, ``pinned``).
    kv_allocation_oom: bool = False
    # ``config_refused``: vLLM's words for the refusal the estimate decided, and which config raised it; None otherwise
    # (the words are read here once, where the outcome is decided, instead of by each caller walking the checks again).
    refusal: str | None = None
    refused_by: RefusedBy | None = None
    # where that refusal stands in vLLM's order (``refusal_order.Stage``; "len" for ``max_len_exceeds_model``), kept so
    # callers that weigh it against a later check (the world size, ``parallel.refused_before_world_size``) read no words
    refused_at: Stage | None = None

    @property
    def fits(self) -> bool:
        """The estimator's own verdict; the planner's ``Judge.accept`` also demands headroom, so not "safe"."""
        return self.outcome is Outcome.FITS

    @property
    def start(self) -> str:
        """The start as a whole: ``outcome`` (vLLM's own checks), or ``kv_cache_allocation_oom`` /
        ``cudagraph_capture_oom`` when they all pass and the flag-sized cache / the graphs then do not fit the card.
        What a script should read to know whether the pod will serve."""
        if self.kv_allocation_oom:
            return "kv_cache_allocation_oom"
        return "cudagraph_capture_oom" if self.graph_capture_oom else self.outcome.value

    def to_json(self) -> dict[str, Any]:
        """Every term, the outcome as its string, the start as a whole and floats rounded to 2 places, for ``-o json``
        and reports."""
        data = asdict(self)
        for key in _REFUSAL_FIELDS:
            del data[key]
        data["outcome"] = self.outcome.value
        data["start"] = self.start
        for key, value in data.items():
            if isinstance(value, float):
                data[key] = round(value, 2)
        return data


def estimate(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> Estimate:
    """Apply the version's budget rules to this model, GPU and flags; ``CannotPredict`` for flags it does not size,
    unless the start ends before their memory matters (``unmodelled.DECIDED_BEFORE``)."""
    # the quantization this release reads (ModelSpec.releases), as --quantization selects it
    model = model.at(rules(settings.version).version, settings.quantization)
    if (split := tp_split_problem(model, settings.tp, split_run(model, gpu, settings))) is not None:
        return tp_refused(model, gpu, settings, split)
    res = resolve(model, gpu, settings)
    r = res.rules
    total = gpu.total_gib
    requested = total * res.util
    weights, context = _loaded(model, gpu, res, settings.quantization)
    activation = terms.activation_gib(model, res, gpu.capability)
    pinned_copy = terms.pinned_compile_gib(model, res, gpu.capability)
    workspace = cublas_pin.consumed_workspace_gib(res, gpu.capability, pinned_copy)
    non_torch = non_torch_gib(gpu, res) + pinned_copy + workspace
    graphs = terms.cudagraph_gib(model, res) * capture.pool_scale(res)
    # what the snapshot's used memory holds besides other processes: the free-memory check's and the capture's base
    snapshot_context = context_gib(gpu, res.tp, nccl=nccl_outside_budget(res))
    other = res.other_process_gib

    in_budget = graphs_in_budget(res)
    kv = requested - weights - activation - non_torch
    if r.budget == "absolute":
        kv -= other  # other processes' memory shows up as used device memory
    if in_budget:
        kv -= graphs
    pin = pinned.pinned(res)  # the flag sizes the cache; 0.34's extensible cache is off then (``pinned``)
    if r.kv_sized_after_warmup and not pin:
        kv = kv_after_warmup(total, requested, weights + non_torch + graphs, activation, context + other)
    layout = terms.kv_layout(model, res)
    block_bytes = layout.block_bytes
    blocks = max(0, int(kv * GIB // block_bytes)) if kv > 0 else 0
    if pin:
        kv, blocks = pinned.checked_budget(res, block_bytes, kv, blocks)
    tokens = layout.tokens(blocks)

    max_len = res.max_model_len
    if res.auto_len and tokens > 0:
        max_len = min(max_len, start_checks.longest(layout, res, kv, tokens, max_len))

    if pin:  # V1 before 0.21 overrides the count after its checks ran on the budget
        blocks = pinned.allocated_blocks(res, blocks)
        tokens = layout.tokens(blocks)
    outside = 0.0 if in_budget or r.kv_sized_after_warmup else graphs
    if pin:  # the cache is allocated at the flag's size whatever the budget; graphs are captured after it
        outside = graphs
    outcome = start_checks.outcome(res, total, requested, weights, context, other, kv, blocks, tokens, max_len, layout,
                       profiled=activation + non_torch, snapshot_context=snapshot_context)
    if pin and r.engine == "V1" and outcome is Outcome.NO_CACHE_BLOCKS and kv > 0:
        outcome = Outcome.MAX_LEN_EXCEEDS_KV  # bytes under one block: V1 refuses only <= 0 as "no memory"
    refused = _loaded_first(model, r.version, refusal_order.first_refusal(
        model, gpu, settings, None, res.env_problem,
        lambda: batch_words.words(settings.version, res.mnbt, res.max_model_len) if batch_refused(res) else None))
    if refused is not None and refused[0] is None:
        outcome = Outcome.MAX_LEN_EXCEEDS_MODEL  # vLLM's model config refuses it before touching the GPU
    elif refused is not None:
        outcome = Outcome.CONFIG_REFUSED  # refused at config time, before any GPU memory is used
    elif dtype_support.refused(model.dtype, settings.dtype, gpu.capability, settings.version, model.model_types):
        outcome = Outcome.DTYPE_UNSUPPORTED  # the worker refuses bfloat16 below capability 8.0 before loading
    # Graphs are captured after the KV cache is allocated; outside the budget they need the card's spare room and the
    # room the profile's activation freed, less what the capture and sampler warm-up allocate (``post_capture``).
    base = requested + (0.0 if r.budget == "absolute" else other + snapshot_context)
    transient = post_capture.transient_gib(model, res, gpu.capability, activation)
    excess = max(0.0, outside - activation + transient) if outside > 0 else 0.0
    peak = base + excess
    if r.kv_sized_after_warmup:  # what the start holds: everything measured, the cache, the kept transient
        peak = other + context + weights + non_torch + graphs + max(kv, 0.0) + activation
    if pin:
        peak = pinned.start_peak(other, context, weights, non_torch, activation, graphs, blocks, block_bytes)
    if pin:
        base, excess = peak - outside, outside  # ``pinned.start_peak`` holds the activation at capture: not read
    capture_oom = outcome is Outcome.FITS and excess > 0 and base <= total < peak
    capture_oom = capture_oom and not post_capture.spills_to_host(settings)  # WSL2: host memory, not an OOM
    kv_oom = pin and outcome is Outcome.FITS and base > total  # allocated before any graph is captured
    needed = suggested = None
    if outcome is Outcome.MAX_LEN_EXCEEDS_KV:
        needed = layout.needed_bytes(max_len, res.mnbt, check_rule(r.version)) / GIB
        if r.suggests_max_len or r.engine == "V0":
            suggested = tokens if r.engine == "V0" else start_checks.longest(layout, res, kv, tokens, max_len)

    # "absolute" budgets already contain the context and other processes; graphs sit outside until 0.20.
    if outcome is not Outcome.FITS:
        peak = min(peak, other + context + weights + (activation if kv > 0 else 0.0))
    if outcome in (Outcome.PROFILE_OOM, Outcome.NO_CACHE_BLOCKS):
        # the profiling forward ran (or tried to) before the KV check: the card held the weights, its activations and
        # the non-torch memory at once; above the total for profile_oom, where the start died
        peak = other + context + weights + activation + non_torch
    if outcome in (Outcome.MAX_LEN_EXCEEDS_MODEL, Outcome.CONFIG_REFUSED):
        peak = other  # refused at config time: only the other processes hold memory
    elif outcome is Outcome.DTYPE_UNSUPPORTED:
        peak = other + context  # refused as the worker sets its device up: a CUDA context, nothing loaded
    elif outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION:
        # init_device compares the snapshot's free memory with ceil(total x utilization) right after the CUDA context
        # and NCCL, before load_model (v1/worker/gpu_worker.py@0.11.0 inline; request_memory, v1/worker/utils.py@0.19.0
        # and @0.28.0): no weights, profile or KV cache were ever held
        peak = other + context
    if pin and kv > 0:  # the cache as allocated (before 0.21 V1 logs the budget it checked, then the override)
        kv = blocks * block_bytes / GIB
    if settings.unmodelled and outcome not in DECIDED_BEFORE:
        raise CannotPredict(settings.unmodelled)
    # refused before the model class matters: an architecture the Transformers backend would run is still refused so
    if arch_release.falls_back(model, settings.version) and outcome not in REFUSED_BEFORE_SIZING:
        raise CannotPredict(f"cannot predict {model.architecture}: vLLM {settings.version or '(newest)'} does not "
                            "implement it; its Transformers backend runs it if the image's transformers can (neither "
                            "modelled)")
    # the MLA block size, cache dtype or absorbed weights the release makes here, where not read (``mla_block``,
    # ``mla_cache``, ``mla_absorbed``): unknown once the model loads
    mla_why = res.mla_unknown or mla_absorbed_bytes(model, res, settings.quantization, gpu.capability)[1]
    if mla_why and outcome not in REFUSED_BEFORE_SIZING | {Outcome.FREE_MEMORY_BELOW_UTILIZATION}:
        raise CannotPredict(mla_why)
    # get_rope raises on a scaling type the release lacks, while the model is built (``rope_dispatch``)
    if outcome not in REFUSED_BEFORE_SIZING | {Outcome.FREE_MEMORY_BELOW_UTILIZATION} and (
            crash := rope_dispatch.crash(model, settings.version)) is not None:
        raise CannotPredict(crash)
    concurrency = start_checks.concurrency(res, layout, blocks, tokens, max_len)
    tokens = layout.logged_tokens(blocks, max_len, res.mnbt, r.version) if r.engine == "V1" else tokens
    return Estimate(
        outcome=outcome,
        weights_gib=weights,
        activation_gib=activation,
        non_torch_gib=non_torch,
        cudagraph_gib=graphs,
        kv_cache_gib=max(kv, 0.0) if outcome is not Outcome.NO_CACHE_BLOCKS else kv,
        kv_cache_tokens=tokens,
        gpu_blocks=blocks,
        max_concurrency=concurrency,
        max_model_len=max_len,
        peak_gib=peak,
        total_gib=total,
        needed_kv_gib=needed,
        suggested_max_model_len=suggested,
        graph_capture_oom=capture_oom,
        kv_allocation_oom=kv_oom,
        refusal=refused[1] if refused and refused[0] else None,
        refused_by=refused[0] if refused else None,
        refused_at=refused[2] if refused else None,
    )


def _loaded(model: ModelSpec, gpu: GpuSpec, res: Resolved, quantization: str | None) -> tuple[float, float]:
    """(weights, CUDA context) per GPU: what the device holds once the weights load, besides other processes."""
    weights = weights_gib(model, res, quantization, gpu.capability)
    return weights, context_gib(gpu, res.tp, nccl=res.p2p is not False)  # on the device while weights load and profile


def weights_overflow(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> bool:
    """Whether the weights, the CUDA context and other processes alone exceed the card, so that ``estimate`` says
    ``fits`` at no --gpu-memory-utilization and no --max-model-len: none of the three reads either (the weights read
    the dtype, TP, quantization and release; the context the card, TP and P2P), and ``start_checks.outcome`` then
    answers ``free_memory_below_utilization`` (checked first) or ``oom_loading_weights``, which a config-time refusal
    can only replace by another failure. The planner skips such a card's utilization sweep
    (``ladder._first_working``). False (not known) wherever ``estimate`` could raise instead: a TP size vLLM
    refuses, an unread env, a flag or an architecture not modelled."""
    if settings.unmodelled or arch_release.falls_back(model, settings.version):
        return False
    if tp_split_problem(model, settings.tp, split_run(model, gpu, settings)) is not None:
        return False
    res = resolve(model, gpu, settings)
    if res.env_problem is not None or res.mla_unknown is not None:
        return False
    if mla_absorbed_bytes(model, res, settings.quantization, gpu.capability)[1] is not None:
        return False
    weights, context = _loaded(model, gpu, res, settings.quantization)
    return res.other_process_gib + context + weights > gpu.total_gib


def _scheduler_view(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> Resolved | None:
    """What the scheduler config sees for a TP size vLLM refuses later (``resolve`` refuses it first): its defaults
    (chunked prefill, the batch) read no TP size, so they are resolved at TP 1; None when even that is refused (a
    checkpoint split off its grid on one rank)."""
    try:
        return resolve(model, gpu, replace(settings, tp=1))
    except UserError:
        return None


def tp_refused(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings, split: str) -> Estimate:
    """A TP size vLLM refuses (``split``: ``tp_split_problem``'s words, the heads at config time, a split group or
    weight block as the weights are created): ``config_refused`` with nothing sized
    (``outcomes.REFUSED_BEFORE_SIZING``), or ``max_len_exceeds_model``; the words are those of whichever refusal the
    release runs first (``refusal_order``: the model config, the env's VLLM_USE_V1, the scheduler config's batch and
    the quantization can all come before it). The weights-time refusals run with a CUDA context on each rank; it is
    not counted (the peak is the other processes')."""
    asked = settings.max_model_len
    max_len = model.max_model_len if asked in (None, -1) else int(asked)

    def batch() -> str | None:
        view = _scheduler_view(model, gpu, settings)
        return (batch_words.words(settings.version, view.mnbt, view.max_model_len)
                if view is not None and batch_refused(view) else None)

    refused = _loaded_first(model, rules(settings.version).version, refusal_order.first_refusal(
        model, gpu, settings, split, engine_rules(settings, gpu, model)[1], batch))
    assert refused is not None  # the TP size refuses when nothing before it does
    outcome = Outcome.MAX_LEN_EXCEEDS_MODEL if refused[0] is None else Outcome.CONFIG_REFUSED
    return Estimate(outcome=outcome, weights_gib=0.0, activation_gib=0.0, non_torch_gib=0.0, cudagraph_gib=0.0,
                    kv_cache_gib=0.0, kv_cache_tokens=0, gpu_blocks=0, max_concurrency=0.0, max_model_len=max_len,
                    peak_gib=settings.other_process_gib, total_gib=gpu.total_gib,
                    refusal=refused[1] if refused[0] else None, refused_by=refused[0], refused_at=refused[2])


def _loaded_first(model: ModelSpec, version: tuple[int, int, int], refused: tuple[RefusedBy | None, str, Stage] | None
                  ) -> tuple[RefusedBy | None, str, Stage] | None:
    """The model config's failure to load the config (``ModelSpec.load_refusal``: ``get_config`` runs before the
    architecture and the length are checked, config/model.py@0.11.0 l.438 after l.368's VLLM_USE_V1 read) before
    every refusal but the env's earliest."""
    said = model.load_refusal_in(version)
    if said is None or (refused is not None and refused[2] == "env_early"):
        return refused
    return "model", said, "arch"


def batch_refused(res: Resolved) -> bool:
    """The scheduler config refuses max_num_batched_tokens below max_model_len without chunked prefill while the
    engine config is built (V0's ``SchedulerConfig._verify_args``, config.py@0.5.5, @0.6.3, @0.8.5; V1's
    ``verify_max_model_len``, config/scheduler.py@0.11.1, @0.34.0). Whether chunked prefill is on is ``resolve``'s
    (``chunked.chunked_prefill``: V0's default by model and length, V1 forcing it on before 0.11.1). An ``auto``
    length is left out: what the scheduler config sees before auto-fit shrinks it was not read."""
    return not res.auto_len and chunked.refused(res.chunked_prefill, res.mnbt, res.max_model_len)


def graphs_in_budget(res: Resolved) -> bool:
    """Whether the KV budget already subtracts a CUDA-graph estimate: V1 from 0.20; Model Runner V2 from 0.29
    (``profile_cudagraph_memory`` returns 0 through 0.28, v1/worker/gpu/model_runner.py@0.28.0, so its graphs were
    captured after the KV cache, outside it; gpu/cudagraph_utils.py@0.29.0 measures them first)."""
    r = res.rules
    return r.cudagraph_in_budget and (not res.runner_v2 or r.runner_v2_graphs_in_budget)


# The extensible KV cache's safety margin (v1/worker/extensible_kv_cache.py@0.34.0, CUDA): at least 1 GiB, or 0.75 of
# the transient peak kept free.
KV_MARGIN_FLOOR_GIB = 1.0
KV_MARGIN_TRANSIENT_FRACTION = 0.75


def kv_after_warmup(total: float, requested: float, used: float, transient: float, before_start: float) -> float:
    """0.34's KV cache, sized after warmup and graph capture from measured memory (``measure_kv_cache_bytes``,
    v1/worker/extensible_kv_cache.py@0.34.0): the budget ``requested`` (ceil(T x u), u = 1.0 when unset) less what the
    engine uses since its start (``used``: weights, non-torch memory, the captured graphs), capped by the device's
    free memory (``total`` less ``before_start``: CUDA context and other processes, and ``used``) less a margin of
    max(1 GiB, 0.75 x transient); then the transient peak (the profile's headroom) is kept free as well. Torch's
    reservation growth during warmup, the other candidate for what is kept free, is taken as not above the peak."""
    margin = max(KV_MARGIN_FLOOR_GIB, KV_MARGIN_TRANSIENT_FRACTION * transient)
    return min(requested - used, total - before_start - used - margin) - transient
