"""Rendered tracebacks have the form real vLLM logs give them (tests/data/logs), not one invented per line.

vLLM logs a start's failure from ONE call site, ``logger.exception`` (V1 ``[core.py:NNN] EngineCore failed to
start.``; V0 0.6.4+ ``engine.py:366] <the error>`` from run_mp_engine), and its formatter prefixes every line of the
traceback with that same header; Python prints each frame's source line under ``File "...", line N, in f``;
torch's CUDA OOM ends with the memory in use, what PyTorch allocated and reserved, and the allocator hint.
"""

from __future__ import annotations

import re

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log, render_startup_log

BASE = dict(model="meta-llama/Llama-3.1-8B-Instruct", weights_gib=7.51, kv_cache_gib=63.76,
            kv_cache_tokens=1044688, gpu_blocks=65293, max_concurrency=127.53, max_model_len=8192,
            cudagraph_gib=0.76, total_gpu_gib=79.19, gpu_memory_utilization=0.95, activation_gib=1.89,
            non_torch_gib=2.07)
DETAIL = {"needed_gib": 95.64, "available_gib": 63.76, "suggested_max_model_len": 5632, "free_gib": 60.87,
          "requested_gib": 75.23, "tried_to_allocate_gib": 1.74, "num_dummy_requests": 1024}
TRACED = (Failure.NO_CACHE_BLOCKS, Failure.MAX_LEN_EXCEEDS_KV, Failure.PROFILE_OOM, Failure.CUDAGRAPH_CAPTURE_OOM,
          Failure.KV_CACHE_ALLOCATION_OOM, Failure.SAMPLER_WARMUP_OOM, Failure.FREE_MEMORY_BELOW_UTILIZATION,
          Failure.OOM_LOADING_WEIGHTS, Failure.OOM_UNDER_LOAD)
VERSIONS = ("0.6.3", "0.6.4", "0.8.5", "0.10.2", "0.11.0", "0.22.0")
HEADER = re.compile(r"^(?:\(\S+ pid=\d+\) |\(\S+ rank=\d+ pid=\d+\) )?ERROR \d\d-\d\d \d\d:\d\d:\d\d "
                    r"(\[?[\w/.]+\.py:\d+\]) ")


def _renders() -> list[tuple[str, Failure, str]]:
    out = []
    for version in VERSIONS:
        for failure in TRACED:
            try:
                out.append((version, failure, render_startup_log(version, failure=failure, failure_detail=DETAIL,
                                                                 **BASE)))
            except ValueError:  # this version cannot fail this way
                continue
    return out


RENDERS = _renders()


@pytest.mark.parametrize(("version", "failure", "text"), RENDERS, ids=[f"{v}-{f.value}" for v, f, _ in RENDERS])
def test_one_traceback_is_one_logging_call_with_source_lines(version, failure, text):
    lines = re.sub(r"\x1b\[[\d;]*m", "", text).splitlines()  # before 0.12 the process tag is always cyan
    start = next(i for i, line in enumerate(lines) if line.endswith("Traceback (most recent call last):"))
    end = next(i for i in range(start, len(lines)) if re.search(r"(Error|Exception): ", lines[i].split("] ")[-1]))
    block = lines[start:end + 1]
    sites = {m.group(1) for line in block if (m := HEADER.match(line))}
    assert len(sites) <= 1, (sites, block)  # one call site, or none (Python's own print, 0.6.3)
    if sites:
        (site,) = sites
        assert all(HEADER.match(line) and HEADER.match(line).group(1) == site for line in block), block
        assert HEADER.match(lines[start - 1]).group(1) == site  # the logging call's own message opens it
    bodies = [line.split("] ", 1)[1] if sites else line for line in block]
    for i, body in enumerate(bodies):
        if body.startswith('  File "'):
            assert bodies[i + 1].startswith("    ") and not bodies[i + 1].lstrip().startswith("File "), block
    assert classify(parse_startup_log(text)) is failure, version


@pytest.mark.parametrize("version", ["0.8.5", "0.11.0", "0.22.0"])
def test_torch_cuda_oom_carries_its_memory_tail(version):
    text = render_startup_log(version, failure=Failure.PROFILE_OOM, failure_detail=DETAIL, **BASE)
    (oom,) = [line for line in text.splitlines() if "torch.OutOfMemoryError: CUDA out of memory." in line]
    assert re.search(r"is free\. Process \d+ has \d+\.\d\d GiB memory in use\. Of the allocated memory "
                     r"\d+\.\d\d GiB is allocated by PyTorch, and \d+\.\d\d MiB is reserved by PyTorch but "
                     r"unallocated\. If reserved but unallocated memory is large try setting "
                     r"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation\.  See documentation "
                     r"for Memory Management  \(https://pytorch\.org/docs/stable/notes/cuda\.html#environment-"
                     r"variables\)$", oom), oom


def test_v0_logs_the_error_from_the_engine_process_not_a_v1_module():
    old = render_startup_log("0.6.3", failure=Failure.NO_CACHE_BLOCKS, **BASE)
    assert "core.py" not in old and "Error in engine startup." not in old
    assert "Process SpawnProcess-1:" in old.splitlines()  # run_mp_engine let it escape: Python's own print
    new = render_startup_log("0.6.4", failure=Failure.NO_CACHE_BLOCKS, **BASE)
    (_,) = [line for line in new.splitlines() if line.startswith("ERROR") and "engine.py:366]" in line
            and line.endswith("] No available memory for the cache blocks. Try increasing "
                              "`gpu_memory_utilization` when initializing the engine.")]
    assert "core.py" not in new


@pytest.mark.parametrize(("version", "site"), [("0.8.5", "[core.py:396]"), ("0.9.1", "[core.py:515]"),
                                               ("0.10.2", "[core.py:515]"), ("0.11.0", "[core.py:708]"),
                                               ("0.22.0", "[core.py:1108]")])
def test_engine_core_failed_to_start_is_logged_where_the_release_logs_it(version, site):
    text = render_startup_log(version, failure=Failure.NO_CACHE_BLOCKS, **BASE)
    assert f"{site} EngineCore failed to start." in text


def test_the_sim_times_python_s_own_print_with_the_crash_not_the_startup():
    from vllm_remedy.sim.vllm_pod import timeline

    lines, tail = timeline._split(render_startup_log("0.6.3", failure=Failure.NO_CACHE_BLOCKS, **BASE))
    assert tail[:2] == ["Process SpawnProcess-1:", "Traceback (most recent call last):"] and "Process" not in lines[-1]
