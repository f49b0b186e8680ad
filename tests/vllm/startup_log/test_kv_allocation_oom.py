"""A raw CUDA OOM raised while the KV cache is allocated: the classifier names the stage on every release.

Such a start has no failure class of its own (``unknown``, as game day predicts a budget that overruns the card),
but ``diagnose`` used to say "during unknown" for it; the traceback's frames (V1 ``initialize_kv_cache``, V0
``cache_engine._allocate_kv_cache``) place it.
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


def test_the_kv_cache_allocation_is_the_stage_on_v1_and_v0():
    for text in (V034, V073):
        report = parse_startup_log(text)
        assert classify(report) is Failure.UNKNOWN, text
        assert report.failure_detail["phase"] == "kv_cache_allocation"


def test_diagnose_names_the_stage(cli, tmp_path: Path):
    log = tmp_path / "oom.log"
    log.write_text(V034)
    got = cli("diagnose", "--log", str(log))
    assert got.stdout.splitlines()[0].endswith("(during kv cache allocation)"), got.stdout
