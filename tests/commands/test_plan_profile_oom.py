"""`vllm-remedy plan` for a start predicted or seen to die in vLLM's memory-profiling forward (``profile_oom``): the
rung that shrinks the profile may need a utilization change too (a smaller batch fits the profile, the higher budget
then sizes the KV cache), and on V0 without chunked prefill --max-num-batched-tokens still halves, down to
max-model-len (vLLM 0.6.3 config.py SchedulerConfig._verify_args refuses max_num_batched_tokens < max_model_len
unless chunked prefill is on). A rung that only raises the utilization is never offered for it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixtures.vllm_deployment import manifest as deployment

ROOT = Path(__file__).resolve().parents[2]
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
POLICY = """\
extends: default
description: Llama-3.1-8B-Instruct on one L4, two requests at a time.
flags:
  gpu-memory-utilization: {{min: 0.5, max: 0.95}}
  tensor-parallel-size: {{min: 1, max: 1}}
{extra}gpu:
  products: [NVIDIA-L4]
peak_concurrency: 2
"""


def _policy(tmp_path: Path, extra: str = "") -> str:
    shutil.copy(ROOT / "policies" / "default.yaml", tmp_path / "default.yaml")
    path = tmp_path / "l4pol.yaml"
    path.write_text(POLICY.format(extra=extra))
    return str(path)


def _manifest(tmp_path: Path, util: str) -> str:
    return deployment(tmp_path, ["--max-model-len", "8192", "--max-num-batched-tokens", "65536",
                                 "--gpu-memory-utilization", util], gpu="NVIDIA-L4")


def _steps(cli, *args: str) -> list[dict]:
    out = cli("plan", *args, "-o", "json")
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)["steps"]


@pytest.mark.parametrize("failure", [None, "profile_oom"])
def test_a_smaller_batch_with_a_higher_utilization_is_offered_at_a_low_utilization(cli, tmp_path, failure):
    """At 0.7 the 65,536-token profile overflows the L4; 16,384 fits the profile but 0.7 leaves too little KV for
    2x, and 0.9 alone never fits the profile: only both together start (estimate: 2.80x)."""
    extra = ("--failure", failure) if failure else ()
    steps = _steps(cli, "-f", _manifest(tmp_path, "0.7"), "--policy", _policy(tmp_path), *extra)
    assert steps, "no fitting change"
    first = steps[0]
    assert first["lever"] == "max-num-batched-tokens", first
    assert int(first["set"]["max-num-batched-tokens"]) < 65536 and "gpu-memory-utilization" in first["set"], first
    pred = first["prediction"]
    assert pred["start"] == "fits" and pred["max_model_len"] == 8192 and pred["max_concurrency"] >= 2, pred
    assert "gpu-memory-utilization 0.7→" in first["reason"], first["reason"]
    assert all(set(s["set"]) - {"max-model-len"} != {"gpu-memory-utilization"} for s in steps), steps


@pytest.mark.parametrize("version", ["0.5.5", "0.6.3", "0.6.6", "0.7.3"])
def test_v0_without_chunked_prefill_halves_the_batch_down_to_max_model_len(cli, tmp_path, version):
    steps = _steps(cli, "--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-model-len", "8192", "--vllm-version", version,
                   "--max-num-batched-tokens", "65536", "--policy", _policy(tmp_path))
    assert steps, f"{version}: no fitting change"
    first = steps[0]
    assert first["lever"] == "max-num-batched-tokens", first
    assert 8192 <= int(first["set"]["max-num-batched-tokens"]) < 65536, first
    assert first["prediction"]["start"] == "fits" and first["prediction"]["max_model_len"] == 8192, first


def test_a_policy_clamp_is_labelled_by_the_flag_it_changes(cli, tmp_path):
    """The policy's max-num-batched-tokens bound (16,384) alone is the fix: the rung names that flag, not
    max-model-len, and does not say that nothing else changes."""
    policy = _policy(tmp_path, "  max-num-batched-tokens: {min: 2048, max: 16384}\n")
    steps = _steps(cli, "-f", _manifest(tmp_path, "0.9"), "--policy", policy)
    first = steps[0]
    assert first["set"] == {"max-num-batched-tokens": "16384"}, first
    assert first["lever"] == "max-num-batched-tokens", first
    assert "nothing else changes" not in first["reason"] and "policy" in first["reason"], first["reason"]


def test_a_utilization_raised_beside_tp_says_why(cli):
    """With 5.5 GiB held by other processes TP 2 fits the profile; the utilization rises with it to size the KV
    cache, which the reason says (not 'keeps the headroom margin')."""
    steps = _steps(cli, "--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-model-len", "8192", "--vllm-version", "0.8.5",
                   "--other-gib", "5.5", "--gpu-memory-utilization", "0.6", "--failure", "profile_oom",
                   "--target-concurrency", "2", "--node-gpus", "2")
    tp = [s for s in steps if s["lever"] == "tensor-parallel-size"]
    assert tp and tp[0]["set"]["gpu-memory-utilization"] != "0.6", steps
    assert "keeps the headroom margin" not in tp[0]["reason"], tp[0]["reason"]
    assert "gpu-memory-utilization 0.6→" in tp[0]["reason"], tp[0]["reason"]


def test_the_hint_names_no_fixed_tp_and_says_utilization_alone_does_not_help():
    from vllm_remedy.vllm.failures import failure_class
    hint = failure_class("profile_oom").hint
    assert "TP=2" not in hint and "larger tensor-parallel-size" in hint, hint
    assert "on its own" in hint and "KV cache" in hint, hint
