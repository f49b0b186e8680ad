"""Shared test helpers: run the real ``vllm-remedy`` CLI as a user would, in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[0] / "data"


def run_cli(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``vllm-remedy ARGS`` through the interpreter running the tests (same venv)."""
    return subprocess.run(
        [sys.executable, "-m", "vllm_remedy", *args],
        input=stdin, capture_output=True, text=True, cwd=cwd or ROOT, timeout=120,
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def data_dir() -> Path:
    return DATA
