"""Shared test helpers: run the real ``vllm-remedy`` CLI as a user would, in a subprocess."""

from __future__ import annotations

import compileall
import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import zygote
from vllm_remedy import hub
from vllm_remedy.vllm import resolved

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[0] / "data"

# Model resolution falls back to the Hugging Face Hub: tests never reach the real one, nor read a developer's own
# Hugging Face cache. Offline with an empty cache unless a test points HF_ENDPOINT at tests/fixtures/hf_hub_server.
for _name in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_CACHE", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"):
    os.environ.pop(_name, None)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="vllm-remedy-hf-home-")

# Each pytest worker rewrites every test module's asserts on import (~4 s of CPU per worker); with
# PYTHONDONTWRITEBYTECODE set (CI images, this machine) pytest kept none of it. Let it cache the rewritten modules
# in tests/**/__pycache__ (gitignored) as it does by default; subprocesses keep the variable.
sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile src/ once per session, as ``tasks.py test`` does: every deploy and CLI run of the suite is a
    new process that otherwise compiles the package again (~0.2 s of CPU per run). Stale files only; the xdist
    workers skip it, their controller has done it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        compileall.compile_dir(ROOT / "src", quiet=1)


#: Mean seconds per test of the slowest files (a whole-suite --durations run under -n 4, tests/slow_files.json).
_SLOW_FILES: dict[str, float] = json.loads((Path(__file__).parent / "slow_files.json").read_text())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slowest files first (longest-processing-time first), each file's tests kept together and in order.

    xdist's worksteal hands each worker a contiguous share of the collection and idle workers steal from the end of
    the longest queue; in alphabetical order a 47 s kill -9 test could start last and end the run alone while the
    other workers idled. With the long tests first what is left at the end is sub-second unit tests. The order is
    the same in every worker (xdist requires it); files missing from the table (new or fast) keep their place after.
    """
    items.sort(key=lambda item: -_SLOW_FILES.get(item.nodeid.split("::")[0], 0.0))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built (every test module, the packages they import, the test items) to the collector's
    permanent generation: it lives for the whole session, and each full collection of a worker otherwise walked it
    again (the collector was ~12% of a worker's CPU in a whole-suite profile). Objects made by tests are collected
    as before."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _models_resolved_in_this_test_end_with_it() -> Iterator[None]:
    """Each test is its own run of the model registries (``hub``'s memo, ``vllm.resolved``), which a process keeps
    for its life: what a test's in-process rehearsal cluster or Hub fixture resolved must not answer a later pure
    prediction in the same worker (it read "not in the catalog" alone and the offline reason after test_drift)."""
    memo, learned = dict(hub._memo), dict(resolved._learned)
    yield
    with hub._lock:  # a rehearsal pod still starting would resolve under it
        hub._memo.clear()
        hub._memo.update(memo)
        resolved._learned.clear()
        resolved._learned.update(learned)


def run_cli(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``vllm-remedy ARGS`` through the interpreter running the tests (same venv): ``python -m vllm_remedy``,
    forked from a server that has imported the CLI and its commands already (``fixtures.zygote``; still a fresh
    process per run). Without ``stdin`` the run reads an empty one (an xdist worker's own stdin is /dev/null)."""
    return zygote.run_cli(args, cwd=str(cwd or ROOT), stdin="" if stdin is None else stdin, timeout=120)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def data_dir() -> Path:
    return DATA
