#!/usr/bin/env python3
"""Set up and run vllm-remedy with nothing but python3.

    python3 tasks.py rehearse   # install into .venv, run the main job on the built-in rehearsal cluster
    python3 tasks.py test       # install into .venv with test extras, run ruff and the whole test suite

Why a script and not make/uv/pipx: a fresh machine is promised only python3 (venv + pip).
The venv is reused while pyproject.toml is unchanged (a stamp holds its hash).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def run(*cmd: str | Path, **kw: object) -> None:
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)  # type: ignore[call-overload]


def ensure_venv(extras: str) -> None:
    """Create .venv and install the project editable; skip when pyproject and extras are unchanged."""
    if not (BIN / "python").exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / ".installed"
    if stamp.exists() and stamp.read_text() == digest:
        return
    run(BIN / "python", "-m", "pip", "install", "-q", "--upgrade", "pip")
    target = f".[{extras}]" if extras else "."
    run(BIN / "python", "-m", "pip", "install", "-q", "-e", target)
    run(BIN / "python", "-m", "pip", "check")
    stamp.write_text(digest)


def ensure_test_tools() -> None:
    """Real kubectl 1.20 and Prometheus tools for the tests, unpacked under .tools/ (scripts/get_tools.py)."""
    run(sys.executable, ROOT / "scripts" / "get_tools.py")


def compile_sources() -> None:
    """Byte-compile src/ (pip does it for installed packages, not editable ones): every deploy and CLI run is a
    new process, and with PYTHONDONTWRITEBYTECODE set (as CI images often do) each compiled the whole package
    again, ~0.1 s of CPU per run. Stale files are recompiled; Python checks the source's mtime either way."""
    subprocess.run([str(BIN / "python"), "-m", "compileall", "-q", str(ROOT / "src")], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def rehearse() -> int:
    ensure_venv("")
    compile_sources()
    return subprocess.call([str(BIN / "vllm-remedy"), "rehearse"], cwd=ROOT)


def test(pytest_args: list[str]) -> int:
    ensure_venv("test")
    ensure_test_tools()
    compile_sources()
    paths = ("src", "tests", "deploys", "inventories", "bench", "scripts", "tasks.py")
    lint = [p for p in paths if (ROOT / p).exists()]
    run(BIN / "ruff", "check", *lint)
    # Three workers per core: most end-to-end tests wait on a subprocess or on the rehearsal cluster's clock, so
    # fewer workers leave the cores idle (8,141 tests on 2 cores: 581 s at two per core, 520 s at three).
    # worksteal: an idle worker takes queued tests from a busy one, so the longest tests do not end the run alone.
    workers = ["-n", str(3 * (os.cpu_count() or 1)), "--dist", "worksteal"] if "-n" not in pytest_args else []
    return subprocess.call([str(BIN / "pytest"), *workers, *pytest_args], cwd=ROOT)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"rehearse", "test"}:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "rehearse":
        return rehearse()
    return test(argv[1:])


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as exc:
        print(f"tasks.py: step failed (exit {exc.returncode}): {' '.join(map(str, exc.cmd))}", file=sys.stderr)
        sys.exit(exc.returncode or 1)
