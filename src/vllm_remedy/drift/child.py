"""Start ``python -m vllm_remedy.drift`` and read its JSON (see ``__main__`` for why it is a child process)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

from vllm_remedy.errors import UserError


def run_child(mode: str, inventory: str, limit: Iterable[str] = ()) -> dict[str, Any]:
    """The runner's results for ``mode`` ("plan" or "expire"); UserError (one line) when it could not run."""
    argv = [sys.executable, "-m", "vllm_remedy.drift", mode, "-i", inventory]
    for pattern in limit:
        argv += ["--limit", pattern]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    try:
        result = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        result = None
    if isinstance(result, dict) and "error" in result and "hosts" not in result:
        raise UserError(str(result["error"]))
    if done.returncode != 0 or not isinstance(result, dict):
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:] or ["no output"]
        raise UserError(f"{inventory}: the {mode} runner failed (exit {done.returncode}): {tail[0].strip()}")
    return result
