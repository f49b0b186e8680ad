"""One registry of failure classes: per ``Failure``, what it is called, what it means and which runbook step answers it.

Why one table: the log classifier, the CLI (``diagnose``, ``plan``), the remedies, the game days and the
rehearsal cluster all speak of the same classes, and each used to keep its own copy of some of these facts.
A new class is now this table, the log matcher (``startup_log.failure`` and its ``log_formats`` message)
and the sim's log renderer (``startup_log.render``).

Pure: nothing here imports beyond ``vllm.outcomes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from string import Formatter
from typing import Any, Literal

from vllm_remedy.vllm.outcomes import Failure

Phase = Literal["start", "load"]


@dataclass(frozen=True)
class FailureClass:
    """Everything the tool says about one class, in one place.

    ``phase``: "start" ends (or is the verdict of) a start; "load" strikes a server that was up, so
    restore sheds load rather than rolling back. ``precise_hint`` is used instead of ``hint`` when the
    log's failure detail has every field it names. ``error_kind`` is the ``log_formats`` message vLLM raises
    for exactly this class; ``oom_phase`` the classifier's traceback phase that makes a raw CUDA OOM this
    class. ``short_of`` names the memory quantity that ran short, which a step-4 change must raise.
    ``host_memory``: the kernel killed the container for host RAM, outside vLLM's GPU budget and its log.
    ``eager_rung``: the runbook's temporary ``--enforce-eager`` is a remedy of its own for this class, so the
    planner offers it beside the lasting changes instead of only when nothing else fits.
    """

    failure: Failure
    headline: str
    step: int
    hint: str
    phase: Phase = "start"
    precise_hint: str | None = None
    error_kind: str | None = None
    oom_phase: str | None = None
    short_of: str | None = None
    host_memory: bool = False
    eager_rung: bool = False

    @property
    def name(self) -> str:
        """The enum value, as logs, JSON and scenarios spell the class."""
        return self.failure.value

    def hint_for(self, detail: Mapping[str, Any]) -> str:
        """One line pointing at the runbook step, with the log's own numbers when it printed them."""
        text = self.hint
        if self.precise_hint is not None and all(detail.get(name) for name in _fields(self.precise_hint)):
            text = self.precise_hint.format_map(detail)
        return f"step {self.step}: {text}"


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in Formatter().parse(template) if name]


_CLASSES = (
    FailureClass(
        Failure.NONE, "healthy start: the engine came up (or the log ends after a successful KV-cache sizing)",
        step=6, hint="confirm maximum concurrency is above your peak concurrent requests"),
    FailureClass(
        Failure.OOM_LOADING_WEIGHTS, "CUDA out of memory while loading the model weights",
        step=4, hint="the weights do not fit this GPU: --tensor-parallel-size 2 or pin a larger GPU type",
        oom_phase="loading_weights", short_of="weights_room"),
    FailureClass(
        Failure.NO_CACHE_BLOCKS, "no GPU memory left for the KV cache after weights and activations",
        step=4, hint="weights + activations leave no KV cache: raise --gpu-memory-utilization, use TP=2, "
                     "or lower --max-num-batched-tokens",
        error_kind="err_no_cache", short_of="kv_cache"),
    FailureClass(
        Failure.MAX_LEN_EXCEEDS_KV, "max-model-len does not fit in the KV cache",
        step=4, hint="set an explicit --max-model-len that fits the KV cache (or give the KV cache more memory)",
        precise_hint="set an explicit --max-model-len ≤ {suggested_max_model_len} "
                     "(or give the KV cache more memory)",
        error_kind="err_max_len", short_of="max_concurrency"),
    FailureClass(  # a config error, not memory: vLLM refuses it before loading anything (vllm.model_len)
        Failure.MAX_LEN_EXCEEDS_MODEL, "max-model-len is above the model's own maximum (config.json)",
        step=1, hint="roll back to the last known-good revision, then set --max-model-len at most the model's "
                     "maximum (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 only for a model known to take longer inputs)",
        precise_hint="roll back to the last known-good revision, then set --max-model-len ≤ {derived_max_model_len} "
                     "(the model's {max_len_key}; it asked for {max_model_len})",
        error_kind="err_max_len_model"),
    FailureClass(
        Failure.FREE_MEMORY_BELOW_UTILIZATION, "free GPU memory at startup is below --gpu-memory-utilization",
        step=3, hint="another process holds GPU memory; check nvidia-smi on the node, or lower "
                     "--gpu-memory-utilization (step 4)",
        error_kind="err_free_memory", short_of="free_at_start"),
    FailureClass(  # weights + the profile's forward + non-torch + context + other processes exceed the card
        Failure.PROFILE_OOM, "CUDA out of memory during the memory-profiling forward, before the KV cache is sized",
        step=4, hint="the profiling forward runs over --max-num-batched-tokens: lower it (or --max-num-seqs where the "
                     "sampler's warm-up is the larger part), use a larger tensor-parallel-size (`vllm-remedy plan` "
                     "names one), or free the card of other processes; on its own, raising --gpu-memory-utilization "
                     "does not help (the profile runs before the budget is applied), though alongside a smaller "
                     "profile it may be needed to size the KV cache",
        oom_phase="profiling", short_of="profile_room"),
    FailureClass(
        Failure.SAMPLER_WARMUP_OOM, "CUDA out of memory while warming up the sampler",
        step=4, hint="lower --max-num-seqs (e.g. 64) or --gpu-memory-utilization",
        error_kind="err_sampler", oom_phase="sampler_warmup", short_of="activation_headroom"),
    FailureClass(
        Failure.CUDAGRAPH_CAPTURE_OOM, "CUDA out of memory while capturing CUDA graphs, after the KV cache was "
                                       "allocated",
        step=4, hint="graphs are captured outside the memory budget: --enforce-eager as a temporary measure, "
                     "then lower --gpu-memory-utilization or cap --max-cudagraph-capture-size",
        oom_phase="cuda_graph_capture", short_of="graph_headroom", eager_rung=True),
    FailureClass(  # vLLM allocates the cache at its size with no check against the card (vllm.memory.pinned)
        Failure.KV_CACHE_ALLOCATION_OOM, "CUDA out of memory while allocating the KV cache, after every check passed",
        step=4, hint="the KV cache is larger than what the card has left: lower or remove --kv-cache-memory-bytes / "
                     "--num-gpu-blocks-override, or lower --gpu-memory-utilization (other processes hold memory)",
        oom_phase="kv_cache_allocation"),  # the cache was too large: no step must raise it
    FailureClass(
        Failure.OOM_UNDER_LOAD, "CUDA out of memory under load, after the server was up",
        step=5, hint="cap --max-num-batched-tokens and the prompt length at the gateway",
        phase="load", oom_phase="serving", short_of="activation_headroom"),
    FailureClass(
        Failure.HOST_OOM_KILLED, "container killed by the host OOM killer (pod status), not a CUDA OOM",
        step=3, hint="the pod hit its memory limit / node RAM: raise resources.limits.memory", host_memory=True),
    FailureClass(  # a layout error, not memory: nothing to budget; restore rolls back from it as from any crash loop
        Failure.WORLD_SIZE_EXCEEDS_GPUS, "the engine's world size (TP × PP) is larger than the GPUs it can see",
        step=1, hint="roll back to the last known-good revision, then make --tensor-parallel-size × "
                     "--pipeline-parallel-size at most the GPUs of the group (pods × GPUs per pod)",
        precise_hint="roll back to the last known-good revision: world size {world_size} needs {world_size} GPUs, "
                     "the engine sees {available_gpus}; make TP × PP at most the GPUs of the group",
        error_kind="err_world_size"),
    FailureClass(  # a config error, not memory: the worker refuses it before loading anything (vllm.dtype_support)
        Failure.DTYPE_UNSUPPORTED, "bfloat16 on a GPU below compute capability 8.0 (Volta, Turing)",
        step=1, hint="roll back to the last known-good revision, then set --dtype half (float16) on this GPU type, "
                     "or pin a GPU of compute capability 8.0 or newer",
        precise_hint="roll back to the last known-good revision, then set --dtype half: the {gpu_name} has compute "
                     "capability {capability}, bfloat16 needs 8.0",
        error_kind="err_dtype"),
    FailureClass(  # argparse refuses a flag's value before vLLM starts anything (vllm.cmdline.values)
        Failure.ARGUMENT_REFUSED, "vLLM's argument parser refused a flag's value (exit 2, before anything starts)",
        step=1, hint="roll back to the last known-good revision, then correct the flag the error names: a value "
                     "this release's parser takes (a plain integer always is for a number; one of the listed "
                     "choices), or remove or correct a flag this release does not have",
        precise_hint="roll back to the last known-good revision, then write {flag} as a plain integer: this release "
                     "reads it as {type_name} and refused '{value}'",
        error_kind="err_argument"),
    FailureClass(  # a config error, not memory: vLLM's config checks refuse it before loading anything
        Failure.CONFIG_REFUSED, "vLLM's configuration check refused the settings before loading anything "
                                "(ValueError/AssertionError at startup)",
        step=1, hint="roll back to the last known-good revision, then fix the setting or environment variable the "
                     "error names (V0 without chunked prefill: --max-num-batched-tokens at least --max-model-len)",
        precise_hint="roll back to the last known-good revision, then set --max-num-batched-tokens ≥ "
                     "{max_model_len} (it was {max_num_batched_tokens}; without chunked prefill vLLM refuses less), "
                     "or --enable-chunked-prefill"),
    FailureClass(  # not memory nor a setting: the model itself could not be had (vllm.startup_log.model_errors)
        Failure.MODEL_UNAVAILABLE, "vLLM could not get the model's config.json: no such repository, revision or "
                                   "local directory, or the Hugging Face Hub refused access (gated, token)",
        step=1, hint="roll back to the last known-good revision, then correct --model / --revision, mount the "
                     "model's volume, or give the pod an HF_TOKEN with access to the repository",
        precise_hint="roll back to the last known-good revision, then {advice}"),
    FailureClass(
        Failure.UNKNOWN, "the start failed with something this tool does not recognise",
        step=1, hint="roll back to the last known-good revision, then read the evidence below"),
)

FAILURES: dict[Failure, FailureClass] = {c.failure: c for c in _CLASSES}
if set(FAILURES) != set(Failure):  # a new enum member without its entry must fail at import, not at 3 a.m.
    raise RuntimeError(f"failure classes without a registry entry: {sorted(set(Failure) - set(FAILURES))}")

#: The vLLM error message kind → the class it names exactly (the classifier's specific errors).
ERROR_KINDS: dict[str, Failure] = {c.error_kind: c.failure for c in _CLASSES if c.error_kind}
#: Traceback phase of a raw CUDA OOM → its class; OOMs in other phases have no class of their own.
OOM_PHASES: dict[str, Failure] = {c.oom_phase: c.failure for c in _CLASSES if c.oom_phase}


def failure_class(failure: Failure | str) -> FailureClass:
    """The entry for a ``Failure`` or its value; a value this version does not know reads as ``unknown``
    (facts and reports carry plain strings)."""
    try:
        return FAILURES[Failure(failure)]
    except ValueError:
        return FAILURES[Failure.UNKNOWN]
