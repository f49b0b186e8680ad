"""`plan -o json` (and estimate's) echo every typed flag as typed (hostile review, finding 6): ``--max-num-seqs 064``
came back as ``64`` and ``--gpu-memory-utilization 0.90`` as ``0.9``, while ``--max-model-len 08192`` and the version
were echoed as typed. vLLM reads them alike (``int("064")``), so only the echo changes."""

from __future__ import annotations

import json

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
TYPED = {
    "tensor-parallel-size": "01",
    "gpu-memory-utilization": "0.90",
    "max-model-len": "08192",
    "max-num-seqs": "064",
}


def test_plan_and_estimate_json_echo_counts_as_typed(cli):
    args = (
        "--model",
        LLAMA,
        "--gpu",
        "NVIDIA-L40S",
        "--vllm-version",
        "0.11.0",
        "--tp",
        "01",
        "--gpu-memory-utilization",
        "0.90",
        "--max-model-len",
        "08192",
        "--max-num-seqs",
        "064",
        "-o",
        "json",
    )
    for command in ("plan", "estimate"):
        got = cli(command, *args)
        assert got.returncode in (0, 1), got.stderr
        data = json.loads(got.stdout)
        assert {k: data["flags"].get(k) for k in TYPED} == TYPED, command  # estimate adds the defaults
    est = json.loads(cli("estimate", *args).stdout)
    assert est["max_model_len"] == 8192  # read as vLLM reads it
