"""A flag-sized KV cache that starts but holds too few requests for the policy's concurrency: `vllm-remedy plan`
offers removing the pin (back to the --gpu-memory-utilization budget) as a rung of its own, predicted like every
rung, before the hardware rungs, and says why. A pin that fits and meets the target is still kept."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.vllm_deployment import manifest as deployment

ROOT = Path(__file__).resolve().parents[2]

POLICY = str(ROOT / "policies" / "llama-8b.yaml")  # peak 8 x confirm ratio 1.25: 10x at 16,384 tokens


def _manifest(tmp_path: Path, flag: str, value: str) -> str:
    return deployment(tmp_path, ["--max-model-len", "16384", "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64",
                                 flag, value])


def test_a_pin_short_of_the_concurrency_target_is_offered_unset(cli, tmp_path):
    # 4 GiB pinned: 32,768 tokens, 2x at 16,384; the 0.9 budget on the L40S holds ~11.7x
    for flag, value in (("--kv-cache-memory-bytes", "4G"), ("--num-gpu-blocks-override", "2048")):
        manifest = _manifest(tmp_path, flag, value)
        text = cli("plan", "-f", manifest, "--policy", POLICY)
        assert "predicted max concurrency 2.00x is below the required 10.00x" in text.stdout, text.stdout
        assert f"unset {flag}" in text.stdout, text.stdout
        assert "falls short of the policy's concurrency" in text.stdout, text.stdout
        data = json.loads(cli("plan", "-f", manifest, "--policy", POLICY, "-o", "json").stdout)
        first = data["steps"][0]
        assert first["lever"] == "kv-cache-pin" and first["unset"] == [flag.removeprefix("--")], first
        assert "tensor-parallel-size" not in first["set"] and first["template"] == {}, first
        pred = first["prediction"]
        assert pred["start"] == "fits" and pred["max_model_len"] == 16384 and pred["max_concurrency"] >= 10, pred
        assert "budget sizes the KV cache" in first["reason"], first["reason"]


def test_a_pin_that_meets_the_target_is_kept(cli, tmp_path):
    # 24 GiB pinned: 196,608 tokens, 12x at 16,384 — above the 10x required, and it fits the L40S
    data = json.loads(
        cli(
            "plan", "-f", _manifest(tmp_path, "--kv-cache-memory-bytes", "24G"), "--policy", POLICY, "-o", "json"
        ).stdout
    )
    assert data["current"]["start"] == "fits", data["current"]
    assert all(not s["unset"] for s in data["steps"]), data["steps"]
