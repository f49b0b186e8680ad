"""``estimate`` and ``plan`` size an fp8 KV cache on 0.8-0.10 with the engine vLLM runs (``vllm.v1_oracle``): V0 where
FlashAttention 3 does not take fp8 (every card but Hopper, and B200 from 0.10.0), refused with VLLM_USE_V1=1. Before,
the hostile review found ``estimate --gpu NVIDIA-L40S --vllm-version 0.8.5 --kv-cache-dtype fp8`` sized V1 and
``plan`` offered fp8 to a 0.8.5 L4 pod with VLLM_USE_V1=1, which vLLM refuses (NotImplementedError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.vllm_deployment import manifest

QWEN = "Qwen/Qwen2.5-7B-Instruct"
FP8 = ("--kv-cache-dtype", "fp8")


def _estimate(cli, gpu: str, version: str, *extra: str, model: str = QWEN) -> dict:
    got = cli("estimate", "--model", model, "--gpu", gpu, "--vllm-version", version, *extra, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    return json.loads(got.stdout)


@pytest.mark.parametrize(("gpu", "version"), [("NVIDIA-L40S", "0.8.5"), ("NVIDIA-L4", "0.9.2"),
                                              ("NVIDIA-L40S", "0.10.2"), ("NVIDIA-L4", "0.10.2")])
def test_fp8_kv_off_hopper_is_sized_as_v0(cli, gpu, version):
    got = _estimate(cli, gpu, version, *FP8)
    v0 = _estimate(cli, gpu, version, *FP8, "--vllm-use-v1", "0")  # the V0 figure
    assert got["engine"] == "V0" and got["kv_cache_tokens"] == v0["kv_cache_tokens"], (got, v0)
    assert _estimate(cli, gpu, version)["engine"] == "V1"  # auto stays on V1


@pytest.mark.parametrize(("version", "engine"), [("0.8.0", "V0"), ("0.8.5", "V1"), ("0.9.2", "V1"), ("0.10.2", "V1")])
def test_hopper_keeps_v1_where_fa3_takes_fp8(cli, version, engine):
    # 0.8.0 refuses any --kv-cache-dtype on V1 ("No Fp8 KV cache so far", engine/arg_utils.py@0.8.0)
    assert _estimate(cli, "NVIDIA-H100-80GB-HBM3", version, *FP8)["engine"] == engine


@pytest.mark.parametrize("version", ["0.8.5", "0.9.2", "0.10.2"])
def test_vllm_use_v1_1_with_fp8_off_hopper_is_config_refused(cli, version):
    got = _estimate(cli, "NVIDIA-L40S", version, *FP8, "--vllm-use-v1", "1")
    assert got["outcome"] == "config_refused" and got["refusal"].startswith("VLLM_USE_V1=1: "), got
    assert "NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache-dtype" in got["refusal"], got
    assert _estimate(cli, "NVIDIA-H100-80GB-HBM3", version, *FP8, "--vllm-use-v1", "1")["engine"] == "V1"


def test_float32_through_0_9_1_and_a_t4_through_0_10_1_fall_back_too(cli):
    assert _estimate(cli, "NVIDIA-A100-SXM4-80GB", "0.8.5", "--dtype", "float32")["engine"] == "V0"
    assert _estimate(cli, "NVIDIA-A100-SXM4-80GB", "0.9.2", "--dtype", "float32")["engine"] == "V1"
    t4 = ("--dtype", "half", "--max-model-len", "4096")
    assert _estimate(cli, "Tesla-T4", "0.10.1", *t4, model="Qwen/Qwen2.5-1.5B-Instruct")["engine"] == "V0"
    assert _estimate(cli, "Tesla-T4", "0.10.2", *t4, model="Qwen/Qwen2.5-1.5B-Instruct")["engine"] == "V1"


def _plan(cli, tmp_path: Path, env: list[dict] | None) -> dict:
    path = manifest(tmp_path, [], gpu="NVIDIA-L4", image="vllm/vllm-openai:v0.8.5", env=env)
    policy = tmp_path / "fp8.yaml"
    policy.write_text("apiVersion: vllm-remedy.io/v1alpha1\nkind: Policy\n"
                      "kv_cache_fp8: {status: allowed, evaluated: 'eval team, 2025-05'}\n"
                      "flags:\n  kv-cache-dtype: {allowed: [auto, fp8]}\n")
    got = cli("plan", "-f", path, "--policy", str(policy), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    return json.loads(got.stdout)


def _fp8_steps(plan: dict) -> list[dict]:
    return [s for s in plan["steps"] if (s.get("set") or {}).get("kv-cache-dtype", "").startswith("fp8")]


def test_plan_never_offers_fp8_to_a_pod_that_forces_v1(cli, tmp_path):
    assert _fp8_steps(_plan(cli, tmp_path, [{"name": "VLLM_USE_V1", "value": "1"}])) == []
    # unset, vLLM falls back to V0 with fp8: the rung is offered, sized as V0
    steps = _fp8_steps(_plan(cli, tmp_path, None))
    assert len(steps) == 1, steps
    length = steps[0]["set"]["max-model-len"]
    v0 = _estimate(cli, "NVIDIA-L4", "0.8.5", *FP8, "--max-model-len", length, "--vllm-use-v1", "0",
                   model="meta-llama/Llama-3.1-8B-Instruct")
    assert v0["engine"] == "V0" and steps[0]["prediction"]["kv_cache_tokens"] == v0["kv_cache_tokens"], (steps, v0)
