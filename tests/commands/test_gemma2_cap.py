"""Gemma 2 on vLLM 0.5.5-0.6.3 through the real `estimate` and `check` CLIs (``vllm.gemma2_cap``): those releases
disable its sliding window and cap the length at the window ("Gemma 2 uses sliding window attention for every odd
layer ... capping the max length to the sliding window size", config.py@0.5.5-0.6.3; gone in 0.6.4), so 8,192 is
refused above 4,096 and the default length is 4,096. Hostile review 10 (finding 7) found "fits" at 8,192. The model is
the catalog's google/gemma-2-9b-it, whose entry names no model_type (its architecture says gemma2)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from fixtures.vllm_deployment import manifest

GEMMA = ["--model", "google/gemma-2-9b-it", "--gpu", "NVIDIA-L40S"]


def _estimate(*extra: str) -> dict:
    got = run_cli("estimate", *GEMMA, *extra, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    return json.loads(got.stdout)


@pytest.mark.parametrize(("version", "outcome"), [
    ("0.5.5", "max_len_exceeds_model"), ("0.6.3", "max_len_exceeds_model"), ("0.6.4", "fits")])
def test_8192_is_refused_above_the_window_through_0_6_3(version, outcome):
    got = _estimate("--max-model-len", "8192", "--vllm-version", version)
    assert got["outcome"] == outcome, got
    if outcome != "fits":
        assert (got["model_max_len"], got["model_max_len_key"]) == (4096, "sliding_window"), got


def test_the_default_length_is_the_window_through_0_6_3():
    assert _estimate("--vllm-version", "0.6.0")["max_model_len"] == 4096
    assert _estimate("--vllm-version", "0.6.4")["max_model_len"] == 8192


def test_check_predicts_the_refusal(tmp_path):
    path = manifest(tmp_path, ["--max-model-len", "8192"], image="vllm/vllm-openai:v0.6.0",
                    model="google/gemma-2-9b-it")
    got = run_cli("check", "-f", path, "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    item = json.loads(got.stdout)["items"][0]
    assert item["prediction"]["estimate"]["outcome"] == "max_len_exceeds_model", item
