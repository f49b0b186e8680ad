"""How a failed start's traceback reaches the log, per engine and release, and the source line under each frame.

vLLM logs a start's death from one call site and its formatter prefixes every line of the record with that call's
header, so the whole traceback carries one ``[core.py:NNN]`` (tests/data/logs v0.9.1, v0.11, v0.19): V1's
``logger.exception("EngineCore failed to start.")`` in ``run_engine_core``; V0's MQLLMEngine process logs
``logger.exception(e)`` in ``run_mp_engine`` from 0.6.4 (engine/multiprocessing/engine.py: the error's own text as
the message, ``engine.py:366]`` in the 0.6.4.post1 log), while 0.6.3's let it escape, so Python's multiprocessing
prints ``Process SpawnProcess-1:`` and the bare traceback on stderr. Python prints each frame's source line under
``File "...", line N, in f``; ``CODE`` holds the statement each simulated frame runs.
"""

from __future__ import annotations

from typing import Protocol

_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
_PYTHON = "/usr/lib/python3.12"
V0_LOGGED_SINCE = (0, 6, 4)
#: Where ``run_engine_core`` logs "EngineCore failed to start." in releases whose real logs we hold (the 0.8.5-era
#: issue #17979, tests/data/logs v0.9.1, v0.11, v0.19); a release between takes the nearest one at or below it.
V1_SITES = ((0, 8, 5), 396), ((0, 9, 1), 515), ((0, 11, 0), 708), ((0, 19, 0), 1108)
V0_SITE = 366  # run_mp_engine's logger.exception(e), the 0.6.4.post1 log

#: (path, function) -> the statement Python prints under the frame: the call into the next frame, or the raise.
CODE: dict[tuple[str, str], str] = {
    ("v1/engine/core.py", "run_engine_core"): "engine_core = EngineCoreProc(*args, **kwargs)",
    ("v1/engine/core.py", "_initialize_kv_caches"):
        "available_gpu_memory = self.model_executor.determine_available_memory()",
    ("v1/engine/core.py", "run_busy_loop"): "self._process_engine_step()",
    ("v1/engine/core.py", "step"): "model_output = self.execute_model_with_error_logging(",
    ("v1/core/kv_cache_utils.py", "get_kv_cache_config"):
        "check_enough_kv_cache_memory(vllm_config, kv_cache_spec, available_memory)",
    ("v1/core/kv_cache_utils.py", "check_enough_kv_cache_memory"): "raise ValueError(",
    ("v1/worker/gpu_worker.py", "init_device"): "raise ValueError(",
    ("v1/worker/gpu_worker.py", "load_model"): "self.model_runner.load_model(eep_scale_up=eep_scale_up)",
    ("v1/worker/gpu_worker.py", "determine_available_memory"): "self.model_runner.profile_run()",
    ("v1/worker/gpu_worker.py", "initialize_from_config"): "self.model_runner.initialize_kv_cache(kv_cache_config)",
    ("v1/worker/gpu_worker.py", "compile_or_warm_up_model"): "self.model_runner.capture_model()",
    ("v1/worker/gpu_worker.py", "_check_if_gpu_supports_dtype"): "raise ValueError(",
    ("v1/worker/gpu_model_runner.py", "load_model"): "self.model = model_loader.load_model(",
    ("v1/worker/gpu_model_runner.py", "profile_run"):
        "hidden_states, last_hidden_states = self._dummy_run(self.max_num_tokens, is_profile=True)",
    ("v1/worker/gpu_model_runner.py", "_dummy_run"): "outputs = self.model(",
    ("v1/worker/gpu_model_runner.py", "execute_model"): "model_output = self.model(",
    ("v1/worker/gpu_model_runner.py", "capture_model"): "self._capture_cudagraphs(",
    ("v1/worker/gpu_model_runner.py", "_dummy_sampler_run"): "raise RuntimeError(",
    ("v1/worker/gpu_model_runner.py", "initialize_kv_cache"):
        "kv_caches = self.initialize_kv_cache_tensors(kv_cache_config)",
    ("v1/worker/gpu_model_runner.py", "initialize_kv_cache_tensors"):
        "kv_cache_raw_tensors = self._allocate_kv_cache_tensors(kv_cache_config)",
    ("v1/worker/gpu_model_runner.py", "_allocate_kv_cache_tensors"):
        "tensor = torch.zeros(kv_cache_tensor.size, dtype=torch.int8, device=self.device)",
    ("v1/worker/gpu/model_runner.py", "profile_run"): "self._dummy_run(self.max_num_tokens, skip_attn=True)",
    ("v1/worker/gpu/model_runner.py", "_dummy_run"): "self.execute_model(",
    ("v1/worker/gpu/model_runner.py", "execute_model"): "hidden_states = self.model(",
    ("model_executor/model_loader/base_loader.py", "load_model"): "model = initialize_model(",
    ("model_executor/models/llama.py", "forward"):
        "model_output = self.model(input_ids, positions, intermediate_tensors, inputs_embeds)",
    ("platforms/cuda.py", "check_if_supports_dtype"): "raise ValueError(",
    ("engine/arg_utils.py", "create_engine_config"): "parallel_config = ParallelConfig(",
    ("config/parallel.py", "__post_init__"): "raise ValueError(",
    ("engine/llm_engine.py", "_initialize_kv_caches"):
        "num_gpu_blocks, num_cpu_blocks = (self.model_executor.determine_num_available_blocks())",
    ("worker/worker.py", "determine_num_available_blocks"): "self.model_runner.profile_run()",
    ("worker/worker.py", "initialize_cache"): "raise_if_cache_size_invalid(",
    ("worker/worker.py", "raise_if_cache_size_invalid"): "raise ValueError(",
    ("worker/worker.py", "init_device"): "_check_if_gpu_supports_dtype(self.model_config.dtype)",
    ("worker/worker.py", "_check_if_gpu_supports_dtype"): "raise ValueError(",
    ("worker/worker.py", "_warm_up_model"): "self.model_runner.capture_model(self.gpu_cache)",
    ("worker/cache_engine.py", "__init__"): "self.gpu_cache = self._allocate_kv_cache(",
    ("worker/cache_engine.py", "_allocate_kv_cache"): "torch.zeros(kv_cache_shape,",
    ("worker/model_runner.py", "profile_run"): "self.execute_model(model_input, kv_caches, intermediate_tensors)",
    ("worker/model_runner.py", "execute_model"): "hidden_or_intermediate_states = model_executable(",
    ("worker/model_runner.py", "capture_model"): "graph_runner.capture(**capture_inputs)",
    ("worker/model_runner.py", "capture"): "self.model(",
    ("entrypoints/openai/serving_chat.py", "chat_completion_stream_generator"): "async for res in result_generator:",
}
CODE.update({
    ("engine/multiprocessing/engine.py", "run_mp_engine"):
        "engine = MQLLMEngine.from_engine_args(engine_args=engine_args,",
    ("engine/multiprocessing/engine.py", "from_engine_args"): "return cls(ipc_path=ipc_path,",
    ("engine/multiprocessing/engine.py", "__init__"): "self.engine = LLMEngine(*args, **kwargs)",
    ("engine/llm_engine.py", "__init__"): "self._initialize_kv_caches()",
})
#: The MQLLMEngine process's frames above the engine's own (engine/multiprocessing/engine.py, V0).
_V0_HEAD = [("engine/multiprocessing/engine.py", "run_mp_engine"),
            ("engine/multiprocessing/engine.py", "from_engine_args"),
            ("engine/multiprocessing/engine.py", "__init__"), ("engine/llm_engine.py", "__init__")]


class Lines(Protocol):
    """What the traceback is written through (the renderer's ``Writer``)."""

    v: tuple[int, int, int]
    engine: str

    def log(self, role: str, message: str, *, level: str = ..., source: str = ..., rank: int = ...,
            step: float = ..., site: str | None = ..., line: int | None = ...) -> None: ...

    def raw(self, role: str, text: str, rank: int = 0) -> None: ...


def frame_lines(frames: list[tuple[str, str]], root: str = _SITE) -> list[str]:
    """``File "...", line N, in f`` and its source line, per frame."""
    out = []
    for path, function in frames:
        out.append(f'  File "{root}/{path}", line {120 + len(function) * 7}, in {function}')
        out.append(f"    {CODE.get((path, function), f'return self.{function}(*args, **kwargs)')}")
    return out


def traceback_text(frames: list[tuple[str, str]], last: str) -> list[str]:
    return ["Traceback (most recent call last):", *frame_lines(frames), last]


def engine_failure(w: Lines, frames: list[tuple[str, str]], last: str, header: str | None = None) -> None:
    """A start's death as the release logs it (module docstring); ``header`` overrides V1's message."""
    if w.engine == "v1":
        message = header or "EngineCore failed to start."
        line = next((n for since, n in reversed(V1_SITES) if w.v >= since), None) if header is None else None
        w.log("engine", "\n".join([message, *traceback_text(frames, last)]), level="ERROR", source="core.py",
              site=message, line=line)
        return
    if w.v >= V0_LOGGED_SINCE:
        error = last.split(": ", 1)[1] if ": " in last else last  # logger.exception(e): str(e) is the message
        body = traceback_text(_V0_HEAD + frames, last)
        w.log("engine", "\n".join([error, *body]), level="ERROR", source="engine.py", line=V0_SITE)
        return
    w.raw("engine", "Process SpawnProcess-1:")
    w.raw("engine", "Traceback (most recent call last):")
    python = [("multiprocessing/process.py", "_bootstrap", "self.run()"),
              ("multiprocessing/process.py", "run", "self._target(*self._args, **self._kwargs)")]
    for path, function, code in python:
        w.raw("engine", f'  File "{_PYTHON}/{path}", line {300 + len(function)}, in {function}')
        w.raw("engine", f"    {code}")
    for line in [*frame_lines(_V0_HEAD + frames), last]:
        w.raw("engine", line)
