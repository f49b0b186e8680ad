"""``extends: default`` in a policy kept outside the repository's policies/ (no default.yaml beside it) extends the
built-in default, which policies/default.yaml mirrors; a default.yaml beside the file still wins. Before:
"extends: no policy file default.yaml or default.yml", exit 2, for the line policies/default.yaml tells model
policies to write (the package does not install policies/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from vllm_remedy.errors import UserError
from vllm_remedy.policy import load_policy

ROOT = Path(__file__).resolve().parents[2]
MODEL_POLICY = ("extends: default\n"
                "target: {namespaces: [llm]}\n"
                "gpu: {products: [NVIDIA-L40S], per_pod: 1}\n"
                "flags:\n  gpu-memory-utilization: {min: 0.8, max: 0.92}\n")


def test_a_policy_outside_policies_extends_the_built_in_default_as_the_shipped_file(tmp_path: Path) -> None:
    alone, beside = tmp_path / "alone", tmp_path / "beside"
    alone.mkdir()
    beside.mkdir()
    (alone / "llm.yaml").write_text(MODEL_POLICY)
    (beside / "llm.yaml").write_text(MODEL_POLICY)
    shutil.copy(ROOT / "policies" / "default.yaml", beside / "default.yaml")
    built_in, shipped = load_policy(alone / "llm.yaml"), load_policy(beside / "llm.yaml")
    for field in set(type(shipped).model_fields) - {"description"}:  # default.yaml's prose is not inherited policy
        assert getattr(built_in, field) == getattr(shipped, field), field
    flags = built_in.model_dump(by_alias=True)["flags"]
    assert flags["gpu-memory-utilization"]["max"] == 0.92 and flags["tensor-parallel-size"]["max"] == 8
    assert tuple(flags["kv-cache-dtype"]["allowed"]) == ("auto",)


def test_a_default_yaml_beside_the_policy_is_the_one_extended(tmp_path: Path) -> None:
    (tmp_path / "default.yaml").write_text("flags:\n  gpu-memory-utilization: {min: 0.6, max: 0.9}\n")
    (tmp_path / "llm.yaml").write_text("extends: default\n")
    flags = load_policy(tmp_path / "llm.yaml").model_dump(by_alias=True)["flags"]
    assert flags["gpu-memory-utilization"]["max"] == 0.9 and flags["kv-cache-dtype"] is None


def test_another_missing_name_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text("extends: defaults\n")
    with pytest.raises(UserError, match=r"extends: no policy file .*defaults\.yaml or .*defaults\.yml"):
        load_policy(tmp_path / "llm.yaml")


def test_a_bad_value_over_the_built_in_default_blames_the_file(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text("extends: default\nflags:\n  gpu-memory-utilization: {max: 1.5}\n")
    with pytest.raises(UserError, match=str(tmp_path / "llm.yaml")):
        load_policy(tmp_path / "llm.yaml")


def test_check_runs_with_such_a_policy(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text(MODEL_POLICY)
    got = run_cli("check", "-f", str(ROOT / "tests" / "data" / "manifests" / "runbook" / "good-rev14.yaml"),
                  "--policy", str(tmp_path / "llm.yaml"))
    assert got.returncode != 2 and "extends" not in got.stdout + got.stderr, got.stdout + got.stderr
