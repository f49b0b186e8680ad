"""Run a deploy the way an on-call engineer would — the real ``pyinfra INVENTORY deploys/<step>.py --limit HOST``
in a child process — and read what it printed for the host (the parsing is pure).

Why the CLI and not the API: the responder then does exactly what the runbook's command does (same host data,
policy, GitOps stance, refusals, prediction, guarded writes), and the note can quote the output verbatim.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_WRITTEN = re.compile(r": written \(resourceVersion \S+\)$")
BOOKKEEPING = ("record on replicaset ",)
_NOISE = ("Connected", "Success", "No changes", "Error", "Ready: ", "Loaded fact")
#: Where the deploys live: next to the package in a checkout, or as installed by the image.
DEPLOYS = Path(os.environ.get("VLLM_REMEDY_DEPLOYS", Path(__file__).resolve().parents[3] / "deploys"))


@dataclass(frozen=True)
class DeployRun:
    """One finished pyinfra run for one host: its exit status and the host's lines, prefix removed."""

    deploy: str
    dry: bool
    returncode: int
    lines: tuple[str, ...]
    seconds: float
    tail: str = ""  # pyinfra's last stderr line, for a run that failed before printing host lines

    @property
    def changes(self) -> list[str]:
        """What was written (``-y``) or would be (``--dry``: the summary lines that precede a diff)."""
        if not self.dry:
            return [_WRITTEN.sub("", line) for line in self.lines if _WRITTEN.search(line)]
        return [self.lines[i - 1] for i, line in enumerate(self.lines) if line.startswith("--- ") and i > 0]

    @property
    def remedies(self) -> list[str]:
        """The changes that are remedies — not the crash record restore and diagnose leave on a dying revision's
        ReplicaSet, which is bookkeeping and is written before a deploy decides it cannot help."""
        return [line for line in self.changes if not line.startswith(BOOKKEEPING)]

    @property
    def diff(self) -> list[str]:
        """The unified diffs the deploy showed (pod template, HTTPRoute spec)."""
        out, inside = [], False
        for line in self.lines:
            if line.startswith("--- "):
                inside = True
            elif line.startswith("prediction ") or line[:1] not in (" ", "+", "-", "@"):
                inside = False
            if inside:
                out.append(line)
        return out

    @property
    def predictions(self) -> list[str]:
        return [line for line in self.lines if line.startswith("prediction ")]

    @property
    def evidence(self) -> list[str]:
        """Everything the deploy said that is not pyinfra's own chatter or a diff line."""
        diff = set(self.diff)
        return [line for line in self.lines if line not in diff and not line.startswith(_NOISE)]

    @property
    def failure(self) -> str | None:
        """Why the run failed — the deploy's refusal when it printed one — or None when it succeeded."""
        if self.returncode == 0:
            return None
        said = [line for line in self.evidence if not line.startswith("noop: ")]
        # a refusal is followed by its hint (the values or Git change to make): the refusal is the why
        refusals = [line for line in said if line.startswith("refused: ")]
        if refusals:
            return refusals[-1]
        return said[-1] if said else (self.tail or f"pyinfra exited {self.returncode}")


def host_lines(text: str, host: str) -> tuple[str, ...]:
    """Lines pyinfra printed for ``host`` (``[host] text``), prefix and one space removed, indentation kept."""
    prefix = f"[{host}] "
    return tuple(line.split(prefix, 1)[1].rstrip() for line in _ANSI.sub("", text).splitlines() if prefix in line)


def run(inventory: str, deploy: str, host: str, *, dry: bool, env: Mapping[str, str] | None = None,
        timeout: float = 3600, extra: Sequence[str] = ()) -> DeployRun:
    """``pyinfra INVENTORY deploys/<deploy>.py (-y | --dry) --limit HOST`` with this interpreter's pyinfra."""
    argv = [sys.executable, "-m", "pyinfra", inventory, str(DEPLOYS / f"{deploy}.py"), "--dry" if dry else "-y",
            "--limit", host, *extra]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYINFRA_PROGRESS": "off", "NO_COLOR": "1", **(env or {})})
    except subprocess.TimeoutExpired:
        return DeployRun(deploy, dry, 124, (), time.monotonic() - started, f"no result after {timeout:.0f}s")
    text = done.stdout + "\n" + done.stderr
    tail = [line.strip() for line in _ANSI.sub("", done.stderr).splitlines() if line.strip()][-1:]
    return DeployRun(deploy, dry, done.returncode, host_lines(text, host), time.monotonic() - started,
                     tail[0] if tail else "")
