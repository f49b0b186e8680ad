"""Running a deploy as an operator would: the real ``pyinfra`` CLI, ``-y``, against a generated inventory.

The inventory has the one host the scenario targets, with the policy and kubeconfig as host data. An
interrupted game terminates the running pyinfra before it restores the pre-game state.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class DeployRun:
    """One deploy's run: exit code, what it printed for the host, and the template diff it caused."""

    deploy: str
    returncode: int
    wall_seconds: float
    cluster_seconds: float
    output: list[str] = field(default_factory=list)
    diff: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """pyinfra exited 0 (what the verdict's "deploys succeeded" check reads)."""
        return self.returncode == 0

    def to_json(self) -> dict[str, Any]:
        """This run in the game's ``-o json`` document, durations rounded."""
        return {"deploy": self.deploy, "returncode": self.returncode, "wall_seconds": round(self.wall_seconds, 2),
                "cluster_seconds": round(self.cluster_seconds, 1), "output": self.output, "diff": self.diff}


def write_inventory(path: Path, host: str, policy: Path, kubeconfig: Path | None) -> Path:
    """A one-host inventory with policy and kubeconfig as host data — the shape of an operator's own inventory,
    so the game runs the deploys exactly as on-call would."""
    data: dict[str, str] = {"policy": str(policy)}
    if kubeconfig is not None:
        data["kubeconfig"] = str(kubeconfig)
    path.write_text(f'"""Game-day inventory: the scenario\'s one host."""\n\nhosts = ([{host!r}], {data!r})\n')
    return path


def run_pyinfra(inventory: Path, deploy: Path, kubeconfig: Path | None, cwd: Path,
                timeout: float = 600, extra_env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """``python -m pyinfra -y INVENTORY DEPLOY``; (exit code, combined output without colours). ``extra_env``: what
    the world adds for its tools (``LocalCluster.tools_env``: the models it ships)."""
    env = dict(os.environ)  # a real context is found as kubectl finds it, KUBECONFIG included
    env.update({"PYINFRA_PROGRESS": "off", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **(extra_env or {})})
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    proc = subprocess.Popen([sys.executable, "-m", "pyinfra", "-y", str(inventory), str(deploy)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=str(cwd), env=env)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except BaseException:  # interrupted or timed out: stop pyinfra before the game restores the cluster
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    return proc.returncode, _ANSI.sub("", out)


def host_lines(text: str, host: str) -> list[str]:
    """What pyinfra printed for ``host`` (prefix removed), plus its error lines."""
    prefix = f"[{host}]"
    out = []
    for line in text.splitlines():
        if prefix in line:
            out.append(line.split(prefix, 1)[1].strip())
        elif line.startswith(("--> ", "pyinfra: error", "    ")) and line.strip():
            out.append(line.strip())
    return out or [line for line in text.splitlines() if line.strip()][-20:]


def template_diff(before: dict[str, Any], after: dict[str, Any], label: str) -> list[str]:
    """Unified diff of two objects as YAML (what a reviewer reads)."""
    a = yaml.safe_dump(before, sort_keys=True).splitlines()
    b = yaml.safe_dump(after, sort_keys=True).splitlines()
    return list(difflib.unified_diff(a, b, f"{label} (before)", f"{label} (after)", lineterm="", n=2))
