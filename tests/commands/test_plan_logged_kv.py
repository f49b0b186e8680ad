"""`plan --log` holds every candidate to the KV cache a failing V1 log showed: "Available KV cache memory" and the
error's "estimated maximum model length" scale the prediction as a "GPU KV cache size" line does, so no step at the
logged budget asks for more than vLLM said it can hold, and steps that change the budget are scaled the same way.

The logs below are CONSTRUCTED (no published failing log shows these figures): the lines are copied from the real
tests/data/logs/v0.10.2_fp8_max_len_estimate.log (the error, vLLM issue 25350) and v0.10.2_fp8_kv_healthy.log (the
"Available KV cache memory" line), with the figures of the hostile review's case put in: Llama-3.1-8B on L40S, TP 2,
0.10.1, 2.75 GiB of KV (45,056 tokens at 64 KiB per token per rank, as vLLM's error says).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from vllm_remedy import hub
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory.kv_layout import check_rule
from vllm_remedy.vllm.memory.terms import kv_bytes_per_token, kv_layout

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GEMMA3 = Path(__file__).parents[1] / "data" / "configs" / "gemma-3-27b-it.json"
_LINES = ("(EngineCore_DP0 pid=231) INFO 09-19 10:02:11 [gpu_worker.py:276] Available KV cache memory: {gib} GiB\n"
          "(EngineCore_DP0 pid=231) ERROR 09-19 10:02:11 [core.py:700] ValueError: To serve at least one request with "
          "the models's max seq len (131072), ({needed} GiB KV cache is needed, which is larger than the available KV "
          "cache memory ({gib} GiB). Based on the available memory, the estimated maximum model length is {longest}. "
          "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
#: CONSTRUCTED (see the module docstring): the review's Llama-3.1-8B / L40S / TP 2 / 0.10.1 start.
LLAMA_LOG = _LINES.format(gib="2.75", needed="8.00", longest=45056)
ESTIMATED = 45056
PLAN = ("plan", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--tp", "2", "--vllm-version", "0.10.1")
TP2 = {"tensor-parallel-size": "2", "max-model-len": "131072"}


def _log(tmp_path: Path, text: str = LLAMA_LOG) -> str:
    path = tmp_path / "constructed.log"
    path.write_text(text)
    return str(path)


def _same_budget(steps: list[dict]) -> list[dict]:
    """Steps that keep the logged KV budget: max-model-len alone (every other flag moves the predicted cache)."""
    return [s for s in steps if list(s["set"]) == ["max-model-len"] and s["gpu"] == "NVIDIA-L40S"]


def _held_to_the_log(model, steps: list[dict], base: dict[str, str], seen_gib: float) -> None:
    """Every step on the logged card passes vLLM's own max-length check on the KV cache the memory model predicts for
    it, scaled by the same observation (max-num-seqs, utilization and TP steps move the cache; the log scales it)."""
    gpu = catalog.gpu("NVIDIA-L40S")

    def at(flags: dict[str, str]):
        settings = EngineSettings.from_flags(flags, "0.10.1", {})
        return estimate(model, gpu, settings), resolve(model, gpu, settings)

    scale = seen_gib / at(base)[0].kv_cache_gib
    for step in steps:
        if step["gpu"] != "NVIDIA-L40S":
            continue
        est, res = at({**base, **step["set"]})
        need = kv_layout(model, res).needed_bytes(step["prediction"]["max_model_len"], res.mnbt,
                                                  check_rule(res.rules.version))
        assert need <= est.kv_cache_gib * scale * GIB, (step, need / GIB, est.kv_cache_gib * scale)


def test_no_step_at_the_logged_budget_asks_for_more_than_vllm_estimated_json(cli, tmp_path):
    for target in ("8", "1"):
        got = cli(*PLAN, "--log", _log(tmp_path), "--target-concurrency", target, "-o", "json")
        assert got.returncode == 1, got.stderr
        plan = json.loads(got.stdout)
        same = _same_budget(plan["steps"])
        assert same and plan["steps"][0]["lever"] == "max-model-len", plan["steps"]
        for step in same:
            assert int(step["set"]["max-model-len"]) <= ESTIMATED, (target, step)
            # the recorded prediction is the KV cache the log vouches for, not the estimator's 500k tokens
            assert step["prediction"]["kv_cache_tokens"] <= ESTIMATED, step
        _held_to_the_log(hub.resolve(LLAMA, None)[0], plan["steps"], dict(TP2), 2.75)
        assert any("2.75 GiB of KV cache" in n and "estimated maximum model length of 45,056" in n
                   for n in plan["notes"]), plan["notes"]


def test_no_step_at_the_logged_budget_asks_for_more_than_vllm_estimated_human(cli, tmp_path):
    got = cli(*PLAN, "--log", _log(tmp_path), "--target-concurrency", "1")
    assert got.returncode == 1, got.stderr
    rows = [line for line in got.stdout.splitlines() if line[:1].isdigit()]
    assert rows and rows[0].split()[1:3] == ["--max-model-len", rows[0].split()[2]]
    kept = [r for r in rows if len(re.split(r"\s{2,}", r)[1].split()) == 2]  # "--max-model-len N" alone
    assert kept
    for row in kept:
        assert int(row.split()[2]) <= ESTIMATED, row
    assert "every candidate's KV cache is scaled by 0.090" in got.stdout
    assert "predicted max concurrency 0.34x (scaled to the log) is below the required 1.05x" in got.stdout


def test_a_utilization_increase_scales_from_the_logged_cache(cli, tmp_path):
    """The log was taken at 0.80; raising utilization to 0.91 adds what the memory model says it adds, scaled by the
    same observation: longer than at 0.80, never the unscaled prediction's length."""
    got = cli(*PLAN, "--gpu-memory-utilization", "0.8", "--log", _log(tmp_path), "--target-concurrency", "1",
              "-o", "json")
    plan = json.loads(got.stdout)
    first = plan["steps"][0]
    util = next(s for s in plan["steps"] if s["lever"] == "gpu-memory-utilization")
    assert int(first["set"]["max-model-len"]) <= ESTIMATED
    model, gpu = hub.resolve(LLAMA, None)[0], catalog.gpu("NVIDIA-L40S")

    def kv(u: str) -> float:
        flags = {"tensor-parallel-size": "2", "gpu-memory-utilization": u, "max-model-len": "131072"}
        return estimate(model, gpu, EngineSettings.from_flags(flags, "0.10.1", {})).kv_cache_gib

    ratio = kv(util["set"]["gpu-memory-utilization"]) / kv("0.8")
    length = int(util["set"]["max-model-len"])
    assert int(first["set"]["max-model-len"]) < length <= ESTIMATED * ratio, (first, util, ratio)


def test_a_hybrid_model_reads_the_estimated_length_through_its_layout(cli, tmp_path):
    """Gemma 3 (5 sliding-window layers per full one): 54,192 tokens need 2.68 GiB by vLLM's own check, where a
    per-token division would say 12.8 GiB; the plan scales by the layout's figure and stays at or below 54,192."""
    model = hub.spec_from_json(GEMMA3.read_bytes(), str(GEMMA3), str(GEMMA3))
    gpu = catalog.gpu("NVIDIA-L40S")
    settings = EngineSettings.from_flags({"tensor-parallel-size": "2", "max-model-len": "131072"}, "0.10.1", {})
    res = resolve(model, gpu, settings)
    layout, rule = kv_layout(model, res), check_rule(res.rules.version)
    longest = layout.longest(2.68 * GIB, res.mnbt, 1 << 24, rule)
    assert longest == 54192 and longest * kv_bytes_per_token(model, res) > 4 * 2.68 * GIB  # naive would be wrong
    text = _LINES.format(gib="2.68", needed=f"{layout.needed_bytes(131072, res.mnbt, rule) / GIB:.2f}",
                         longest=longest)  # CONSTRUCTED from the memory model's layout (see the module docstring)
    got = cli("plan", "--model-config", str(GEMMA3), "--gpu", "NVIDIA-L40S", "--tp", "2", "--vllm-version", "0.10.1",
              "--max-model-len", "131072", "--log", _log(tmp_path, text), "--target-concurrency", "1", "-o", "json")
    plan = json.loads(got.stdout)
    same = _same_budget(plan["steps"])
    assert same, plan
    for step in same:
        assert int(step["set"]["max-model-len"]) <= longest, step
    _held_to_the_log(model, plan["steps"], dict(TP2), 2.68)
    assert any("(2.68 GiB per GPU)" in n for n in plan["notes"]), plan["notes"]


#: CONSTRUCTED (the second hostile review's case): a 0.19.0 L4 start at 0.95 whose log shows 1.50 GiB of KV cache, then
#: a CUDA out-of-memory in graph capture; lines shaped as tests/data/logs' 0.19.0 planner logs print them.
CAPTURE_LOG = (
    "(APIServer pid=1) INFO 04-22 15:56:27 [entrypoints/utils.py:299]  version 0.19.0\n"
    "(EngineCore pid=285) INFO 04-22 15:57:45 [v1/worker/gpu_worker.py:436] Available KV cache memory: 1.50 GiB\n"
    "(EngineCore pid=285) INFO 04-22 15:57:45 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 12,288 tokens\n"
    "(EngineCore pid=285) INFO 04-22 15:57:46 [v1/worker/gpu_model_runner.py:5900] Capturing CUDA graphs (mixed "
    "prefill-decode, PIECEWISE):  10%|\n"
    "(EngineCore pid=285) ERROR 04-22 15:57:47 [v1/engine/core.py:1100] EngineCore failed to start.\n"
    "(EngineCore pid=285) ERROR 04-22 15:57:47 [v1/engine/core.py:1100] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 21.96 GiB of which 3.06 MiB is free.\n")


def test_a_lower_utilization_loses_the_logged_shortfall_in_gib_not_a_share(cli, tmp_path):
    """vLLM's KV budget is utilization x total less the non-KV memory it measured, which does not shrink with
    utilization: at 0.95 the log had 1.50 GiB, so at 0.92 it has 1.50 - 0.03 x 21.96 = 0.84 GiB (6,880 tokens at
    128 KiB). Scaling the prediction by logged/predicted (0.33) would credit more and proposed 8,704, which vLLM
    refuses; every step at a lower utilization must fit 0.84 GiB's worth."""
    got = cli("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.19.0", "--max-model-len", "16384",
              "--gpu-memory-utilization", "0.95", "--log", _log(tmp_path, CAPTURE_LOG), "--target-concurrency", "1",
              "-o", "json")
    plan = json.loads(got.stdout)
    lowered = [s for s in plan["steps"] if float(s["set"].get("gpu-memory-utilization", "0.95")) < 0.95
               and s["set"].get("tensor-parallel-size", "1") == "1" and s["gpu"] == "NVIDIA-L4"]
    assert lowered, plan["steps"]
    for step in lowered:
        util = float(step["set"]["gpu-memory-utilization"])
        real_gib = 1.50 - (0.95 - util) * 21.96
        assert int(step["set"]["max-model-len"]) <= real_gib * GIB / (128 * 1024), step
