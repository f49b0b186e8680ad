"""A start refused by the free-memory check holds only what was on the card before it and its own CUDA context:
vLLM compares free memory with utilization x total in ``init_device`` (v1/worker/gpu_worker.py@0.11.0 inline;
``request_memory``, v1/worker/utils.py@0.19.0), before ``load_model`` — no weights, no profile, no KV cache. The
tools' peak for it was other + context + weights + activation, and the bar drew the budget's KV cache."""

from __future__ import annotations

import json

M = "meta-llama/Llama-3.1-8B-Instruct"
CASES = (
    ("--gpu", "NVIDIA-L40S", "--vllm-version", "0.11.0", "--other-gib", "10"),
    ("--gpu", "NVIDIA-L4", "--vllm-version", "0.19.0", "--other-gib", "3"),
    ("--gpu", "NVIDIA-L4", "--vllm-version", "0.34.0", "--other-gib", "3", "--kv-cache-memory-bytes", "4G"),
)


def test_the_refused_start_holds_only_its_cuda_context(cli):
    for case in CASES:
        args = ("estimate", "--model", M, "--max-model-len", "16384", *case)
        data = json.loads(cli(*args, "-o", "json").stdout)
        assert data["start"] == "free_memory_below_utilization", data
        other = float(case[case.index("--other-gib") + 1])
        # the worker's CUDA context (and NCCL at TP >= 2) is all vLLM holds; never the 15 GiB of weights
        assert other < data["peak_gib"] < other + 1.0, (case, data["peak_gib"])
        text = cli(*args).stdout
        bar = next(line for line in text.splitlines() if line.startswith("["))
        assert "K" not in bar.split("]")[0], (case, bar)
        # nothing of the model was loaded: the bar holds other processes + context alone, at the reported peak
        cells = bar.split("]")[0].lstrip("[")
        assert set(cells) <= {"O", "."} and "O other processes + CUDA context" in bar, (case, bar)
        assert cells.count("O") == round(60 * data["peak_gib"] / data["total_gib"]), (case, bar)
        peak = next(line for line in text.splitlines() if line.startswith("peak device memory"))
        assert f"{data['peak_gib']:.2f} of" in peak, peak


def test_a_start_that_passes_the_check_still_counts_everything(cli):
    data = json.loads(
        cli(
            "estimate",
            "--model",
            M,
            "--max-model-len",
            "16384",
            "--gpu",
            "NVIDIA-L40S",
            "--vllm-version",
            "0.11.0",
            "--other-gib",
            "2",
            "-o",
            "json",
        ).stdout
    )
    assert data["start"] == "fits" and data["peak_gib"] > 2 + data["weights_gib"] + data["kv_cache_gib"], data


def test_plan_shows_the_same_peak(cli):
    args = (
        "--model",
        M,
        "--gpu",
        "NVIDIA-L4",
        "--vllm-version",
        "0.19.0",
        "--max-model-len",
        "8192",
        "--other-gib",
        "3",
    )
    current = next(line for line in cli("plan", *args).stdout.splitlines() if line.startswith("current:"))
    peak = json.loads(cli("estimate", *args, "-o", "json").stdout)["peak_gib"]
    assert current.startswith("current:  free_memory_below_utilization") and f"peak {peak:.2f} of" in current, current
    assert 3 < peak < 4, current
