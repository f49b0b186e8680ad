"""When each line of a simulated vLLM start appears, and how the start ends.

The text comes from ``render_startup_log`` (the version's real formats); this module only places it
in simulated time. Durations, in simulated seconds from container start (documented, not measured):

- ``BOOT_SECONDS`` (8): imports, argument parsing, engine init — then "Starting to load model".
- weights are loaded ``LOAD_BASE_SECONDS + LOAD_SECONDS_PER_GIB × weights GiB`` after start
  (20 s + 4 s/GiB: Llama-3.1-8B's 15 GiB take 80 s, i.e. 1.3 s of wall time at speed 60).
- ``PROFILE_SECONDS`` (5) of memory profiling, then the KV-cache lines; KV errors end the run here (a CUDA OOM in
  the profiling forward half-way through it).
- ``GRAPH_SECONDS`` (12) of CUDA-graph capture (none with --enforce-eager), then the HTTP server is up
  ``UP_SECONDS`` (3) later: that is when /health answers 200 and the readiness probe passes.
- A CUDA OOM while loading weights happens at the share of the checkpoint that fitted; a host OOM kill
  half-way through reading it; a free-memory refusal right after boot; a --max-model-len above the model's
  maximum ``CONFIG_SECONDS`` (3) in, at config validation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from vllm_remedy.sim.runtime import Exit, LogLine
from vllm_remedy.sim.vllm_pod import device, entry_log, flag_sized, overcommit, ray_log_sources, refusal_frames
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal
from vllm_remedy.sim.vllm_pod.unmodelled_start import SOURCE as REHEARSAL
from vllm_remedy.sim.vllm_pod.unmodelled_start import STAGE as UNPLAYED
from vllm_remedy.vllm import dtype_support, kv_auto, model_len
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import render_startup_log
from vllm_remedy.vllm.startup_log.parse import CAPTURING
from vllm_remedy.vllm.version_labels import NEWEST_MODELLED, OLDEST_MODELLED, newest_rules
from vllm_remedy.vllm.versions import VersionRules, parse_version, rules

BOOT_SECONDS = 8.0
LOAD_BASE_SECONDS = 20.0
LOAD_SECONDS_PER_GIB = 4.0
PROFILE_SECONDS = 5.0
GRAPH_SECONDS = 12.0
UP_SECONDS = 3.0
LINE_GAP = 0.1  # between consecutive lines of one phase
CONFIG_SECONDS = 3.0  # an error in vLLM's config validation: arguments parsed, no engine, no GPU touched

_STAMP = re.compile(r"\b\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b")
# the crash tail starts at the first ERROR record, or at Python's own print of an exception that escaped a process
_ERROR = re.compile(r"(?:^|\s)ERROR \d{2}-\d{2} \d{2}:|Traceback \(most recent call last\)|^Process SpawnProcess-\d+:$")
# Phase markers in the order a start passes them; a line that matches none stays in the current phase.
_MARKERS: tuple[tuple[str, str], ...] = (
    ("Starting to load model", "loading"),
    ("Loading model from scratch", "loading"),  # Model Runner V2's wording
    ("Loading safetensors checkpoint shards", "partial"),
    ("Loading model weights took", "weights"),
    ("Model loading took", "weights"),
    ("Memory profiling", "profiled"),
    ("the current vLLM instance can use", "profiled"),
    ("Available KV cache memory", "profiled"),
    ("Auto-fit max_model_len", "profiled"),
    ("blocks:", "profiled"),
    ("GPU KV cache size", "profiled"),
    ("Maximum concurrency", "profiled"),
    ("Capturing CUDA graph", "graphs"),  # tqdm's bar, in the log once it closes
    ("Graph capturing finished", "graphs"),
    ("Memory after warmup", "graphs"),  # 0.34: the KV cache is sized after capture (stays in the graphs phase)
    ("Starting vLLM", "up"),
    ("INFO:     ", "up"),
)
_ORDER = ("boot", "loading", "partial", "weights", "profiled", "graphs", "up")


@dataclass(frozen=True)
class Plan:
    """A run decided at start: timed startup lines, readiness, and the exit (None = keeps serving)."""

    lines: tuple[LogLine, ...]
    ready_after: float | None
    exit: Exit | None
    startup_text: str  # the rendered startup log (no failure), reused for the OOM-under-load tail


def load_seconds(weights_gib: float) -> float:
    """Seconds from container start until "Model loading took" (the weights are in GPU memory)."""
    return LOAD_BASE_SECONDS + LOAD_SECONDS_PER_GIB * weights_gib


def render(launch: Launch, failure: Failure, started: datetime, detail: dict[str, object] | None = None) -> str:
    """The version's startup log for this launch, ending in ``failure``."""
    est, res = launch.estimate, launch.resolved
    return flag_extrapolated(launch.version, named=launch.version_named, unmodelled=launch.unmodelled,
                             text=entry_log.rewrite(render_startup_log(
        launch.version, model=launch.model_id, tp_size=res.tp, weights_gib=est.weights_gib,
        kv_cache_gib=est.kv_cache_gib, kv_cache_tokens=est.kv_cache_tokens, gpu_blocks=est.gpu_blocks,
        max_concurrency=est.max_concurrency, max_model_len=est.max_model_len,
        cudagraph_gib=None if res.enforce_eager or res.cudagraphs_off else est.cudagraph_gib,
        total_gpu_gib=launch.gpu.total_gib,
        gpu_memory_utilization=res.util, activation_gib=est.activation_gib, non_torch_gib=est.non_torch_gib,
        failure=failure, failure_detail=detail or _detail(launch, failure), block_size=res.block_size,
        started=started, enforce_eager=res.enforce_eager, max_num_seqs=launch.settings.max_num_seqs,
        revision=launch.revision, utilization_set=_listed_utilization(launch),
        max_model_len_arg=launch.settings.max_model_len, long_len=_long_len(launch), typed=_typed(launch),
        runner_v2=res.runner_v2, free_at_start_gib=_free_at_start(launch),
        derived_max_model_len=launch.model.max_model_len, pinned=flag_sized.log_pins(launch), parallel=launch.parallel,
        engine=res.rules.engine.lower()),  # the engine that runs: V0 where VLLM_USE_V1=0 or a fallback selects it
        launch.args_model))


def _free_at_start(launch: Launch) -> float:
    """What vLLM's startup snapshot sees free: the card less other processes and what the process held then (its
    CUDA context; NCCL too from 0.11, ``device.held_at_snapshot``) (the advisory's first figure, INFO from 0.26)."""
    res = launch.resolved
    return max(0.0, launch.gpu.total_gib - device.held_at_snapshot(launch) - res.other_process_gib)


def _typed(launch: Launch) -> dict[str, object]:
    """The arguments line's other memory flags as the command line set them (an unset or "auto" one is not listed)."""
    s = launch.settings
    out: dict[str, object] = {}
    for name, value in (("dtype", s.dtype), ("kv_cache_dtype", s.kv_cache_dtype)):
        if value != "auto":
            out[name] = value
    if s.max_num_batched_tokens is not None:
        out["max_num_batched_tokens"] = s.max_num_batched_tokens
    # a compressed-tensors KV scheme is applied later, in the worker's Attention layers (kv_auto): the line keeps it
    if launch.resolved.kv_cache_dtype != s.kv_cache_dtype and launch.model.kv_quant not in (kv_auto.CT_FP8,
                                                                                           kv_auto.CT_OTHER):
        # auto resolved from the checkpoint (kv_auto): the engine
        out["cache_dtype"] = launch.resolved.kv_cache_dtype  # line prints cache_config.cache_dtype (config/vllm.py)
    cap = launch.gpu.capability
    if s.dtype == "auto":  # the dtype auto resolves to (a float32 or dtype-less checkpoint's by release: dtype_support)
        out["torch_dtype"] = dtype_support.resolved(launch.model.dtype, s.dtype, cap, launch.version,
                                                    launch.model.model_types)
    if dtype_support.fell_back(launch.model.dtype, s.dtype, cap, launch.version):  # vLLM warns, runs the preferred
        name = dtype_support.detail(launch.gpu.product, cap)  # dtype: float16, float32 for gemma2 & co (0.9.1+)
        at = f"(with compute capability {name['capability']})"  # 0.9.0's words differ (dtype_support)
        out["dtype_fallback"] = (f"device '{name['gpu_name']}' {at}" if dtype_support.falls_back(launch.version)
                                 else f"{name['gpu_name']} device {at}")
    return out


def _long_len(launch: Launch) -> dict[str, object] | None:
    """The figures of the warning vLLM logs for a --max-model-len above the model's that the env var let through."""
    typed = launch.settings.max_model_len
    if not launch.settings.allow_long_max_model_len or typed is None:
        return None
    lim = model_len.refused(launch.model, typed, launch.version, allowed=False)
    return model_len.detail(lim, typed) if lim is not None else None


def _listed_utilization(launch: Launch) -> bool:
    """Whether "non-default args" lists the utilization: vLLM lists a flag the command line sets to a value other
    than the parser's default (entrypoints/utils.py log_non_default_args), never an unset one."""
    return launch.utilization_set and launch.resolved.util != rules(launch.version).default_gpu_memory_utilization


def _beyond(r: VersionRules) -> str:
    if r.pre_release:  # its ``version`` is the release before it (0.6.3 for 0.6.4.dev0)
        return "a pre-release, which comes before its release"
    if r.version < OLDEST_MODELLED:
        return "older than the oldest modelled release"
    if r.version > NEWEST_MODELLED:
        return "newer than the newest modelled release"
    return f"newer than the last modelled {r.version[0]}.{r.version[1]} release"  # 0.27.2: 0.27.1 was read


def flag_extrapolated(version: str, text: str, named: bool = True, unmodelled: tuple[str, ...] = ()) -> str:
    """A release whose rules were not read from its source says so in the pod's log, before its arguments, and so
    does an image naming no vLLM version (``named`` False: ``version`` is then the newest release, whose rules it
    runs): the rehearsal's numbers are never presented as a release's own when they are not. Each option it took
    without a rule (``unmodelled``: perhaps added after the newest release read, ``launch.Launch.unmodelled``) is
    named on a line of its own, as check and plan name it "not judged"."""
    r = rules(version)
    if named and not r.extrapolated:
        return text
    said = [f"vLLM {r.display} is {_beyond(r)}: memory rules {r.provenance}" if named
            else f"the image names no vLLM version: memory {newest_rules()}"]
    said += [f"{o} is not an option of vLLM {NEWEST_MODELLED[0]}.{NEWEST_MODELLED[1]}.{NEWEST_MODELLED[2]}, the newest "
             f"release read: taken as {r.display if named else 'the image'}'s, its effect not modelled"
             for o in unmodelled]
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if "non-default args" in line), min(1, len(lines)))
    stamp = _STAMP.search(lines[at - 1]) if at else None
    notes = [f"{_prefix(lines[at - 1]) if at else ''}WARNING {stamp.group(0) if stamp else '01-01 00:00:00'} "
             f"[vllm-remedy rehearsal] {one}" for one in said]
    return "\n".join([*lines[:at], *notes, *lines[at:]]) + ("\n" if text.endswith("\n") else "")


def _detail(launch: Launch, failure: Failure) -> dict[str, object]:
    est, res = launch.estimate, launch.resolved
    if failure is Failure.MAX_LEN_EXCEEDS_KV:
        detail: dict[str, object] = {"needed_gib": est.needed_kv_gib or 0.0, "available_gib": est.kv_cache_gib,
                                     "kv_cache_tokens": est.kv_cache_tokens}
        if est.suggested_max_model_len is not None:
            detail["suggested_max_model_len"] = est.suggested_max_model_len
        return detail
    if failure is Failure.MAX_LEN_EXCEEDS_MODEL and launch.settings.max_model_len is not None:
        return model_len.detail(model_len.limit(launch.model, launch.version), launch.settings.max_model_len)
    if failure is Failure.DTYPE_UNSUPPORTED:
        return dict(dtype_support.detail(launch.gpu.product, launch.gpu.capability))
    if failure is Failure.FREE_MEMORY_BELOW_UTILIZATION:
        return {"free_gib": _free_at_start(launch), "requested_gib": launch.gpu.total_gib * res.util}
    if failure is Failure.OOM_LOADING_WEIGHTS:
        shard = est.weights_gib / max(1, launch.model.num_layers)
        return {"tried_to_allocate_gib": shard, "free_gib": min(shard / 3, 0.3)}
    if failure is Failure.PROFILE_OOM:
        return _profile_oom_detail(launch)
    return {}


def _profile_oom_detail(launch: Launch) -> dict[str, object]:
    """The profiling forward's failed allocation: one of its larger transients (taken as a quarter of the activation
    peak), asked of what is left once the rest of the peak is held; torch says what was free, below the ask."""
    est, res = launch.estimate, launch.resolved
    tried = max(est.activation_gib / 4, 0.02)
    held = res.other_process_gib + device.held_running(launch) + est.weights_gib + est.non_torch_gib
    left = launch.gpu.total_gib - held - (est.activation_gib - tried)
    return {"tried_to_allocate_gib": tried, "free_gib": min(max(left, 0.0), tried * 0.9)}


def plan_start(launch: Launch, started: datetime, oom_killed: bool = False) -> Plan:
    """Place the start of ``launch`` in time and decide how it ends."""
    est = launch.estimate
    failure = Failure.HOST_OOM_KILLED if oom_killed else est.outcome.failure
    loaded = load_seconds(est.weights_gib)
    times = {"boot": 0.0, "loading": BOOT_SECONDS, "weights": loaded, "profiled": loaded + PROFILE_SECONDS}
    no_graphs = launch.resolved.enforce_eager or launch.resolved.cudagraphs_off  # --compilation-config too
    times["graphs"] = times["profiled"] + (0.0 if no_graphs else GRAPH_SECONDS)
    times["up"] = times["graphs"] + UP_SECONDS
    fitted = _loaded_share(launch) if failure is Failure.OOM_LOADING_WEIGHTS else 0.5
    times["partial"] = BOOT_SECONDS + (loaded - BOOT_SECONDS) * fitted
    text = render(launch, failure, started)
    startup_text = text if failure is Failure.NONE else render(launch, Failure.NONE, started)
    if failure is Failure.NONE and (where := overcommit.step(launch)) is not None:
        return _overcommitted(launch, where, times, started, startup_text)
    lines, tail = _split(text)
    timed = _place(lines, times, started, launch)
    if failure is Failure.NONE:
        return Plan(tuple(timed), timed[-1].offset if timed else times["up"], None, startup_text)
    if failure is Failure.HOST_OOM_KILLED:
        return Plan(tuple(timed), None, Exit(times["partial"] + 0.5, 137, "OOMKilled"), startup_text)
    end = {Failure.FREE_MEMORY_BELOW_UTILIZATION: BOOT_SECONDS + 1.0, Failure.MAX_LEN_EXCEEDS_MODEL: CONFIG_SECONDS,
           Failure.DTYPE_UNSUPPORTED: BOOT_SECONDS + 1.0,
           Failure.OOM_LOADING_WEIGHTS: times["partial"] + 0.5,
           Failure.PROFILE_OOM: times["weights"] + PROFILE_SECONDS / 2}.get(failure, times["profiled"] + 1.0)
    exit_ = Exit(end, 1, "Error", tuple(stamp_all(tail, started + timedelta(seconds=end))))
    return Plan(tuple(timed), None, exit_, startup_text)


def _overcommitted(launch: Launch, where: str, times: dict[str, float], started: datetime,
                   startup_text: str) -> Plan:
    """Every check passed, then PyTorch's allocator failed (KV allocation or graph capture)."""
    lines = _split(startup_text)[0]
    # A KV-cache allocation dies before any capture begins: cut at the parser's own capture-start markers (V0's
    # "Capturing cudagraphs for decoding" placed a later OOM in capture); a capture OOM after the capture began.
    cut = (*CAPTURING, "Graph capturing") if where == "kv" else ("Graph capturing", "Capturing CUDA graph")
    lines = lines[:next((i for i, line in enumerate(lines) if any(m in line for m in cut)), len(lines))]
    lines = [line for line in lines if not any(m in line for m in ("Starting vLLM", "INFO:     "))]
    timed = _place(lines, times, started, launch)
    tried, free = overcommit.allocation(launch, where)
    end = times["graphs"] if where == "graphs" else times["profiled"] + 0.5
    text = render(launch, Failure.OOM_UNDER_LOAD, started, {"tried_to_allocate_gib": tried, "free_gib": free})
    tail = overcommit.retarget(text.splitlines()[len(startup_text.splitlines()):],
                               launch.resolved.rules.engine.lower(), where, launch.version)
    exit_ = Exit(end, 1, "Error", tuple(stamp_all(tail, started + timedelta(seconds=end))))
    return Plan(tuple(timed), None, exit_, startup_text)


def plan_refusal(refusal: Refusal, started: datetime) -> Plan:
    """An exception before the engine exists: the version's banner and args, then the traceback; argparse's refusal
    (stage ``argparse``) is only its usage and error lines on stderr, exit 2, before vLLM logs anything."""
    if refusal.stage == "argparse":
        return Plan((), None, Exit(1.0, 2, "Error", tuple(refusal.error.splitlines())), "")
    if refusal.stage == "cli":  # raised by the CLI around argparse (``serve_model``): the traceback alone, exit 1
        said = ["Traceback (most recent call last):"]
        for path, line, function, code in refusal.frames:
            said += [f'  File "{path}", line {line}, in {function}', f"    {code}"]
        return Plan((), None, Exit(1.0, 1, "Error", (*said, *refusal.error.splitlines())), "")
    # the pod's own arguments in "non-default args" (not a stand-in length and utilization)
    typed_len, util = refusal.max_model_len, refusal.gpu_memory_utilization
    # listed only when it differs from the parser's default (``_listed_utilization``), as --revision and
    # --max-num-seqs are whenever typed
    listed = util is not None and util != rules(refusal.version).default_gpu_memory_utilization
    text = flag_extrapolated(refusal.version, named=refusal.version_named, unmodelled=refusal.unmodelled,
                             text=entry_log.rewrite(render_startup_log(
        refusal.version, model=refusal.model_id, tp_size=refusal.tensor_parallel_size or 1, weights_gib=0.0,
        kv_cache_gib=None, max_model_len=typed_len or 2048, revision=refusal.revision,
        max_num_seqs=refusal.max_num_seqs, max_model_len_arg=0 if typed_len else None,
        gpu_memory_utilization=util if util is not None else 0.9, utilization_set=listed, total_gpu_gib=0.0,
        failure=Failure.HOST_OOM_KILLED, started=started,
        typed={"max_num_batched_tokens": refusal.max_num_batched_tokens} if refusal.max_num_batched_tokens else None),
        refusal.args_model))
    lines = text.splitlines()
    cut = next((i for i, line in enumerate(lines) if "Initializing" in line), len(lines))
    keep = lines[:cut] if refusal.stage in ("config", UNPLAYED) else lines[:cut + 1]
    prefix = _prefix(keep[-1]) if keep else ""
    if refusal.stage == UNPLAYED:  # the rehearsal's own record, no exception: runs on, /health never answers
        said = [f"{prefix}WARNING 01-01 00:00:00 [{REHEARSAL}] {refusal.error}"]
        return Plan(tuple(LogLine(round(i * LINE_GAP, 3), _stamp(line, started + timedelta(seconds=i * LINE_GAP)))
                          for i, line in enumerate([*keep, *said])), None, None, "")
    end = 3.0 if refusal.stage == "config" else BOOT_SECONDS
    frames = refusal_frames.frames(refusal.stage)
    if refusal.stage == "executor" and not refusal.waits:  # 0.6.4.post1 raised before any placement group
        frames = [(frames[0][0], 283, "initialize_ray_cluster", "raise ValueError(")]
    if refusal.frames:  # its own frames below run_server (``config_refusal``), not the stage's last one
        frames = [*refusal_frames.frames("config")[:4], *refusal.frames]
    if refusal.module and frames and frames[0][0] == "/usr/local/bin/vllm":  # python -m ...api_server: runpy's
        frames = [*entry_log.module_frames(parse_version(refusal.version) or NEWEST_MODELLED), *frames[3:]]
    tail = [f"{prefix}Traceback (most recent call last):"]
    for path, line, function, code in frames:
        tail += [f'{prefix}  File "{path}", line {line}, in {function}', *([f"{prefix}    {code}"] if code else [])]
    tail += [f"{prefix}{part}" for part in refusal.error.splitlines()]
    timed = [LogLine(round(i * LINE_GAP, 3), _stamp(line, started + timedelta(seconds=i * LINE_GAP)))
             for i, line in enumerate(keep)]
    # Ray's wait for the placement group, the Hub listing's retries: on the cluster's clock, from the stage's start
    for n, (after, level, message) in enumerate(refusal.waits):
        at = (CONFIG_SECONDS if refusal.stage == "config" else BOOT_SECONDS) + after
        source = (refusal.waits_from[n] if n < len(refusal.waits_from) else  # else Ray's, at the release's line
                  ray_log_sources.source(parse_version(refusal.version) or NEWEST_MODELLED, message))
        timed += [LogLine(at, _stamp(line, started + timedelta(seconds=at)))
                  for line in _logged(keep[-1] if keep else "", level, source, message)]
        end = max(end, at)
    return Plan(tuple(timed), None, Exit(end, 1, "Error", tuple(stamp_all(tail, started + timedelta(seconds=end)))),
                "")


def _logged(like: str, level: str, source: str, message: str) -> list[str]:
    """A record of ``source`` ("file.py:N") in the format of the rendered line ``like`` (its process prefix, and the
    brackets round the source from 0.6.5's ``file.py:N]`` to 0.11's ``[file.py:N]``), its prefix repeated on each line
    of a message that spans several, as vLLM's NewLineFormatter does."""
    match = re.match(r"^(.*?)(?:INFO|WARNING) (\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (\[?)", like)
    head = (f"{level} 01-01 00:00:00 [{source}] " if match is None else
            f"{match.group(1)}{level} {match.group(2)} {match.group(3)}{source}] ")
    return [f"{head}{line}" for line in message.split("\n")]


def oom_under_load_tail(launch: Launch, startup_text: str, started: datetime, at: datetime,
                        tried_gib: float, free_gib: float) -> tuple[str, ...]:
    """The lines a running engine prints when a request runs the GPU out of memory (at ``at``)."""
    text = render(launch, Failure.OOM_UNDER_LOAD, started,
                  {"tried_to_allocate_gib": tried_gib, "free_gib": max(free_gib, 0.0)})
    before = len(startup_text.splitlines())
    return tuple(stamp_all(text.splitlines()[before:], at))


def stamp_all(lines: list[str] | tuple[str, ...], at: datetime) -> list[str]:
    """Re-time rendered lines to ``at`` (vLLM's ``MM-DD HH:MM:SS``), so a crash tail carries the simulated
    moment of the crash rather than the render's."""
    return [_stamp(line, at) for line in lines]


def _split(text: str) -> tuple[list[str], list[str]]:
    """Startup lines, and the error tail printed when the process dies."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if _ERROR.search(line)), len(lines))
    return lines[:first], lines[first:]


def _place(lines: list[str], times: dict[str, float], started: datetime, launch: Launch) -> list[LogLine]:
    out: list[LogLine] = []
    phase, count = "boot", 0
    for line in lines:
        found = next((p for marker, p in _MARKERS if marker in line), None)
        if found is not None and _ORDER.index(found) > _ORDER.index(phase):
            phase, count = found, 0
        offset = round(times[phase] + count * LINE_GAP, 3)
        count += 1
        out.append(LogLine(offset, _stamp(_durations(line, times), started + timedelta(seconds=offset))))
    return out


def _durations(line: str, times: dict[str, float]) -> str:
    """Make the durations vLLM prints agree with the simulated ones."""
    if "Model loading took" in line:
        return re.sub(r"and [\d.]+ seconds", f"and {times['weights'] - BOOT_SECONDS:.6f} seconds", line)
    if "Memory profiling takes" in line:
        return re.sub(r"takes [\d.]+ seconds", f"takes {PROFILE_SECONDS:.2f} seconds", line)
    if "Graph capturing finished" in line:
        return re.sub(r"finished in \d+ secs", f"finished in {GRAPH_SECONDS:.0f} secs", line)
    if "Capturing CUDA graph" in line:
        return re.sub(r"\[00:\d\d<", f"[00:{GRAPH_SECONDS:02.0f}<", line)
    return line


def _stamp(line: str, at: datetime) -> str:
    return _STAMP.sub(at.strftime("%m-%d %H:%M:%S"), line, count=1)


def _prefix(line: str) -> str:
    """The process prefix of a rendered line ("(APIServer pid=1) " from 0.10.1), reused for stderr."""
    match = re.match(r"^((?:\x1b\[[0-9;]*m)?\([^)]*\)(?:\x1b\[[0-9;]*m)? )", line)
    return match.group(1) if match else ""


def _loaded_share(launch: Launch) -> float:
    """Share of the checkpoint in GPU memory when loading runs out of it."""
    room = launch.gpu.total_gib - device.held_running(launch) - launch.resolved.other_process_gib
    return min(0.95, max(0.05, room / max(launch.estimate.weights_gib, 1e-6)))


def sim_datetime(seconds: float) -> datetime:
    """A simulated-clock instant as the naive UTC datetime vLLM's log header shows."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).replace(tzinfo=None)
