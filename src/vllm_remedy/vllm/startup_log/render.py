"""Write the startup log a given vLLM version would print, for the rehearsal cluster's fake pods.

Messages come from ``log_formats`` (the table the parser reads), so a rendered log parses back
to the numbers it was rendered from. Process prefixes, header style and colours follow the
version (``writer``): ``file.py:12]`` before 0.8, ``[file.py:12]`` after; ``(VllmWorkerProcess pid=…)`` for V0
workers, ``(VllmWorker rank=N pid=…)`` for V1 until 0.10.1, ``(Worker_TPn pid=…)`` after;
``(APIServer pid=1)`` / ``(EngineCore_DP0 pid=…)`` from 0.10.1. Nothing here reads a clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vllm_remedy.vllm.failures import FAILURES
from vllm_remedy.vllm.log_formats import (
    CAPTURE_BARS,
    MRV2_CAPTURE_BARS,
    UVICORN_UP,
    default_engine,
    fill,
    parse_version,
    templates_for,
)
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import config_refusal, late, model_errors, pinned_lines
from vllm_remedy.vllm.startup_log.frames import engine_failure, traceback_text
from vllm_remedy.vllm.startup_log.writer import Writer

_DEFAULT_START = datetime(2025, 6, 2, 9, 30, 0)


def render_startup_log(version: str, *, model: str, tp_size: int = 1, weights_gib: float,
                       kv_cache_gib: float | None, kv_cache_tokens: int | None = None,
                       gpu_blocks: int | None = None, max_concurrency: float | None = None,
                       max_model_len: int, cudagraph_gib: float | None = None, total_gpu_gib: float,
                       gpu_memory_utilization: float = 0.9, activation_gib: float = 1.0,
                       non_torch_gib: float = 0.2, failure: Failure = Failure.NONE,
                       failure_detail: dict[str, Any] | None = None, engine: str | None = None,
                       block_size: int = 16, started: datetime | None = None, color: bool = False,
                       enforce_eager: bool = False, max_num_seqs: int | None = None,
                       revision: str | None = None, utilization_set: bool = True,
                       max_model_len_arg: int | None = 0, long_len: dict[str, Any] | None = None,
                       typed: dict[str, Any] | None = None, runner_v2: bool = False,
                       free_at_start_gib: float | None = None, derived_max_model_len: int | None = None,
                       pinned: dict[str, Any] | None = None, parallel: tuple[int, int] | None = None) -> str:
    """A realistic log of one start of ``version`` that ends in ``failure``.

    Figures a version does not print are simply not in its log. ``failure_detail`` supplies the
    error's own numbers (``needed_gib``/``available_gib``/``suggested_max_model_len``, ``free_gib``/
    ``requested_gib``, ``tried_to_allocate_gib``, ``num_dummy_requests``); sensible ones are derived
    when absent. ``host_oom_killed`` renders a log cut off while loading weights, as the kernel leaves it.
    ``enforce_eager`` is what the engine's config line says (``cudagraph_gib=None`` leaves the capture out);
    ``max_num_seqs`` and ``revision``, when set, join the arguments line as vLLM prints them;
    ``utilization_set=False`` (the flag left at the release's default) leaves the utilization out of 0.9+'s
    "non-default args", as real logs do: it then shows only where the engine prints the figure it used.
    ``max_model_len_arg`` is --max-model-len as typed (-1 for auto, None when unset, which leaves it out of the
    arguments; 0, the default, lists ``max_model_len``). ``long_len``: the figures of a --max-model-len above the
    model's maximum that VLLM_ALLOW_LONG_MAX_MODEL_LEN let through, which vLLM then only warns about. ``typed``: other
    arguments set on the command line, by vLLM's names (``dtype``, ``kv_cache_dtype``, ``max_num_batched_tokens``),
    listed as vLLM lists them; the config line then shows the dtypes they resolve to (``cache_dtype``: the cache dtype
    ``auto`` resolved to from the checkpoint, ``kv_auto``). ``runner_v2``: the start runs
    Model Runner V2 (its own weights line and announcement). ``free_at_start_gib``: free memory at startup, for the
    advisory (INFO from 0.26). ``derived_max_model_len``: the model's own length, which auto-fit reduces from.
    ``pinned``: a flag sizes the cache (``pinned_lines``: ``kv_cache_memory_bytes``, ``num_gpu_blocks_override``,
    ``profiled_blocks``, ``budget_gib``, ``free_gib``); 0.34 then has no extensible cache and checks free memory again.
    ``parallel``: --tensor-parallel-size and --pipeline-parallel-size as the arguments set them, for the arguments and
    config lines (None: ``tp_size`` and 1); ``tp_size`` stays the ranks that log, TP × PP for a multi-node group.
    """
    pins = dict(pinned or {})
    ver = parse_version(version)
    if failure is Failure.ARGUMENT_REFUSED:  # argparse's usage error, before vLLM logs anything
        return config_refusal.argument_error(ver, dict(failure_detail or {}))
    eng = engine or default_engine(ver)
    w = Writer(version, eng, tp_size, started or _DEFAULT_START, color, _runner(ver, eng, runner_v2))
    detail = dict(failure_detail or {})
    blocks = gpu_blocks if gpu_blocks is not None else (kv_cache_tokens or 0) // block_size
    tokens = kv_cache_tokens if kv_cache_tokens is not None else blocks * block_size
    concurrency = max_concurrency if max_concurrency is not None else tokens / max_model_len
    figures: dict[str, Any] = {
        "weights_gib": weights_gib, "load_seconds": 6.25, "total_gpu_gib": total_gpu_gib,
        "gpu_memory_utilization": gpu_memory_utilization, "requested_gib": total_gpu_gib * gpu_memory_utilization,
        "profile_weights_gib": weights_gib, "non_torch_gib": non_torch_gib, "activation_gib": activation_gib,
        "kv_cache_gib": kv_cache_gib or 0.0, "profile_seconds": 3.41, "initial_gib": weights_gib + non_torch_gib,
        "peak_torch_gib": weights_gib + activation_gib, "post_profile_gib": weights_gib + 0.01,
        "gpu_blocks": blocks, "cpu_blocks": 2048, "kv_cache_tokens": tokens, "concurrency_max_len": max_model_len,
        "max_concurrency": concurrency, "graph_seconds": 14, "cudagraph_gib": cudagraph_gib or 0.0,
    }
    late.add_figures(figures, free_at_start_gib=free_at_start_gib)
    figures["kv_hint"] = late.kv_hint(gpu_memory_utilization)
    after_warmup = eng == "v1" and late.extensible(version) and not pins
    # before the engine (and its config line) exists
    at_config = failure in (Failure.MAX_LEN_EXCEEDS_MODEL, Failure.CONFIG_REFUSED, Failure.MODEL_UNAVAILABLE)
    # --max-model-len auto: the engine's config line shows the model's own length; auto-fit reduces it later
    # (config/model.py@0.30.0 takes the derived length for -1), in releases whose table has the auto-fit line.
    fits_later = max_model_len_arg == -1 and derived_max_model_len and templates_for("auto_fit", ver, eng)
    _preamble(w, version, model, tp_size, derived_max_model_len if fits_later else max_model_len,
              gpu_memory_utilization, enforce_eager,
              max_num_seqs=max_num_seqs, revision=revision, utilization_set=utilization_set,
              typed_len=max_model_len if max_model_len_arg == 0 else max_model_len_arg, engine_line=not at_config,
              long_len=long_len, typed=typed or {}, parallel=parallel or (tp_size, 1))
    if failure is Failure.CONFIG_REFUSED:  # the scheduler config's batched-tokens check (V0, no chunked prefill)
        config_refusal.write_batch_refusal(w, max_model_len, detail)
        return _text(w)
    if failure is Failure.MODEL_UNAVAILABLE:  # its config.json could not be read: nothing else was
        model_errors.write_refusal(w, model)
        return _text(w)
    if at_config:
        config_refusal.write_refusal(w, model, max_model_len, detail)
        return _text(w)
    if failure is Failure.FREE_MEMORY_BELOW_UTILIZATION:
        if not late.free_memory_check(version) and not pins:  # 0.34 skips it with its extensible cache
            raise ValueError(f"vLLM {version} does not check free memory against the utilization at startup")
        return _fail_free_memory(w, figures, detail)
    if failure is Failure.WORLD_SIZE_EXCEEDS_GPUS:  # config time: nothing was loaded
        figures["world_size"] = detail.get("world_size", max(2, tp_size))
        figures["available_gpus"] = detail.get("available_gpus", figures["world_size"] // 2)
        return _fail(w, failure, figures, [("engine/arg_utils.py", "create_engine_config"),
                                           ("config/parallel.py", "__post_init__")])
    if failure is Failure.DTYPE_UNSUPPORTED:  # the worker's device setup: nothing was loaded
        figures["gpu_name"] = detail.get("gpu_name", "Tesla T4")
        figures["capability"] = detail.get("capability", "7.5")
        return _fail(w, failure, figures, config_refusal.dtype_frames(w.v, w.engine))
    _emit(w, "runner", figures, ranks=True)
    if w.runner == "v2":  # Model Runner V2 names no model here (v1/worker/gpu/model_runner.py@0.21.0-@0.34.0)
        w.each_rank("Loading model from scratch...", source="model_runner.py")
    else:
        w.each_rank(f"Starting to load model {model}...", source="gpu_model_runner.py")
    if failure in (Failure.OOM_LOADING_WEIGHTS, Failure.HOST_OOM_KILLED):
        w.raw("worker", "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:05<00:05,  2.61s/it]")
        if failure is Failure.HOST_OOM_KILLED:
            return _text(w)
        return _fail_oom(w, figures, detail, loading=True)
    _emit(w, "weights", figures, ranks=True)
    if failure is Failure.PROFILE_OOM:  # the profiling forward dies before it prints any profile or KV line
        return _fail_oom(w, figures, detail, frames=_profile_frames(w))
    _emit(w, "profile", figures, ranks=True)
    if not pinned_lines.reserved(w, pins):
        budget = figures["kv_capacity_gib"] if after_warmup else pins.get("budget_gib", figures["kv_cache_gib"])
        _emit(w, "kv_memory", {**figures, "kv_cache_gib": budget}, ranks=True)
    pinned_lines.override(w, pins, failure)
    if failure is Failure.NO_CACHE_BLOCKS:
        return _fail(w, failure, figures, _kv_frames(w))
    if failure is Failure.MAX_LEN_EXCEEDS_KV:
        return _fail_max_len(w, figures, detail, max_model_len)
    auto = eng == "v1" and max_model_len_arg == -1
    if auto:
        late.auto_fit(w, figures, derived_max_model_len, after_warmup)
    for kind in ("blocks", "tokens", "concurrency") if not after_warmup else ():
        _emit(w, kind, figures)
    if failure is Failure.KV_CACHE_ALLOCATION_OOM:  # sized and checked, then the cache's own torch.zeros fails
        return _fail_oom(w, figures, detail, frames=pinned_lines.allocation_frames(w.engine))
    if failure is Failure.CUDAGRAPH_CAPTURE_OOM:
        _emit(w, "capture", figures, ranks=True)
        return _fail_oom(w, figures, detail, frames=[("v1/worker/gpu_worker.py", "compile_or_warm_up_model"),
                                                     ("v1/worker/gpu_model_runner.py", "capture_model")])
    if cudagraph_gib is not None:
        _capture(w, figures)
    late.advisory(w, figures, capacity=after_warmup)
    if after_warmup:
        late.kv_lines(w, figures, refit=auto)
    if failure is Failure.SAMPLER_WARMUP_OOM:
        figures["num_dummy_requests"] = detail.get("num_dummy_requests", 256)
        return _fail(w, failure, figures, [("v1/worker/gpu_worker.py", "compile_or_warm_up_model"),
                                           ("v1/worker/gpu_model_runner.py", "_dummy_sampler_run")])
    _server_up(w)
    if failure is Failure.OOM_UNDER_LOAD:
        w.raw("api", 'INFO:     10.42.0.17:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        return _fail_oom(w, figures, detail, loading=False)
    if failure is Failure.UNKNOWN:
        error = detail.get("error", "RuntimeError: CUDA error: an illegal memory access was encountered")
        w.traceback("engine", [("v1/engine/core.py", "run_engine_core")], error)  # no message: reads as healthy
    return _text(w)


def _runner(v: tuple[int, int, int], engine: str, runner_v2: bool) -> str:
    """"v2" for Model Runner V2, and where the release has no other runner (0.34 removed gpu_model_runner.py: the
    format table has no V1-runner weights line there)."""
    if runner_v2 or (not templates_for("weights", v, engine, "v1") and templates_for("weights", v, engine, "v2")):
        return "v2"
    return "v1"


def _capture(w: Writer, figures: dict[str, Any]) -> None:
    """CUDA-graph capture: V0's announcement, rank 0's closed progress bars, every rank's "finished" line."""
    _emit(w, "capture", figures, ranks=True)
    eras = [((0, 0, 0), None, w.engine, MRV2_CAPTURE_BARS)] if w.runner == "v2" else CAPTURE_BARS
    for since, until, engine, bars in eras:
        if since <= w.v and (until is None or w.v < until) and engine == w.engine:
            seconds = int(figures["graph_seconds"])
            for desc, shapes in bars:
                w.raw("worker", f"{desc}: 100%|{'█' * 10}| {shapes}/{shapes} [00:{seconds:02d}<00:00, "
                      f"{shapes / max(seconds, 1):5.2f}it/s]")
    _emit(w, "graphs", figures, ranks=True)


def _text(w: Writer) -> str:
    return "\n".join(w.lines) + "\n"


def _emit(w: Writer, kind: str, figures: dict[str, Any], *, ranks: bool = False) -> None:
    for tpl in templates_for(kind, w.v, w.engine, w.runner):
        w.template("engine", tpl, figures, ranks=ranks and w.tp > 1)


def _preamble(w: Writer, version: str, model: str, tp: int, max_len: int, util: float, eager: bool, *,
              max_num_seqs: int | None = None, revision: str | None = None, utilization_set: bool = True,
              typed_len: int | None = None, engine_line: bool = True,
              long_len: dict[str, Any] | None = None, typed: dict[str, Any] | None = None,
              parallel: tuple[int, int] | None = None) -> None:
    """Banner, arguments line and the engine's config line. The dict of 0.9+ lists only non-default arguments in the
    parser's order (model config, parallel, cache, scheduler): dtype before revision (from 0.9; after it in the older
    Namespace), revision before max_model_len, kv_cache_dtype after the utilization, max_num_batched_tokens before
    max_num_seqs, as real logs show. The arguments carry --max-model-len as typed (``typed_len``), the config line the
    length the engine resolved (``max_len``). ``parallel``: the arguments' (TP, PP), which both lines print as set
    (the engine's config prints the pipeline stages it was given, not 1), else (``tp``, 1)."""
    tp, pp = parallel or (tp, 1)
    if w.v < (0, 25, 0):
        w.log("api", f"vLLM API server version {version}", source="api_server.py")
    if w.v >= (0, 15, 0):
        for art in ("       █     █     █▄   ▄█", f" ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}",
                    f"  █▄█▀ █     █     █     █  model   {model}", "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀"):
            w.log("api", art, source="utils.py", step=0)
    if w.v >= (0, 9, 0):
        extra = typed or {}
        args: dict[str, Any] = {"model_tag": model, "model": model}
        if extra.get("dtype") is not None:
            args["dtype"] = extra["dtype"]
        if revision is not None:
            args["revision"] = revision
        if typed_len is not None:  # the parser's default is None: only a typed length is a non-default arg
            args["max_model_len"] = typed_len
        if utilization_set:  # an unset flag is not a non-default arg, whatever the release's default
            args["gpu_memory_utilization"] = util
        if pp > 1:  # EngineArgs lists the pipeline size before the tensor-parallel size
            args["pipeline_parallel_size"] = pp
        if tp > 1:
            args["tensor_parallel_size"] = tp
        if eager:
            args["enforce_eager"] = True
        if extra.get("kv_cache_dtype") is not None:
            args["kv_cache_dtype"] = extra["kv_cache_dtype"]
        if extra.get("max_num_batched_tokens") is not None:
            args["max_num_batched_tokens"] = extra["max_num_batched_tokens"]
        if max_num_seqs is not None:
            args["max_num_seqs"] = max_num_seqs
        w.log("api", f"non-default args: {args}", source="utils.py")
    else:
        extra = typed or {}
        w.log("api", f"args: Namespace(model='{model}', revision={revision!r}, "
              f"dtype={extra.get('dtype') or 'auto'!r}, max_model_len={typed_len}, tensor_parallel_size={tp}, "
              f"gpu_memory_utilization={util}, kv_cache_dtype={extra.get('kv_cache_dtype') or 'auto'!r}, "
              f"enforce_eager={eager}, max_num_batched_tokens={extra.get('max_num_batched_tokens')!r}, "
              f"max_num_seqs={max_num_seqs!r})", source="api_server.py")
    if long_len is not None and engine_line:
        config_refusal.write_warning(w, long_len)
    if extra.get("dtype_fallback"):  # auto on a bfloat16 checkpoint, a card without bfloat16, 0.9.0+ (dtype_support)
        w.log("api", f"Your {extra['dtype_fallback']} doesn't support torch.bfloat16. Falling back to "
              f"torch.{extra.get('torch_dtype') or 'float16'} for compatibility.", level="WARNING",
              source="model.py" if w.v >= (0, 11, 0) else "__init__.py" if w.v >= (0, 10, 1) else "config.py")
    if not engine_line:
        return
    torch_dtype = extra.get("torch_dtype") or _torch_dtype(extra.get("dtype"))  # auto's float16 fallback: timeline
    if w.engine == "v1":
        title = "a V1 LLM engine" if w.v >= (0, 7, 2) else "an LLM engine"
    else:
        title = "a V0 LLM engine" if w.v >= (0, 7, 2) else "an LLM engine"
    w.log("engine", f"Initializing {title} (v{version}) with config: model='{model}', speculative_config=None, "
          f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision={revision}, "
          f"trust_remote_code=False, dtype=torch.{torch_dtype}, max_seq_len={max_len}, "
          f"download_dir=None, "
          f"load_format=auto, tensor_parallel_size={tp}, pipeline_parallel_size={pp}, "
          f"disable_custom_all_reduce=False, quantization=None, enforce_eager={eager}, "
          f"kv_cache_dtype={extra.get('cache_dtype') or extra.get('kv_cache_dtype') or 'auto'}, "
          f"seed=0, served_model_name={model}", source="core.py" if w.engine == "v1" else "llm_engine.py")


def _torch_dtype(typed: str | None) -> str:
    """The torch dtype the engine's config line prints for --dtype as typed (unset or auto: the checkpoint's, taken
    as bfloat16 here)."""
    name = {"half": "float16", "float": "float32"}.get(str(typed), str(typed))
    return "bfloat16" if typed in (None, "auto") else name


def _fail(w: Writer, failure: Failure, figures: dict[str, Any], frames: list[tuple[str, str]]) -> str:
    """vLLM's own error for ``failure`` (the registry names its message) after the engine's failure line."""
    kind = FAILURES[failure].error_kind or ""
    tpl = templates_for(kind, w.v, w.engine, w.runner)
    if not tpl:  # this version cannot fail this way; say so in the log rather than invent text
        raise ValueError(f"vLLM {'.'.join(map(str, w.v))} ({w.engine}) has no '{kind}' message")
    engine_failure(w, frames, fill(tpl[-1], figures))
    return _text(w)


def _fail_max_len(w: Writer, figures: dict[str, Any], detail: dict[str, Any], max_len: int) -> str:
    figures["max_model_len"] = max_len
    available = detail.get("available_gib", figures["kv_cache_gib"])
    figures["available_gib"] = available
    figures["needed_gib"] = detail.get("needed_gib", available * 1.5)
    figures["suggested_max_model_len"] = detail.get("suggested_max_model_len", max_len // 2)
    if "kv_cache_tokens" in detail:
        figures["kv_cache_tokens"] = detail["kv_cache_tokens"]
    if w.engine == "v0":
        _emit(w, "blocks", figures)
        _emit(w, "concurrency", figures)
    return _fail(w, Failure.MAX_LEN_EXCEEDS_KV, figures, _kv_frames(w))


def _profile_frames(w: Writer) -> list[tuple[str, str]]:
    """The memory-profiling forward's traceback down to the model call, as each runner nests it: V1
    EngineCore._initialize_kv_caches -> determine_available_memory -> profile_run -> _dummy_run
    (v1/engine/core.py, v1/worker/gpu_worker.py, v1/worker/gpu_model_runner.py@0.19.0); Model Runner V2's
    _dummy_run runs execute_model (v1/worker/gpu/model_runner.py@0.28.0); V0 LLMEngine._initialize_kv_caches ->
    determine_num_available_blocks -> profile_run -> execute_model (engine/llm_engine.py, worker/worker.py,
    worker/model_runner.py@0.6.6)."""
    model = ("model_executor/models/llama.py", "forward")
    if w.engine == "v0":
        return [("engine/llm_engine.py", "_initialize_kv_caches"),
                ("worker/worker.py", "determine_num_available_blocks"), ("worker/model_runner.py", "profile_run"),
                ("worker/model_runner.py", "execute_model"), model]
    head = [("v1/engine/core.py", "_initialize_kv_caches"), ("v1/worker/gpu_worker.py", "determine_available_memory")]
    runner = "v1/worker/gpu/model_runner.py" if w.runner == "v2" else "v1/worker/gpu_model_runner.py"
    forward = [(runner, "execute_model")] if w.runner == "v2" else []
    return [*head, (runner, "profile_run"), (runner, "_dummy_run"), *forward, model]


def _kv_frames(w: Writer) -> list[tuple[str, str]]:
    if w.engine == "v0":
        return [("worker/worker.py", "initialize_cache"), ("worker/worker.py", "raise_if_cache_size_invalid")]
    return [("v1/core/kv_cache_utils.py", "get_kv_cache_config"),
            ("v1/core/kv_cache_utils.py", "check_enough_kv_cache_memory")]


def _fail_free_memory(w: Writer, figures: dict[str, Any], detail: dict[str, Any]) -> str:
    figures["free_gib"] = detail.get("free_gib", figures["requested_gib"] * 0.8)
    figures["requested_gib"] = detail.get("requested_gib", figures["requested_gib"])
    figures["device"] = detail.get("device", "cuda:0")
    return _fail(w, Failure.FREE_MEMORY_BELOW_UTILIZATION, figures, [("v1/worker/gpu_worker.py", "init_device")])


def _fail_oom(w: Writer, figures: dict[str, Any], detail: dict[str, Any], *, loading: bool = False,
              frames: list[tuple[str, str]] | None = None) -> str:
    tried = float(detail.get("tried_to_allocate_gib", 0.5))
    free = float(detail.get("free_gib", 0.12))
    values = {"tried_size": tried if tried >= 1 else tried * 1024, "tried_unit": "GiB" if tried >= 1 else "MiB",
              "gpu_index": 0, "total_gpu_gib": figures["total_gpu_gib"],
              "oom_free_size": free if free >= 1 else free * 1024, "oom_free_unit": "GiB" if free >= 1 else "MiB"}
    oom = fill(templates_for("err_cuda_oom", w.v, w.engine)[0], values)
    pools = figures["cudagraph_gib"] if frames is None and not loading else 0.0  # graphs captured before serving
    oom = _with_memory_tail(oom, figures["total_gpu_gib"] - free, figures["non_torch_gib"], pools)
    if loading:
        frames = [("v1/worker/gpu_worker.py", "load_model"), ("v1/worker/gpu_model_runner.py", "load_model"),
                  ("model_executor/model_loader/base_loader.py", "load_model")]
        for tpl in templates_for("err_load_oom", w.v, w.engine):
            w.log("worker", fill(tpl, {}) + f" (original error: {oom.split(': ', 1)[1]})",
                  level="ERROR", source=tpl.source)
        engine_failure(w, frames, oom)
    elif frames is not None:  # a start that fails profiling, allocating the KV cache or after it (graph capture)
        engine_failure(w, frames, oom)
    elif w.engine == "v1":
        engine_failure(w, [("v1/engine/core.py", "run_busy_loop"), ("v1/engine/core.py", "step"),
                           ("v1/worker/gpu_model_runner.py", "execute_model")], oom,
                       header="EngineCore encountered a fatal error.")
    else:  # V0 under load: the API server's stream generator logs the error the engine sent back (the v0.7 log)
        w.log("api", "\n".join(["Error in chat completion stream generator.", *traceback_text(
            [("entrypoints/openai/serving_chat.py", "chat_completion_stream_generator"),
             ("worker/model_runner.py", "execute_model")], oom)]), level="ERROR", source="serving_chat.py")
    return _text(w)


#: The PID torch names for the memory a container's process holds: NVML reports host PIDs, which do not match the
#: container's own, so torch lists it as another process (the v0.7 docker compose log), not "this process".
HOST_PID = 2873101


def _gib_or_mib(gib: float) -> str:
    """torch's format_size for the sizes the tail prints (MiB below 1 GiB)."""
    return f"{gib:.2f} GiB" if gib >= 1 else f"{gib * 1024:.2f} MiB"


def _with_memory_tail(oom: str, in_use_gib: float, non_torch_gib: float, pools_gib: float) -> str:
    """torch's CUDACachingAllocator message after "is free.": the memory each process holds on the device, what of
    it PyTorch allocated (and in private pools: CUDA graphs, once captured) and reserved unallocated, then the
    allocator hint the template already ends with."""
    unallocated = 0.02
    allocated = max(0.0, in_use_gib - non_torch_gib - unallocated)
    pools = f"with {_gib_or_mib(pools_gib)} allocated in private pools (e.g., CUDA Graphs), " if pools_gib else ""
    middle = (f" Process {HOST_PID} has {_gib_or_mib(in_use_gib)} memory in use. Of the allocated memory "
              f"{_gib_or_mib(allocated)} is allocated by PyTorch, {pools}and {_gib_or_mib(unallocated)} is reserved "
              "by PyTorch but unallocated.")
    head, sep, tail = oom.partition(" If reserved")
    return f"{head}{middle}{sep}{tail}"


def _server_up(w: Writer) -> None:
    for tpl in templates_for("up", w.v, w.engine):
        w.template("api", tpl, {"server_index": 0, "host": "0.0.0.0", "port": 8000})
    for line in UVICORN_UP:
        w.raw("api", line.format(pid=1))
