"""Read a vLLM container log into a ``StartupReport`` (figures, engine, identity, failure)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllm_remedy.vllm.log_formats import (
    TEMPLATES,
    TEXT_SPECS,
    UP_MARKERS,
    Template,
    compiled,
    default_engine,
    field_specs,
    parse_version,
    to_number,
)
from vllm_remedy.vllm.startup_log import config_errors, model_errors, unplayed
from vllm_remedy.vllm.startup_log.failure import Event, failure_from_events
from vllm_remedy.vllm.startup_log.lines import Line, split_lines
from vllm_remedy.vllm.startup_log.report import StartupReport
from vllm_remedy.vllm.versions import rules

# KV capacity is the minimum over ranks (vLLM sizes the cache for the smallest rank); the rest
# is taken from rank 0, the driver whose numbers vLLM reports.
_MIN_OVER_RANKS = frozenset({"kv_cache_gib", "gpu_blocks", "kv_cache_tokens", "max_concurrency", "extended_kv_gib",
                             "final_kv_gib"})
# The last one logged wins: 0.34 fits --max-model-len auto twice (reserved capacity, then after warmup); Model
# Runner V2 from 0.29 captures once while profiling (a throwaway pool, gpu/cudagraph_utils.py@0.29.0) and logs
# "Graph capturing finished" for it before the real capture, which the advisory then reports.
_LAST_LOGGED = frozenset({"auto_fit_max_model_len", "cudagraph_gib"})
_REPORT_FIELDS = ("weights_gib", "activation_gib", "non_torch_gib", "kv_cache_gib", "gpu_blocks",
                  "kv_cache_tokens", "max_concurrency", "concurrency_max_len", "cudagraph_gib",
                  "total_gpu_gib", "gpu_memory_utilization", "consumed_gib", "peak_activation_gib")
_INT_FIELDS = frozenset({"gpu_blocks", "kv_cache_tokens", "concurrency_max_len", "max_model_len", "tp_size"})

_VERSION = (re.compile(r"vLLM API server version (\d[\w.+-]*)"),
            re.compile(r"Initializing an? (?:V[01] )?LLM engine \(v(\d[^)\s]*)\)"),
            re.compile(r"█.*\bversion (\d[\w.+-]*)"))
_MODEL = (re.compile(r"with config: model='([^']+)'"), re.compile(r"with config: model=([^,\s']+),"),
          re.compile(r"█.*\bmodel\s+(\S+)"), re.compile(r"'model': '([^']+)'"),
          re.compile(r"'model_tag': '([^']+)'"), re.compile(r"Namespace\(.*\bmodel='([^']+)'"),
          re.compile(r"Starting to load model (\S+?)\.\.\."))
_TP = (re.compile(r"with config: .*\btensor_parallel_size=(\d+)"), re.compile(r"'tensor_parallel_size': (\d+)"),
       re.compile(r"Namespace\(.*\btensor_parallel_size=(\d+)"))
_MAX_LEN = (re.compile(r"with config: .*\bmax_seq_len=(\d+)"), re.compile(r"Using max model len (\d+)"),
            re.compile(r"'max_model_len': (\d+)"), re.compile(r"Namespace\(.*\bmax_model_len=(\d+)"))
_UTIL = (re.compile(r"'gpu_memory_utilization': ([\d.]+)"),
         re.compile(r"Namespace\(.*\bgpu_memory_utilization=([\d.]+)"))
# The V1 sampler says which top-k/top-p path it took (vllm/v1/sample/ops/topk_topp_sampler.py, 0.7-0.11).
_FLASHINFER_ON = "Using FlashInfer for top-p & top-k sampling"
_FLASHINFER_OFF = "Falling back to the PyTorch-native implementation of top-p & top-k sampling"
_RUNNER_V2 = "Using V2 Model Runner"  # gpu_worker.py@0.21.0-@0.33.0; 0.34 has no other runner and does not say so
_V1_MARKERS = ("Initializing a V1 LLM engine", "EngineCore", "/v1/", "VllmWorker rank=", "(Worker",
               "warming up sampler")
_V0_MARKERS = ("Initializing a V0 LLM engine", "VllmWorkerProcess", "MQLLMEngine", "llm_engine.py")
_CUDA_OOM = re.compile(
    r"CUDA out of memory\.(?: Tried to allocate (?P<size>[\d.]+) (?P<unit>[KMGT]i?B)\.)?"
    r"(?: GPU (?P<gpu>\d+) has a total capac\w+ of (?P<total>[\d.]+) GiB(?: of which (?P<free>[\d.]+) "
    r"(?P<free_unit>[KMGT]i?B) is free)?)?|CUDA error: out of memory")
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(?P<name>\w*(?:Error|Exception)): ")
_CRASH = ("EngineCore failed to start", "Engine core initialization failed", "EngineDeadError",
          "Engine loop has died", "died unexpectedly", "MQLLMEngine is already dead", "Worker failed")
# torch's lazy CUDA init in a container the device plugin mounted no GPU into (no ``nvidia.com/gpu`` limit, or a rank
# past the pod's GPUs): README's ``world_size_exceeds_gpus``, like vLLM's own "World size (N) is larger ..." words.
_NO_GPU = re.compile(r"(?:^|\s)RuntimeError: No CUDA GPUs are available\s*$")
_LOADING = ("Starting to load model", "checkpoint shards", "Loading weights", "Loading model from")
# CUDA-graph capture starting (V0's announcement, V1's progress bar) and finishing: an OOM between the two,
# after the KV cache was sized, happened while capturing even when the log kept no traceback frames.
CAPTURING = ("Capturing cudagraphs", "Capturing the model for CUDA graphs", "Capturing CUDA graph")
_CAPTURED = ("Graph capturing finished",)


@dataclass
class _Matches:
    values: dict[str, list[tuple[int, int, float | int | str]]] = field(default_factory=dict)
    evidence: set[int] = field(default_factory=set)
    engines: set[str] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    first_weights: int | None = None
    env_read: str | None = None  # the last VLLM_* variable a traceback line read (``config_errors``)

    def add(self, name: str, line: Line, value: float | int | str) -> None:
        """Keep every figure a line yields, with its line and rank, so ``pick`` can choose across TP ranks."""
        self.values.setdefault(name, []).append((line.index, line.rank, value))

    def pick(self, name: str) -> float | int | str | None:
        """KV figures: the smallest over ranks (vLLM sizes KV by its tightest rank); else the lowest rank's first."""
        found = self.values.get(name)
        if not found:
            return None
        if name in _MIN_OVER_RANKS:
            return min(v for _, _, v in found)  # type: ignore[type-var]
        if name in _LAST_LOGGED:
            return max(found, key=lambda item: item[0])[2]
        return min(found, key=lambda item: (item[1], item[0]))[2]


def _unique_templates() -> list[tuple[Template, str | None, str]]:
    """Templates deduplicated by text (engine is ``None`` when two engines print the same words)."""
    seen: dict[str, tuple[Template, str | None]] = {}
    for tpl in TEMPLATES:
        if not tpl.parse:
            continue
        if tpl.text in seen:
            first, engine = seen[tpl.text]
            seen[tpl.text] = (first, engine if engine == tpl.engine else None)
        else:
            seen[tpl.text] = (tpl, tpl.engine)
    out = []
    for tpl, engine in seen.values():
        words = re.split(r"\{[^}]*\}|\s+", tpl.text)
        out.append((tpl, engine, max(words, key=len).lower()))
    return out


_UNIQUE = _unique_templates()


def parse_startup_log(text: str) -> StartupReport:
    """Parse one container's log; pure, tolerant of truncation, colours and interleaved ranks."""
    lines = split_lines(text)
    found = _Matches()
    for line in lines:
        _scan(line, found)
    report = StartupReport()
    _identity(lines, report)
    for name in _REPORT_FIELDS:
        value = found.pick(name)
        if value is not None:
            setattr(report, name, int(value) if name in _INT_FIELDS else float(value))  # type: ignore[arg-type]
    if (free := found.pick("free_gib")) is not None:
        report.free_at_start_gib = float(free)
    if report.weights_gib is None and (fallback := found.pick("profile_weights_gib")) is not None:
        report.weights_gib = float(fallback)
    _late_kv(report, found)
    if report.max_model_len is None:
        for name in ("concurrency_max_len", "max_model_len"):
            if (value := found.pick(name)) is not None:
                report.max_model_len = int(value)
                break
    report.engine = _engine(lines, found, report.vllm_version)
    up = [line.index for line in lines if any(marker in line.text for marker in UP_MARKERS)]
    found.evidence.update(up[:1])
    sized = any(found.pick(name) is not None for name in ("kv_cache_tokens", "gpu_blocks", "kv_cache_gib"))
    report.failure, report.failure_detail, crash_at = failure_from_events(
        found.events, up[0] if up else None, found.first_weights, sized)
    report.server_was_up = bool(up) and (crash_at is None or up[0] < crash_at)
    report.truncated = not up and crash_at is None
    if report.truncated and (record := unplayed.why(lines)) is not None:  # the rehearsal's record, no crash after it
        report.unplayed = record[0]
        found.evidence.add(record[1])
    if report.kv_cache_gib is None and "available_gib" in report.failure_detail:
        report.kv_cache_gib = report.failure_detail["available_gib"]
    for name in ("total_gpu_gib", "kv_cache_tokens", "max_model_len", "gpu_memory_utilization"):
        if getattr(report, name) is None and name in report.failure_detail:
            setattr(report, name, report.failure_detail[name])
    if report.gpu_memory_utilization is None:
        report.gpu_memory_utilization = _default_utilization(lines, report.vllm_version)
    found.evidence.update(e.index for e in found.events if e.evidence)
    report.evidence = [lines[i].text for i in sorted(found.evidence)]
    return report


def _scan(line: Line, found: _Matches) -> None:
    lowered = line.text.lower()
    best: dict[str, tuple[Template, str | None, dict[str, float | int | str]]] = {}
    for tpl, engine, anchor in _UNIQUE:
        if anchor not in lowered or not (m := compiled(tpl).search(line.text)):
            continue
        values = {k: (to_number(val) if _numeric(tpl, k) else val.strip()) for k, val in m.groupdict().items()}
        # Several eras' wordings can match one line ("# GPU blocks: N" inside "…, # CPU blocks: M");
        # per kind the fullest match is the one vLLM printed.
        held = best.get(tpl.kind)
        if held is None or (len(values), len(tpl.text)) > (len(held[2]), len(held[0].text)):
            best[tpl.kind] = (tpl, engine, values)
    for kind, (tpl, engine, values) in best.items():
        if engine:
            found.engines.add(engine)
        if kind.startswith("err_"):
            if line.level == "WARNING":  # VLLM_ALLOW_LONG_MAX_MODEL_LEN turns the refusal into a warning: not fatal
                found.evidence.add(line.index)
                continue
            found.events.append(Event(kind, line.index, line.rank, values))
            found.evidence.add(line.index)
            continue
        if kind == "weights" and found.first_weights is None:
            found.first_weights = line.index
        for name, value in values.items():
            found.add(name, line, value)
        if tpl.level != "DEBUG":
            found.evidence.add(line.index)
    if not any(kind.startswith("err_") for kind in best):
        _scan_other(line, found)


def _scan_other(line: Line, found: _Matches) -> None:
    """Signals that are not one fixed vLLM template: torch's OOM text, crashes, loading progress."""
    oom = _CUDA_OOM.search(line.text)
    if oom and "warming up sampler" not in line.text:
        found.events.append(Event("cuda_oom", line.index, line.rank, _oom_values(oom)))
        return
    if any(marker in line.text for marker in _CRASH):
        found.events.append(Event("crash", line.index, line.rank, {"error": line.message}, evidence=True))
        return
    if _NO_GPU.search(line.message):  # torch's CUDA init with no device mounted: the world size exceeds the GPUs
        found.events.append(Event("err_world_size", line.index, line.rank, {}))
        found.evidence.add(line.index)
        return
    if (missing := model_errors.unavailable(line.message)) is not None:
        found.events.append(Event("model_unavailable", line.index, line.rank, missing))
        return
    if (refused := config_errors.refusal(line.message, found.env_read)) is not None:
        found.events.append(Event("config_refused", line.index, line.rank, refused))
        return
    if "Traceback (most recent call last)" in line.text:
        found.env_read = None  # a new traceback: only its own source lines name the variable
    found.env_read = config_errors.env_read(line.text) or found.env_read
    exc = _EXCEPTION.match(line.message) or _EXCEPTION.match(line.text)
    if exc and "Traceback" not in line.text:
        found.events.append(Event("exception", line.index, line.rank, {"error": line.message}, evidence=False))
    elif "Traceback (most recent call last)" in line.text:
        found.events.append(Event("traceback", line.index, line.rank, {}, evidence=False))
    elif 'File "' in line.text and ", in " in line.text:
        frame = line.text.rsplit(", in ", 1)[1].strip()
        found.events.append(Event("frame", line.index, line.rank, {"function": frame}, evidence=False))
    elif any(marker in line.text for marker in _LOADING):
        found.events.append(Event("loading", line.index, line.rank, {}, evidence=False))
    elif any(marker in line.text for marker in CAPTURING):
        found.events.append(Event("capturing", line.index, line.rank, {}, evidence=False))
    elif any(marker in line.text for marker in _CAPTURED):
        found.events.append(Event("captured", line.index, line.rank, {}, evidence=False))


def _numeric(tpl: Template, name: str) -> bool:
    return field_specs(tpl).get(name, "s") not in TEXT_SPECS


def _late_kv(report: StartupReport, found: _Matches) -> None:
    """0.34's extensible KV cache: "Available KV cache memory" is only the reserved capacity; the size is the
    committed one ("Extended KV cache to N blocks (F GiB)"), else the measured one ("Memory after warmup: … N KV cache
    blocks (F GiB) fit …"). --max-model-len auto: the length the last auto-fit line settled on."""
    final = found.pick("extended_kv_gib")
    final = found.pick("final_kv_gib") if final is None else final
    if final is not None:
        report.kv_reserved_gib = report.kv_cache_gib
        report.kv_cache_gib = float(final)
        if report.gpu_blocks is None and (blocks := found.pick("final_blocks")) is not None:
            report.gpu_blocks = int(blocks)
    if (fitted := found.pick("auto_fit_max_model_len")) is not None:
        report.max_model_len = int(fitted)


def _oom_values(m: re.Match[str]) -> dict[str, float | int | str]:
    out: dict[str, float | int | str] = {}
    if m.group("size"):
        out["tried_to_allocate"] = f"{m.group('size')} {m.group('unit')}"
        out["tried_to_allocate_gib"] = round(_gib(float(m.group("size")), m.group("unit")), 4)
    if m.group("gpu"):
        out["gpu_index"] = int(m.group("gpu"))
        out["total_gpu_gib"] = float(m.group("total"))
    if m.group("free"):
        out["free_gib"] = round(_gib(float(m.group("free")), m.group("free_unit")), 4)
    return out


def _gib(value: float, unit: str) -> float:
    scale = {"K": 1 / 1024**2, "M": 1 / 1024, "G": 1.0, "T": 1024.0}[unit[0].upper()]
    return value * scale


def _first(lines: list[Line], patterns: tuple[re.Pattern[str], ...]) -> str | None:
    """The first pattern (in priority order) that matches any line wins."""
    for pattern in patterns:
        for line in lines:
            m = pattern.search(line.text)
            if m:
                return m.group(1)
    return None


def _identity(lines: list[Line], report: StartupReport) -> None:
    report.vllm_version = _first(lines, _VERSION)
    report.model = _first(lines, _MODEL)
    if (tp := _first(lines, _TP)) is not None:
        report.tp_size = int(tp)
    if (max_len := _first(lines, _MAX_LEN)) is not None:
        report.max_model_len = int(max_len)
    if (util := _first(lines, _UTIL)) is not None:
        report.gpu_memory_utilization = float(util)
    report.flashinfer = _sampler(lines)
    if any(line.message == _RUNNER_V2 for line in lines):
        report.runner = "v2"


def _default_utilization(lines: list[Line], version: str | None) -> float | None:
    """The release's default utilization when the log proves the flag unset: 0.9+ lists every flag the command
    line sets under "non-default args", so a line without it means the default (``versions.rules``). None when
    that line or the version is missing: a cut log cannot tell unset from unseen."""
    if version is None or not any("non-default args:" in line.text for line in lines):
        return None
    return rules(version).default_gpu_memory_utilization


def _sampler(lines: list[Line]) -> bool | None:
    """Whether the sampler took FlashInfer's kernel (its first sampler line decides); None when not printed."""
    for line in lines:
        if _FLASHINFER_ON in line.text:
            return True
        if _FLASHINFER_OFF in line.text:
            return False
    return None


def _engine(lines: list[Line], found: _Matches, version: str | None) -> str | None:
    text = "\n".join(line.text for line in lines)
    if "Initializing a V1 LLM engine" in text:
        return "v1"
    if "Initializing a V0 LLM engine" in text:
        return "v0"
    if len(found.engines) == 1:
        return next(iter(found.engines))
    v1 = any(marker in text for marker in _V1_MARKERS)
    v0 = any(marker in text for marker in _V0_MARKERS)
    if v1 != v0:
        return "v1" if v1 else "v0"
    if version:
        return default_engine(parse_version(version))
    return None


# --- the post-start advisory (0.10.2 on) -----------------------------------------------------------
_NUM = r"(-?[\d.]+)"
_ADVICE = re.compile(
    rf"Free memory on device \({_NUM}/{_NUM} GiB\) on startup\. Desired GPU memory utilization is "
    rf"\({_NUM}, {_NUM} GiB\)\. Actual usage is (?:{_NUM} GiB for weight, {_NUM} GiB for peak activation, "
    rf"{_NUM} GiB for non-torch memory|{_NUM} GiB for consumed memory \(weights \+ non-torch\), {_NUM} GiB for "
    rf"peak activation), and {_NUM} GiB for CUDAGraph memory\. Replace gpu_memory_utilization config with "
    rf"`--kv-cache-memory=(\d+)` \({_NUM} GiB\) to fit into requested memory, or `--kv-cache-memory=(\d+)` "
    rf"\({_NUM} GiB\) to fully utilize gpu memory\. Current kv cache memory in use is {_NUM} GiB\."
)


@dataclass(frozen=True)
class KvAdvice:
    """vLLM's own account of one rank's start, printed after the KV cache and CUDA graphs exist: the profile
    terms it measured and the ``--kv-cache-memory`` that would reproduce the requested budget. Free calibration
    data: ``fit_bytes`` is ``requested - (weights + non-torch + activation + CUDA graphs)``, graphs included. In the
    consumed form (0.27.0 on, gpu_worker.py@0.27.0) ``activation_gib`` includes the CUDA-graph estimate the budget
    applied and ``cudagraph_gib`` is the actual capture; at 0.34 ``in_use_gib`` is the reserved capacity of the
    extensible KV cache, not its final size."""

    rank: int
    free_gib: float
    total_gib: float
    utilization: float
    requested_gib: float
    consumed_gib: float  # weights + non-torch (the 2026 form prints only the sum)
    activation_gib: float
    cudagraph_gib: float
    fit_bytes: int  # --kv-cache-memory that fits the requested memory
    full_bytes: int  # --kv-cache-memory that uses the whole card
    in_use_gib: float  # the KV cache this start allocated
    weights_gib: float | None = None  # printed separately up to the 2026 form
    non_torch_gib: float | None = None


def parse_kv_advice(text: str) -> list[KvAdvice]:
    """Every advisory line in a log (one per rank that printed it), in log order; [] when the release printed
    none, printed it at DEBUG with INFO logging, or the line was cut."""
    out: list[KvAdvice] = []
    for line in split_lines(text):
        if "--kv-cache-memory=" not in line.text or not (m := _ADVICE.search(line.text)):
            continue
        g = m.groups()
        weights, non_torch = (float(g[4]), float(g[6])) if g[4] is not None else (None, None)
        consumed = weights + non_torch if weights is not None and non_torch is not None else float(g[7])
        out.append(
            KvAdvice(
                rank=line.rank,
                free_gib=float(g[0]),
                total_gib=float(g[1]),
                utilization=float(g[2]),
                requested_gib=float(g[3]),
                consumed_gib=round(consumed, 2),
                activation_gib=float(g[5] if g[5] is not None else g[8]),
                cudagraph_gib=float(g[9]),
                fit_bytes=int(g[10]),
                full_bytes=int(g[12]),
                in_use_gib=float(g[14]),
                weights_gib=weights,
                non_torch_gib=non_torch,
            )
        )
    return out
