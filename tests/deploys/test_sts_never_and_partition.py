"""Hostile review of promise 4 (under restore.delete_pods: never, --dry fails, exit 1 with the same "blocked" line,
exactly when -y would) across update strategies x pod management policies x partitions, through the real pyinfra CLI."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, crash_on_start, host_lines
from fixtures.sts_world import (
    MAX_LEN_LOG,
    RESTORE,
    STS_HOST,
    STS_PATH,
    crash_looping_on,
    delete_pod,
    inventory,
    roll,
)
from vllm_remedy.kube.sts_wait import wait_for_sts_rollout

rehearsal = pyinfra_run.rehearsal


def make_set(rehearsal: Rehearsal, strategy: dict[str, Any], pmp: str, replicas: int = 2) -> None:
    client = rehearsal.client()
    template = copy.deepcopy(client.get_deployment("llm", "llama-8b")["spec"]["template"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    template["metadata"] = {"labels": {"app": "llama-sts"}}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "llama-sts", "namespace": "llm"},
            "spec": {"replicas": replicas, "serviceName": "llama-sts", "podManagementPolicy": pmp,
                     "selector": {"matchLabels": {"app": "llama-sts"}}, "template": template,
                     "updateStrategy": strategy}}
    client.request("POST", client.object_path("llm", "statefulsets"), body=body)
    assert wait_for_sts_rollout(client, "llm", "llama-sts", timeout=900, clock=rehearsal.cluster.clock,
                                interval=5).ok


CASES = {
    "ondelete-ordered": ({"type": "OnDelete"}, "OrderedReady"),
    "ondelete-parallel": ({"type": "OnDelete"}, "Parallel"),
    "rolling-ordered": ({"type": "RollingUpdate"}, "OrderedReady"),
    "rolling-parallel": ({"type": "RollingUpdate"}, "Parallel"),
    "partition1-ordered": ({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}, "OrderedReady"),
    "partition1-parallel": ({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}, "Parallel"),
}


def _crash_looping(rehearsal: Rehearsal, case: str) -> None:
    """The set of ``case`` rolled out, then revision 2 crash-looping on llama-sts-1 (deleted onto it under OnDelete)."""
    strategy, pmp = CASES[case]
    make_set(rehearsal, strategy, pmp)
    roll(rehearsal, crash_on_start(MAX_LEN_LOG.read_text()))
    if strategy["type"] == "OnDelete":
        delete_pod(rehearsal, "llama-sts-1")
    crash_looping_on(rehearsal, "llama-sts-1")


def _blocked(lines: list[str]) -> list[str]:
    """What the "blocked" lines say, without the wait's elapsed time (which differs between runs)."""
    return [re.sub(r"^ after \d+s", "", line.split(": blocked", 1)[1]) for line in lines if ": blocked" in line]


@pytest.mark.parametrize("case", list(CASES))
def test_dry_exits_as_y_under_never(rehearsal: Rehearsal, tmp_path: Path, case: str) -> None:
    _crash_looping(rehearsal, case)
    inv = inventory(tmp_path, "never")
    runs = []
    for flag in ("--dry", "-y", "--dry", "-y"):
        got = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
        lines = host_lines(got.stderr, STS_HOST)
        blocked = _blocked(lines)
        runs.append((flag, got.returncode, blocked, not any("deleted pod" in line for line in lines)))
        print(case, flag, got.returncode, "\n".join(lines))
    print(case, runs)
    assert runs[0][1:3] == runs[1][1:3], runs
    assert runs[2][1:3] == runs[3][1:3], runs
    assert all(r[3] for r in runs), f"a pod was deleted under never: {runs}"


@pytest.mark.parametrize("case", ["ondelete-ordered", "rolling-ordered"])
def test_forced_revision_under_never_dry_exits_as_y(rehearsal: Rehearsal, tmp_path: Path, case: str) -> None:
    """--data revision=1 (the good one) under never: the forced path must predict the blocked wait as the chosen path
    does."""
    _crash_looping(rehearsal, case)
    inv = inventory(tmp_path, "never")
    runs = []
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, RESTORE, flag, "--data", "revision=1", timeout=300)
        lines = host_lines(got.stderr, STS_HOST)
        print("\n".join(lines))
        blocked = _blocked(lines)
        runs.append((got.returncode, blocked))
    assert runs[0] == runs[1], runs


@pytest.mark.parametrize(("pmp", "policy"), [("Parallel", "blocking"), ("Parallel", "never"), ("OrderedReady", "never"),
                                           ("OrderedReady", "blocking")])
def test_a_partition_raised_by_a_colleague_over_the_crash_pod(rehearsal: Rehearsal, tmp_path: Path, pmp: str,
                                                              policy: str) -> None:
    """RollingUpdate/Parallel: revision 2 crash-loops on llama-sts-1; a colleague raises the partition to 2 to freeze
    the rollout. Restore under blocking: --dry and -y exit alike, and llama-sts-1 is not deleted onto a revision that
    is not our write."""
    make_set(rehearsal, {"type": "RollingUpdate"}, pmp)
    roll(rehearsal, crash_on_start(MAX_LEN_LOG.read_text()))
    crash_looping_on(rehearsal, "llama-sts-1")
    client = rehearsal.client()
    from vllm_remedy.kube.client import JSON_PATCH
    client.request("PATCH", STS_PATH, body=[{"op": "add", "path": "/spec/updateStrategy/rollingUpdate",
                                             "value": {"partition": 2}}], content_type=JSON_PATCH)
    inv = inventory(tmp_path, policy)
    runs = []
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
        lines = host_lines(got.stderr, STS_HOST)
        print("\n".join(lines))
        runs.append((got.returncode, [line for line in lines if "deleted pod" in line]))
        # refused, not a 15-minute wait on pods no rollback reaches: the same line, exit 1, nothing deleted
        assert got.returncode == 1, (flag, got.stderr)
        assert any("updateStrategy partition 2 keeps crash-looping pod(s) llama-sts-1 below it" in line
                   for line in lines), (flag, lines)
    assert runs[0] == runs[1] == (1, []), runs
