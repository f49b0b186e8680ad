"""Which ``Failure`` a log shows, from the ordered events the parser found, and the pod status rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.vllm.failures import ERROR_KINDS, OOM_PHASES
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log.model_errors import REASON_ORDER
from vllm_remedy.vllm.startup_log.report import StartupReport

# A raw CUDA OOM is placed by the traceback frames around it; first matching phase wins. The registry says
# which phases are a class of their own (``OOM_PHASES``); vLLM's deliberate errors name theirs (``ERROR_KINDS``).
_PHASES = (
    ("sampler_warmup", frozenset({"_dummy_sampler_run"})),
    ("cuda_graph_capture", frozenset({"capture_model", "_capture_cudagraphs", "capture"})),
    # The cache's own allocation (V1 initialize_kv_cache -> _allocate_kv_cache_tensors' torch.zeros,
    # v1/worker/gpu_model_runner.py@0.11.0; V0 cache_engine's _allocate_kv_cache): a cache the card cannot hold
    # (Failure.KV_CACHE_ALLOCATION_OOM).
    ("kv_cache_allocation", frozenset({"initialize_kv_cache", "_allocate_kv_cache", "initialize_cache",
                                       "_allocate_kv_cache_tensors", "_reshape_kv_cache_tensors"})),
    # Warm-up forwards after the KV cache exists (V1 compile_or_warm_up_model runs _dummy_run per compile size,
    # v1/worker/gpu_worker.py@0.19.0): not the profile, and no class of their own.
    ("warmup", frozenset({"compile_or_warm_up_model", "_warm_up_model"})),
    # The memory-profiling forward, before any KV check (Failure.PROFILE_OOM): V1 determine_available_memory ->
    # profile_run -> _dummy_run (v1/worker/gpu_worker.py and gpu_model_runner.py@0.19.0; Model Runner V2's
    # profile_run -> _dummy_run -> execute_model, v1/worker/gpu/model_runner.py@0.28.0), V0
    # determine_num_available_blocks -> profile_run -> execute_model (worker/worker.py, model_runner.py@0.6.6).
    ("profiling", frozenset({"profile_run", "_dummy_run", "determine_available_memory",
                             "determine_num_available_blocks"})),
    ("loading_weights", frozenset({"load_model", "load_weights", "get_model", "create_weights",
                                   "_initialize_model", "initialize_model", "make_layers"})),
    ("serving", frozenset({"execute_model", "execute_model_async", "step", "step_async",
                           "chat_completion_stream_generator", "run_busy_loop", "_process_engine_step"})),
)
_FRAME_WINDOW = 400  # lines around the first OOM whose frames belong to its traceback(s)


@dataclass(frozen=True)
class Event:
    """Something that happened at a line: an error, a traceback frame, a loading step."""

    kind: str
    index: int
    rank: int
    values: dict[str, Any] = field(default_factory=dict)
    evidence: bool = True


def failure_from_events(events: list[Event], up_index: int | None, weights_index: int | None,
                        sized: bool) -> tuple[Failure, dict[str, Any], int | None]:
    """(failure, detail, index of the fatal line) judged from the log alone.

    ``sized``: the log printed a KV-cache size, so a log that simply stops afterwards is a start
    that had got past every memory check (truncated, not failed).
    """
    if missing := [e for e in events if e.kind == "model_unavailable" and (up_index is None or e.index < up_index)]:
        return Failure.MODEL_UNAVAILABLE, _merged(missing), missing[0].index
    for event in events:
        if event.kind in ERROR_KINDS:
            return ERROR_KINDS[event.kind], _detail(event), event.index
        if event.kind == "config_refused":  # matched by ``config_errors``, not one log_formats message
            return Failure.CONFIG_REFUSED, dict(event.values), event.index
    ooms = [e for e in events if e.kind in ("cuda_oom", "err_load_oom")]
    if ooms:
        return _oom(events, ooms, up_index, weights_index)
    crashes = [e for e in events if e.kind == "crash" or (e.kind == "exception" and up_index is None)]
    if crashes:
        errors = [e for e in events if e.kind in ("exception", "crash")]
        return Failure.UNKNOWN, {"error": errors[-1].values["error"]}, crashes[0].index
    if up_index is not None or sized:
        return Failure.NONE, {}, None
    return Failure.UNKNOWN, {}, None


def _merged(events: list[Event]) -> dict[str, Any]:
    """One detail from an error's lines: the most specific reason (``model_errors.REASON_ORDER``), and the model
    whichever line names it."""
    detail: dict[str, Any] = {}
    for event in sorted(events, key=lambda e: REASON_ORDER.index(e.values["reason"])):
        for key, value in event.values.items():
            detail.setdefault(key, value)
    return detail


def _detail(event: Event) -> dict[str, Any]:
    detail = dict(event.values)
    if event.kind == "err_max_len" and "suggested_max_model_len" not in detail and "kv_cache_tokens" in detail:
        # V0 prints the tokens the cache holds; a max_model_len up to that number starts.
        detail["suggested_max_model_len"] = detail["kv_cache_tokens"]
    if event.kind == "err_max_len_model":
        # vLLM prints the derived length as its number ("32768", or "131072.0" once a rope factor scaled it) and a
        # missing model_max_length as "None"; the detail carries whole tokens (the longest --max-model-len it takes).
        for key in ("derived_max_model_len", "model_max_length"):
            detail[key] = _whole(detail.get(key))
    return detail


def _whole(text: Any) -> int | None:
    try:
        return int(float(str(text).replace(",", "")))
    except ValueError:
        return None


def _oom(events: list[Event], ooms: list[Event], up_index: int | None,
         weights_index: int | None) -> tuple[Failure, dict[str, Any], int | None]:
    first = ooms[0]
    detail: dict[str, Any] = {}
    for event in sorted(ooms, key=lambda e: (e.rank, e.index)):
        for key, value in event.values.items():
            detail.setdefault(key, value)
    if up_index is not None and up_index < first.index:
        detail["phase"] = "serving"
        return Failure.OOM_UNDER_LOAD, detail, first.index
    phase = _phase(events, first) or _capturing(events, first)
    if phase is None and any(e.kind == "err_load_oom" for e in ooms):
        phase = "loading_weights"
    if phase is None:
        loading = [e.index for e in events if e.kind == "loading" and e.index < first.index]
        if loading and (weights_index is None or weights_index > first.index):
            phase = "loading_weights"
    detail["phase"] = phase or "unknown"
    # "serving" frames mean the server was up even if the log lost that line. Phases without a class of their own
    # (a warm-up forward, an OOM no frame places) read as unknown + phase.
    return OOM_PHASES.get(detail["phase"], Failure.UNKNOWN), detail, first.index


def _capturing(events: list[Event], oom: Event) -> str | None:
    """"cuda_graph_capture" when a capture had started before the OOM and none had finished since: vLLM
    captures after sizing the KV cache, so this OOM is the graphs' (Ray and docker logs often lose the frames)."""
    started = [e.index for e in events if e.kind == "capturing" and e.index < oom.index]
    if not started:
        return None
    finished = [e.index for e in events if e.kind == "captured" and started[-1] < e.index < oom.index]
    return None if finished else "cuda_graph_capture"


def _phase(events: list[Event], oom: Event) -> str | None:
    functions = {e.values["function"] for e in events
                 if e.kind == "frame" and abs(e.index - oom.index) <= _FRAME_WINDOW}
    for phase, names in _PHASES:
        if functions & names:
            return phase
    return None


def status_failure(exit_code: int | None, reason: str | None) -> Failure | None:
    """The failure the pod status alone shows, if any: the kernel's OOM killer, which vLLM's log cannot.

    ``reason`` OOMKilled, or exit code 137 with no other reason given, means the container was
    killed for host memory. Exit 137 with another reason (e.g. a liveness-probe kill, reason "Error")
    is left to the log.
    """
    if reason is not None and reason.strip().lower() == "oomkilled":
        return Failure.HOST_OOM_KILLED
    if exit_code == 137 and not reason:
        return Failure.HOST_OOM_KILLED
    return None


def classify(report: StartupReport, *, exit_code: int | None = None, reason: str | None = None) -> Failure:
    """The failure, letting the pod status win where only it can know (see ``status_failure``)."""
    from_status = status_failure(exit_code, reason)
    return report.failure if from_status is None else from_status
