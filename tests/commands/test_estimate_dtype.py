"""estimate and check on bfloat16 below compute capability 8.0: vLLM's worker refuses it before loading anything
(every release), and --dtype auto on a bfloat16 checkpoint is refused through 0.9.0 and falls back to float16 from
0.9.1 (``vllm.dtype_support``). A hostile review found a T4 with --dtype bfloat16 predicted to fit."""

from __future__ import annotations

import json

import pytest
import yaml

LLAMA = "meta-llama/Llama-3.2-1B-Instruct"  # a bfloat16 checkpoint


def _estimate(cli, gpu: str, version: str, *flags: str) -> dict:
    got = cli("estimate", "--model", LLAMA, "--gpu", gpu, "--vllm-version", version, *flags, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


@pytest.mark.parametrize("gpu", ["Tesla-T4", "Tesla-V100-SXM2-16GB"])
@pytest.mark.parametrize("version", ["0.6.3", "0.8.5", "0.9.1", "0.11.0", "0.34.0"])
def test_explicit_bfloat16_is_refused_below_capability_8_in_every_release(cli, gpu, version):
    data = _estimate(cli, gpu, version, "--dtype", "bfloat16")
    assert (data["outcome"], data["start"]) == ("dtype_unsupported", "dtype_unsupported")
    assert data["peak_gib"] < 1.0  # refused as the worker sets its device up: nothing loaded
    assert [data[k] for k in ("kv_cache_gib", "kv_cache_tokens", "gpu_blocks", "max_concurrency")] == [None] * 4


@pytest.mark.parametrize(("version", "outcome"), [("0.6.3", "dtype_unsupported"), ("0.8.5", "dtype_unsupported"),
                                                  ("0.9.0", "fits"), ("0.9.1", "fits"),
                                                  ("0.10.2", "fits"), ("0.34.0", "fits")])
def test_auto_on_a_bfloat16_checkpoint_is_refused_until_0_9_0_then_falls_back(cli, version, outcome):
    assert _estimate(cli, "Tesla-T4", version)["outcome"] == outcome
    assert _estimate(cli, "Tesla-T4", version, "--dtype", "auto")["outcome"] == outcome


@pytest.mark.parametrize("version", ["0.8.5", "0.34.0"])
@pytest.mark.parametrize("dtype", ["half", "float16"])
def test_float16_on_a_t4_fits(cli, version, dtype):
    assert _estimate(cli, "Tesla-T4", version, "--dtype", dtype)["outcome"] == "fits"


def test_bfloat16_on_an_ampere_card_fits(cli):
    assert _estimate(cli, "NVIDIA-L4", "0.34.0", "--dtype", "bfloat16")["outcome"] == "fits"


def test_human_output_names_the_refusal_and_the_fix(cli):
    got = cli("estimate", "--model", LLAMA, "--gpu", "Tesla-T4", "--vllm-version", "0.34.0", "--dtype", "bfloat16")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0].split(None, 1) == ["outcome", (
        "dtype_unsupported: vLLM refuses bfloat16 on the Tesla-T4 (compute capability below 8.0) before loading the "
        "model; set --dtype half (float16), or pin a GPU of capability 8.0 or newer")]


def _deployment(image: str, args: list[str]) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama", "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llama"}},
                     "template": {"metadata": {"labels": {"app": "llama"}},
                                  "spec": {"nodeSelector": {"nvidia.com/gpu.product": "Tesla-T4"},
                                           "containers": [{"name": "vllm", "image": image,
                                                           "command": ["vllm", "serve"], "args": [LLAMA, *args],
                                                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.34.0"])
def test_check_fails_a_t4_deployment_with_dtype_bfloat16(cli, tmp_path, image):
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(_deployment(image, ["--dtype", "bfloat16"])))
    got = cli("check", "-f", str(manifest))
    assert got.returncode == 1, got.stdout + got.stderr
    assert ("start [error]: predicted dtype_unsupported on Tesla-T4 — bfloat16 on a GPU below compute capability 8.0 "
            "(Volta, Turing): set --dtype half (float16) on this GPU") in got.stdout, got.stdout
    fix = next(line for line in got.stdout.splitlines() if "smallest fix (planner)" in line)
    assert "--dtype float16" in fix and "predicted fits on Tesla-T4" in fix, fix  # the same card, float16
    manifest.write_text(yaml.safe_dump(_deployment(image, ["--dtype", "half"])))
    got = cli("check", "-f", str(manifest))
    assert "dtype_unsupported" not in got.stdout, got.stdout


def test_check_passes_auto_on_a_t4_only_where_vllm_falls_back(cli, tmp_path):
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(_deployment("vllm/vllm-openai:v0.8.5", [])))
    assert "predicted dtype_unsupported" in cli("check", "-f", str(manifest)).stdout
    manifest.write_text(yaml.safe_dump(_deployment("vllm/vllm-openai:v0.34.0", [])))
    assert "dtype_unsupported" not in cli("check", "-f", str(manifest)).stdout
