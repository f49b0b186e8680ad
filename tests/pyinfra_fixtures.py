"""Fixtures for pyinfra end-to-end tests: the rehearsal cluster in-process, and the REAL pyinfra CLI against it.

The cluster is the one ``vllm-remedy sim up`` serves (seeded with the runbook's world by default) on a
random 127.0.0.1 port; its kubeconfig names the cluster as a context, so ``@k8s/rehearsal/llm/llama-8b``
means the same thing as in ``inventories/local.py``. ``Rehearsal.pyinfra(...)`` runs
``python -m pyinfra ...`` in a subprocess with ``KUBECONFIG`` pointing at it — the CLI monkey-patches
gevent there, exactly as for a user.

    import pyinfra_fixtures
    from pyinfra_fixtures import inventory

    rehearsal = pyinfra_fixtures.rehearsal  # the fixture, under its name in this module

    def test_x(rehearsal):
        got = rehearsal.pyinfra(inventory("local"), "fact", "vllm_remedy.facts.deployment.Deployment")
        assert got.returncode == 0, got.stderr
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.patch import apply_deployment_patch, json_patch
from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.runtime import EXIT_AFTER, EXIT_CODE, LOG_LINES
from vllm_remedy.sim.server import SimServer

ROOT = Path(__file__).resolve().parent.parent
#: What ``vllm-remedy sim up`` calls its single cluster; inventories/local.py uses it as the context.
CLUSTER = "rehearsal"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Rehearsal:
    """A running rehearsal cluster and the kubeconfig that reaches it."""

    server: SimServer
    clusters: dict[str, Cluster]
    kubeconfig: Path
    tmp: Path

    @property
    def cluster(self) -> Cluster:
        return next(iter(self.clusters.values()))

    def client(self, context: str = CLUSTER) -> KubeClient:
        """A kube-layer client for arranging state in tests (not the code under test's own client)."""
        return KubeClient.for_context(context, str(self.kubeconfig))

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a user would have after ``export KUBECONFIG=...`` (HOME isolated, no colours)."""
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "XDG_STATE_HOME")}
        env.update({"KUBECONFIG": str(self.kubeconfig), "HOME": str(self.tmp), "PYINFRA_PROGRESS": "off",
                    "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
        env.update(extra or {})
        return env

    def pyinfra(self, *args: str, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
                stdin: str | None = "", timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """Run the real ``pyinfra`` CLI (this venv's) with ARGS; stdin is empty unless given (no prompt hangs).

        The working directory defaults to the test's tmp folder (pyinfra drops pyinfra-debug.log into it on
        internal errors), so name repository files by absolute path: ``inventory("local")``, ``ROOT / ...``.
        """
        return run_pyinfra(*args, env=self.env(env), cwd=cwd or self.tmp, stdin=stdin, timeout=timeout)

    def change(self, mutate: Callable[[dict[str, Any]], None], *, namespace: str = "llm", name: str = "llama-8b",
               change_cause: str | None = None, context: str = CLUSTER) -> dict[str, Any]:
        """Roll out a new revision: ``mutate`` edits a copy of the Deployment, sent as a guarded JSON patch."""
        client = self.client(context)
        current = client.get_deployment(namespace, name)
        wanted = copy.deepcopy(current)
        mutate(wanted)
        if change_cause is not None:
            wanted["metadata"].setdefault("annotations", {})["kubernetes.io/change-cause"] = change_cause
        return apply_deployment_patch(client, namespace, name, json_patch(current, wanted))

    def faults(self, rules: list[dict[str, Any]], cluster: str = CLUSTER) -> None:
        """Inject API faults (``[{verb, resource, latency_ms, error_rate, error_code, conflicts}]``; [] clears)."""
        self.server.contexts[cluster].faults.set(rules)

    def stop(self) -> None:
        for cluster in self.clusters.values():
            cluster.stop()
        self.server.stop()


def inventory(name: str) -> str:
    """Absolute path of ``inventories/<name>.py``."""
    return str(ROOT / "inventories" / f"{name}.py")


def run_pyinfra(*args: str, env: Mapping[str, str] | None = None, cwd: Path | str = ROOT, stdin: str | None = "",
                timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``python -m pyinfra ARGS`` with the interpreter running the tests (same venv, same entry points)."""
    return subprocess.run([sys.executable, "-m", "pyinfra", *args], input=stdin, capture_output=True, text=True,
                          cwd=str(cwd), env=dict(env) if env is not None else None, timeout=timeout)


def start_rehearsal(tmp: Path, *, clusters: tuple[str, ...] = (CLUSTER,), seed: str | dict[str, Any] = "runbook",
                    speed: float = 600.0, seed_timeout: float = 120) -> Rehearsal:
    """Start controllers, apply ``seed`` to every cluster (waiting for its rollouts), serve them on a free port."""
    built = {}
    for name in clusters:
        cluster = Cluster(name, speed=speed)
        cluster.start()
        cluster.apply_seed(seed, wait=True, timeout=seed_timeout)
        built[name] = cluster
    server = SimServer(list(built.values()))
    server.start()
    path = sim_kubeconfig.write(tmp / "kubeconfig", server.url, list(clusters))
    return Rehearsal(server, built, path, tmp)


@pytest.fixture
def rehearsal(tmp_path: Path) -> Iterator[Rehearsal]:
    """The runbook's world (llm/llama-8b, three revisions, L40S + L4/A10G nodes) on a fresh cluster per test."""
    sim = start_rehearsal(tmp_path)
    yield sim
    sim.stop()


def crash_on_start(log: str, exit_code: int = 1, after: float = 2.0) -> dict[str, str]:
    """Pod-template annotations making the rehearsal runtime print ``log`` and exit (a crash loop)."""
    return {EXIT_CODE: str(exit_code), EXIT_AFTER: str(after), LOG_LINES: log.rstrip("\n")}


def plain(text: str) -> str:
    """CLI output without colour codes (pyinfra colours even some non-TTY lines)."""
    return _ANSI.sub("", text)


def fact_output(stderr: str, fact: str) -> dict[str, Any]:
    """The JSON pyinfra prints after ``--> Fact data for: <fact>`` (human mode writes it to stderr)."""
    text = plain(stderr)
    marker = f"--> Fact data for: {fact}"
    start = text.index(marker) + len(marker)
    return json.JSONDecoder().raw_decode(text[start:].lstrip())[0]


def host_lines(text: str, host: str) -> list[str]:
    """Lines pyinfra printed with the ``[host]`` prefix, prefix removed."""
    prefix = f"[{host}]"
    return [line.split(prefix, 1)[1].strip() for line in plain(text).splitlines() if prefix in line]


def detected_changes(text: str) -> dict[str, tuple[str, ...]]:
    """pyinfra's "Detected changes" table: operation name → its (Change, Conditional Change) cells.

    A cell is ``-`` for no host or e.g. ``1 (@k8s/...)``; reading the table whole lets a test say exactly
    which operations would change, instead of searching the output for a fragment.
    """
    lines = plain(text).splitlines()
    start = lines.index("--> Detected changes:") + 2  # past the header row
    rows: dict[str, tuple[str, ...]] = {}
    for line in lines[start:]:
        if not line.strip():
            break
        name, *cells = re.split(r"\s{2,}", line.strip())
        rows[name] = tuple(cells)
    return rows
