"""A raw CUDA OOM raised while the KV cache is allocated: ``kv_cache_allocation_oom`` on every release.

vLLM allocates the cache (V1 ``initialize_kv_cache`` -> ``initialize_kv_cache_tensors`` ->
``_allocate_kv_cache_tensors``' torch.zeros, v1/worker/gpu_model_runner.py@0.11.0; V0
``cache_engine._allocate_kv_cache``) at the size its budget or a flag gave it, with nothing comparing it with the card:
a cache larger than what is left dies there. The traceback's frames place it; it used to be ``unknown``.
"""

from __future__ import annotations

from pathlib import Path

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 827.64 MiB. GPU 0 has a total capacity of "
       "44.42 GiB of which 413.82 MiB is free.")
V034 = "\n".join([
    "(APIServer pid=1) INFO 12-05 10:00:00 [utils.py:142]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.34.0",
    "(EngineCore pid=231) INFO 12-05 10:00:00 [core.py:634] Initializing a V1 LLM engine (v0.34.0) with config: "
    "model='meta-llama/Llama-3.1-8B-Instruct', dtype=torch.bfloat16, max_seq_len=131072",
    "(EngineCore pid=231) INFO 12-05 10:00:08 [model_runner.py:129] Loading model from scratch...",
    "(EngineCore pid=231) INFO 12-05 10:01:20 [model_runner.py:156] Model loading took 15.06 GiB memory and "
    "72.228162 seconds",
    "(EngineCore pid=231) ERROR 12-05 10:01:25 [core.py:137] EngineCore failed to start.",
    "(EngineCore pid=231) ERROR 12-05 10:01:25 [core.py:134] Traceback (most recent call last):",
    f'(EngineCore pid=231) ERROR 12-05 10:01:25 [core.py:199]   File "{SITE}/v1/worker/gpu_worker.py", line 226, '
    "in initialize_from_config",
    f'(EngineCore pid=231) ERROR 12-05 10:01:25 [core.py:190]   File "{SITE}/v1/worker/gpu_model_runner.py", '
    "line 1689, in initialize_kv_cache",
    f"(EngineCore pid=231) ERROR 12-05 10:01:25 [core.py:485] {OOM}",
]) + "\n"
# vLLM 0.11.0's own frames, as a V1 start with an oversized --kv-cache-memory-bytes prints them.
V011 = "\n".join([
    "(APIServer pid=1) INFO 12-05 10:00:00 [api_server.py:1839] vLLM API server version 0.11.0",
    "(EngineCore_DP0 pid=231) INFO 12-05 10:01:20 [gpu_model_runner.py:2653] Model loading took 14.9889 GiB and "
    "72.228162 seconds",
    "(EngineCore_DP0 pid=231) INFO 12-05 10:01:25 [gpu_worker.py:276] Reserved 8.0GiB GiB memory for KV Cache as "
    "specified by kv_cache_memory_bytes config and skipped memory profiling.",
    "(EngineCore_DP0 pid=231) ERROR 12-05 10:01:25 [core.py:708] EngineCore failed to start.",
    "(EngineCore_DP0 pid=231) ERROR 12-05 10:01:25 [core.py:708] Traceback (most recent call last):",
    f'(EngineCore_DP0 pid=231) ERROR 12-05 10:01:25 [core.py:708]   File "{SITE}/v1/worker/gpu_model_runner.py", '
    "line 3977, in initialize_kv_cache",
    f'(EngineCore_DP0 pid=231) ERROR 12-05 10:01:25 [core.py:708]   File "{SITE}/v1/worker/gpu_model_runner.py", '
    "line 3893, in initialize_kv_cache_tensors",
    f'(EngineCore_DP0 pid=231) ERROR 12-05 10:01:25 [core.py:708]   File "{SITE}/v1/worker/gpu_model_runner.py", '
    "line 3680, in _allocate_kv_cache_tensors",
    "(EngineCore_DP0 pid=231) ERROR 12-05 10:01:25 [core.py:708]     tensor = torch.zeros(kv_cache_tensor.size, "
    "dtype=torch.int8,",
    f"(EngineCore_DP0 pid=231) ERROR 12-05 10:01:25 [core.py:708] {OOM}",
]) + "\n"
V073 = "\n".join([
    "INFO 12-05 10:00:00 api_server.py:912] vLLM API server version 0.7.3",
    "INFO 12-05 10:01:20 model_runner.py:1115] Loading model weights took 14.9888 GB",
    "Traceback (most recent call last):",
    f'  File "{SITE}/worker/worker.py", line 260, in initialize_cache',
    "    self._init_cache_engine()",
    f'  File "{SITE}/worker/cache_engine.py", line 66, in _allocate_kv_cache',
    "    torch.zeros(kv_cache_shape, dtype=self.dtype, pin_memory=pin_memory, device=device))",
    OOM,
]) + "\n"


def test_the_kv_cache_allocation_oom_is_classified_on_v1_and_v0():
    for text in (V034, V011, V073):
        report = parse_startup_log(text)
        assert classify(report) is Failure.KV_CACHE_ALLOCATION_OOM, text
        assert report.failure_detail["phase"] == "kv_cache_allocation"


def test_diagnose_names_the_class(cli, tmp_path: Path):
    log = tmp_path / "oom.log"
    log.write_text(V011)
    got = cli("diagnose", "--log", str(log))
    assert "kv_cache_allocation_oom" in got.stdout.splitlines()[0], got.stdout
    assert "CUDA out of memory while allocating the KV cache" in got.stdout, got.stdout
