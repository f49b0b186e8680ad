"""``--vllm-version`` is checked whole (hostile review 2026-12-05, finding 11): ``0.3O.0`` (a letter O for the zero
of 0.30.0) was sized as vLLM 0.3.0 and labelled 'modelled', ``foo`` silently became the unknown version. README:
bad input to a command is one line on stderr naming the key, exit 2."""

from __future__ import annotations

import json

import pytest

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize("typed", ["0.3O.0", "foo"])
def test_a_malformed_vllm_version_is_one_line_exit_2(cli, typed: str) -> None:
    got = cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--max-model-len", "16384",
              "--vllm-version", typed, "-o", "json")
    assert got.returncode == 2, json.loads(got.stdout)["vllm_version"] if got.returncode == 0 else got.stderr
    assert got.stdout == ""
    assert got.stderr.splitlines() == [
        f"vllm-remedy estimate: error: argument --vllm-version: {typed!r} is not a vLLM version "
        "(e.g. 0.8.5, v0.10.1.1, 0.8.5.post1, 0.26.1rc1)"], got.stderr


def test_plan_checks_it_too(cli) -> None:
    got = cli("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.8.5junk")
    assert got.returncode == 2 and "argument --vllm-version: '0.8.5junk'" in got.stderr, got.stderr


@pytest.mark.parametrize("typed", ["v0.8.5", "0.26.1rc1.dev156+g0eec856cc", "0.30.0"])
def test_well_formed_versions_still_run(cli, typed: str) -> None:
    got = cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--max-model-len", "16384",
              "--vllm-version", typed, "-o", "json")
    assert got.returncode == 0, got.stderr
