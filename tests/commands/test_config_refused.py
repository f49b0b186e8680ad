"""V0 without chunked prefill refuses --max-num-batched-tokens below max-model-len while it builds the scheduler config
(``SchedulerConfig._verify_args``, config.py@0.6.3 and @0.8.5: "max_num_batched_tokens (4096) is smaller than
max_model_len (16384) ..."): estimate and check predict ``config_refused`` without KV figures, and plan's smallest
fix raises the batch to the length instead of cutting the context. V0 turns chunked prefill on by default above
32,768 tokens (engine/arg_utils.py@0.6.3, @0.8.5), where nothing is refused."""

from __future__ import annotations

import json

import pytest

from fixtures.vllm_deployment import manifest

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
V0_0_8 = ("--vllm-version", "0.8.5", "--vllm-use-v1", "0")
V0_0_6 = ("--vllm-version", "0.6.5")


def _estimate(cli, *args: str) -> dict:
    out = cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", *args, "-o", "json")
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("release", [V0_0_8, V0_0_6], ids=["0.8.5-V0", "0.6.5"])
def test_estimate_predicts_the_refusal_without_kv_figures(cli, release):
    data = _estimate(cli, *release, "--max-model-len", "16384", "--max-num-batched-tokens", "4096")
    assert (data["outcome"], data["start"]) == ("config_refused", "config_refused"), data
    assert data["kv_cache_tokens"] is None and data["max_concurrency"] is None, data


@pytest.mark.parametrize(("args", "outcome"), [
    (("--max-model-len", "16384", "--max-num-batched-tokens", "16384"), "fits"),  # not below: accepted
    (("--max-model-len", "65536", "--max-num-batched-tokens", "4096"), None),  # > 32K: chunked prefill on by default
])
def test_no_refusal_where_vllm_accepts_it(cli, args, outcome):
    data = _estimate(cli, *V0_0_6, *args)
    assert data["outcome"] != "config_refused", data
    if outcome is not None:
        assert data["outcome"] == outcome, data


def test_v1_chunks_its_prefills_and_is_not_refused(cli):
    data = _estimate(cli, "--vllm-version", "0.8.5", "--max-model-len", "16384", "--max-num-batched-tokens", "4096")
    assert data["outcome"] != "config_refused", data


def test_check_gives_the_reason_and_the_raise(cli, tmp_path):
    path = manifest(tmp_path, ["--max-model-len", "16384", "--max-num-batched-tokens", "4096"], gpu="NVIDIA-L4",
                    image="vllm/vllm-openai:v0.6.5")
    out = cli("check", "-f", path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert ("start [error]: predicted config_refused on NVIDIA-L4 — vLLM refuses the start at config time: ValueError: "
            "max_num_batched_tokens (4096) is smaller than max_model_len (16384).") in out.stdout, out.stdout
    assert "--max-num-batched-tokens 16384" in out.stdout, out.stdout


def test_check_accepts_it_with_chunked_prefill_on(cli, tmp_path):
    path = manifest(tmp_path, ["--max-model-len", "16384", "--max-num-batched-tokens", "4096",
                               "--enable-chunked-prefill"], gpu="NVIDIA-L4", image="vllm/vllm-openai:v0.6.5")
    assert "config_refused" not in cli("check", "-f", path).stdout


def test_plan_raises_the_batch_rather_than_cutting_the_context(cli):
    out = cli("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", *V0_0_8, "--max-model-len", "16384",
              "--max-num-batched-tokens", "4096", "--target-concurrency", "1", "-o", "json")
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert data["current"]["outcome"] == "config_refused", data["current"]
    first = data["steps"][0]
    assert first["set"] == {"max-num-batched-tokens": "16384"}, first
    assert first["prediction"]["start"] == "fits" and first["prediction"]["max_model_len"] == 16384, first
    assert "refuses a batch below max-model-len" in first["reason"] and "policy" not in first["reason"], first
