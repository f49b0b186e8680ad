"""Scenarios on the rehearsal cluster shared by the step-4/5 deploy tests (no tests of its own).

The seed's revision 14 is healthy: vLLM 0.8.5, ``--max-model-len 16384 --gpu-memory-utilization 0.90
--max-num-seqs 64`` on NVIDIA-L40S (3 single-GPU nodes, 2 replicas, maxSurge 1 / maxUnavailable 0).
Each scenario rolls out one more revision and waits until it is rolled out (or crash-loops).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyinfra_fixtures import ROOT, Rehearsal
from test_deploy_restore_world import (
    LOCAL,
    NAME,
    NS,
    assert_no_changes,
    deployment,
    pods,
    quiet,
    vllm_runtime,
    wait_until,
)
from vllm_remedy.kube.wait import rollout_status

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
#: The seed's revision 14 — policies/llama-8b.yaml's known-good unit, model revision pinned.
MODEL_REVISION = "0e9e39f249a16976918f6564b8830bc894c89659"
GOOD_ARGS = [MODEL, "--revision", MODEL_REVISION, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90",
             "--max-num-seqs", "64"]
BUDGET = str(ROOT / "deploys" / "budget.py")
PIN = str(ROOT / "deploys" / "pin_gpu.py")
EAGER = str(ROOT / "deploys" / "enforce_eager.py")
LOAD_GUARD = str(ROOT / "deploys" / "load_guard.py")
L40S_KV = ("prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens, maximum concurrency 12.08x "
           "at max-model-len 16384")
_KV_LINE = re.compile(r"GPU KV cache size: ([\d,]+) tokens")

__all__ = ["BUDGET", "EAGER", "GOOD_ARGS", "L40S_KV", "LOAD_GUARD", "LOCAL", "MODEL", "NAME", "NS", "PIN",
           "args_of", "assert_no_changes", "deployment", "kv_logged", "live_pods", "quiet", "rolled_out",
           "scenario", "with_args"]


def args_of(dep: dict[str, Any]) -> list[str]:
    return list(dep["spec"]["template"]["spec"]["containers"][0]["args"])


def with_args(args: list[str]) -> Callable[[dict[str, Any]], None]:
    def mutate(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(args)
    return mutate


def rolled_out(rehearsal: Rehearsal, timeout: float = 60.0) -> dict[str, Any]:
    """Wait until the Deployment is rolled out and every live pod is Ready; returns it."""
    def done() -> bool:
        ok = rollout_status(deployment(rehearsal))[1]
        live = live_pods(rehearsal)
        return ok and bool(live) and all(c.get("ready") for p in live for c in p["status"].get("containerStatuses")
                                         or [{}])
    wait_until(done, timeout, "the rollout to finish")
    return deployment(rehearsal)


def scenario(rehearsal: Rehearsal, mutate: Callable[[dict[str, Any]], None], cause: str) -> dict[str, Any]:
    """vLLM simulator on, one more revision rolled out and Ready, status settled."""
    vllm_runtime(rehearsal)
    rehearsal.change(mutate, change_cause=cause)
    rolled_out(rehearsal)
    return quiet(rehearsal)


def live_pods(rehearsal: Rehearsal) -> list[dict[str, Any]]:
    return [p for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp")]


def kv_logged(rehearsal: Rehearsal) -> dict[str, int]:
    """Pod → the KV cache size its vLLM startup log printed."""
    client = rehearsal.client()
    out = {}
    for pod in live_pods(rehearsal):
        name = pod["metadata"]["name"]
        match = _KV_LINE.search(client.pod_log(NS, name, "vllm"))
        assert match, f"no KV cache line in {name}'s log"
        out[name] = int(match.group(1).replace(",", ""))
    return out


def policy_file(tmp: Path, body: str) -> str:
    """A policy extending the runbook's llama-8b policy with ``body`` (YAML)."""
    path = tmp / "policy.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'llama-8b.yaml'}\n{body}")
    return str(path)


def prompted_run(rehearsal: Rehearsal, deploy: str, meanwhile: Callable[[], None],
                 timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run pyinfra without ``-y``; when it asks for confirmation, call ``meanwhile`` (a concurrent edit), then
    press enter — the window between change detection and execution that a guarded write must survive."""
    out, err = rehearsal.tmp / "prompt.out", rehearsal.tmp / "prompt.err"
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.Popen([sys.executable, "-m", "pyinfra", LOCAL, deploy], stdin=subprocess.PIPE,
                                stdout=fo, stderr=fe, text=True, env=rehearsal.env(), cwd=str(rehearsal.tmp))
        wait_until(lambda: "Press enter to execute" in err.read_text() or proc.poll() is not None,
                   timeout, "the confirmation prompt")
        meanwhile()
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.read_text(), err.read_text())
