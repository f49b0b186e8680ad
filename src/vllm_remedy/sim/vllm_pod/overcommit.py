"""Starts that pass every vLLM memory check and still run the GPU out of memory.

Before 0.20 vLLM captures CUDA graphs after sizing the KV cache, outside ``gpu_memory_utilization``; and
"increase" budgets do not subtract memory other processes hold. So the estimator can say "fits" while
its ``peak_gib`` exceeds the card: ``--gpu-memory-utilization 0.98`` crashes in graph capture where 0.90
starts. The crash comes from PyTorch's allocator, not from a vLLM check, so the log ends in a raw CUDA OOM
whose frames place it: KV-cache allocation, or graph capture.
"""

from __future__ import annotations

import re
from datetime import datetime

from vllm_remedy.sim.vllm_pod.launch import Launch
from vllm_remedy.vllm.memory.core import graphs_in_budget
from vllm_remedy.vllm.startup_log.frames import engine_failure
from vllm_remedy.vllm.startup_log.writer import Writer

_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
# Where the OOM is raised, per engine and step (read from gpu_worker.py / worker.py of 0.6.6 and 0.8.5).
_FRAMES = {
    # V1: initialize_kv_cache -> initialize_kv_cache_tensors -> _allocate_kv_cache_tensors' torch.zeros
    # (v1/worker/gpu_model_runner.py@0.11.0).
    ("v1", "kv"): [("v1/worker/gpu_model_runner.py", 3977, "initialize_kv_cache"),
                   ("v1/worker/gpu_model_runner.py", 3893, "initialize_kv_cache_tensors"),
                   ("v1/worker/gpu_model_runner.py", 3680, "_allocate_kv_cache_tensors")],
    ("v1", "graphs"): [("v1/worker/gpu_worker.py", 242, "compile_or_warm_up_model"),
                       ("v1/worker/gpu_model_runner.py", 1661, "capture_model"),
                       ("v1/worker/gpu_model_runner.py", 1676, "_dummy_run")],
    ("v0", "kv"): [("worker/worker.py", 260, "initialize_cache"),
                   ("worker/cache_engine.py", 62, "__init__"),
                   ("worker/cache_engine.py", 66, "_allocate_kv_cache")],
    ("v0", "graphs"): [("worker/worker.py", 291, "_warm_up_model"),
                       ("worker/model_runner.py", 1401, "capture_model"),
                       ("worker/model_runner.py", 1470, "capture")],
}


def graphs_outside(launch: Launch) -> float:
    """CUDA-graph GiB allocated outside the KV budget (0 on V1 from 0.20, and with --enforce-eager); all of them when
    a flag sizes the cache (``flag_sized``): it is allocated at its size and the graphs are captured after it."""
    s = launch.settings
    pinned = bool(s.kv_cache_memory_bytes) or s.num_gpu_blocks_override is not None
    return 0.0 if graphs_in_budget(launch.resolved) and not pinned else launch.estimate.cudagraph_gib


def step(launch: Launch) -> str | None:
    """"kv" or "graphs": the allocation that crosses the card's memory on a start the checks let through."""
    est = launch.estimate
    if not est.fits or est.peak_gib <= est.total_gib:
        return None
    return "kv" if est.peak_gib - graphs_outside(launch) > est.total_gib else "graphs"


def allocation(launch: Launch, where: str) -> tuple[float, float]:
    """(GiB the failing allocation asks for, GiB free at that moment) for PyTorch's message."""
    est = launch.estimate
    before = est.peak_gib - graphs_outside(launch)
    if where == "kv":
        per_layer = est.kv_cache_gib / max(1, launch.model.num_layers)
        return per_layer, max(0.0, min(per_layer / 2, est.total_gib - (before - est.kv_cache_gib + per_layer)))
    free = max(0.0, est.total_gib - before)
    return max(free + 0.02, min(graphs_outside(launch), 0.5)), free


def retarget(tail: list[str], engine: str, where: str, version: str) -> list[str]:
    """An OOM rendered for the serving loop, told as the failed start it is: torch's error (the last line of ``tail``
    with it) raised in the step that failed, logged as the release logs a start's death (``frames.engine_failure``),
    with the frames' real line numbers."""
    oom_line = next(line for line in reversed(tail) if "OutOfMemoryError: " in line)
    oom = oom_line[oom_line.index("torch.OutOfMemoryError: "):]
    steps = _FRAMES[(engine, where)]
    w = Writer(version, engine, 1, datetime(2025, 1, 1), False)
    engine_failure(w, [(path, function) for path, _, function in steps], oom)
    numbers = {(f"{_SITE}/{path}", function): number for path, number, function in steps}
    out = []
    for line in w.lines:
        m = _FRAME.search(line)
        key = (m.group(1), m.group(3)) if m is not None else None
        if m is not None and key in numbers:
            line = f'{line[:m.start()]}File "{m.group(1)}", line {numbers[key]}, in {m.group(3)}{line[m.end():]}'
        out.append(line)
    return out
