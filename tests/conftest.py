"""Shared test helpers: run the real ``vllm-remedy`` CLI as a user would, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[0] / "data"

# Model resolution falls back to the Hugging Face Hub: tests never reach the real one, nor read a developer's own
# Hugging Face cache. Offline with an empty cache unless a test points HF_ENDPOINT at tests/fixtures/hf_hub_server.
for _name in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_CACHE", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"):
    os.environ.pop(_name, None)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="vllm-remedy-hf-home-")


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
