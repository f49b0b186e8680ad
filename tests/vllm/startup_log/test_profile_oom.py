"""A raw CUDA OOM in the memory-profiling forward is ``profile_oom`` on every runner, with vLLM's own frames:
V1 determine_available_memory -> profile_run -> _dummy_run (v1/worker/gpu_worker.py, gpu_model_runner.py@0.19.0),
Model Runner V2's _dummy_run -> execute_model (v1/worker/gpu/model_runner.py@0.28.0), V0
determine_num_available_blocks -> profile_run -> execute_model (worker/worker.py, model_runner.py@0.6.6).
A sampler OOM inside profile_run (0.19 runs _dummy_sampler_run there) stays ``sampler_warmup_oom``, and a warm-up
forward after the KV cache exists (compile_or_warm_up_model -> _dummy_run) is no profile."""

from __future__ import annotations

import json

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log, render_startup_log

BASE = dict(model="meta-llama/Llama-3.1-8B-Instruct", weights_gib=15.06, kv_cache_gib=None, max_model_len=8192,
            total_gpu_gib=21.96, gpu_memory_utilization=0.7, activation_gib=0.99, non_torch_gib=0.27)
DETAIL = {"tried_to_allocate_gib": 0.25, "free_gib": 0.1}
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of "
       "21.96 GiB of which 102.40 MiB is free.")
SITE = "/usr/local/lib/python3.12/dist-packages/vllm"


def _tb(frames: list[tuple[str, str]]) -> str:
    lines = ["ERROR 06-02 09:30:03 [core.py:134] EngineCore failed to start.",
             "ERROR 06-02 09:30:03 [core.py:134] Traceback (most recent call last):"]
    lines += [f'ERROR 06-02 09:30:03 [core.py:134]   File "{SITE}/{path}", line 1, in {fn}' for path, fn in frames]
    return "\n".join([*lines, f"ERROR 06-02 09:30:03 [core.py:134] {OOM}"]) + "\n"


@pytest.mark.parametrize(("version", "kw", "frame"), [
    ("0.6.6", {}, "worker/model_runner.py\", line"), ("0.11.0", {"tp_size": 2}, "gpu_model_runner.py\", line"),
    ("0.19.0", {}, "in _dummy_run"), ("0.28.0", {"runner_v2": True}, "gpu/model_runner.py\", line"),
    ("0.34.0", {}, "in profile_run"),
])
def test_the_rendered_profile_oom_is_classified(version, kw, frame):
    text = render_startup_log(version, failure=Failure.PROFILE_OOM, failure_detail=DETAIL, **BASE, **kw)
    assert frame in text and "Memory profiling" not in text and "KV cache" not in text
    report = parse_startup_log(text)
    assert classify(report) is Failure.PROFILE_OOM
    assert report.failure_detail["phase"] == "profiling" and report.failure_detail["tried_to_allocate_gib"] == 0.25


def test_the_sampler_frames_still_win_inside_profile_run():
    text = _tb([("v1/worker/gpu_worker.py", "determine_available_memory"),
                ("v1/worker/gpu_model_runner.py", "profile_run"),
                ("v1/worker/gpu_model_runner.py", "_dummy_sampler_run")])
    assert classify(parse_startup_log(text)) is Failure.SAMPLER_WARMUP_OOM


def test_a_warm_up_forward_after_the_kv_cache_is_not_the_profile():
    report = parse_startup_log(_tb([("v1/worker/gpu_worker.py", "compile_or_warm_up_model"),
                                    ("v1/worker/gpu_model_runner.py", "_dummy_run")]))
    assert classify(report) is Failure.UNKNOWN and report.failure_detail["phase"] == "warmup"


def test_diagnose_cli_names_it_with_the_hint(cli, tmp_path):
    log = tmp_path / "previous.log"
    log.write_text(render_startup_log("0.19.0", failure=Failure.PROFILE_OOM, failure_detail=DETAIL, **BASE))
    got = cli("diagnose", "--log", str(log))
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0].startswith("profile_oom: CUDA out of memory during the memory-profiling forward")
    data = json.loads(cli("diagnose", "--log", str(log), "-o", "json").stdout)
    assert data["failure"] == "profile_oom" and "--max-num-batched-tokens" in data["hint"]
    assert data["hint"].startswith("step 4: ")
