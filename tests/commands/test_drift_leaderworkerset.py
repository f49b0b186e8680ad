"""`vllm-remedy drift` and `vllm-remedy expire` on a multi-node vLLM LeaderWorkerSet, through the real CLI on the
rehearsal cluster: drift plans deploys/budget.py's own fix for the set (``lws_budget.FIX``) and the promise is checked
on the object - the leaderWorkerTemplate diffs drift planned, applied to the set as it was, are the set after
``pyinfra … deploys/budget.py -y``; an in-sync set is in sync (exit 0); expire reverts an expired eager toggle
recorded on the set (the leader's exact prior argv back), and a second expire changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.drift_world import as_json
from fixtures.drift_world import inventory as drift_inventory
from fixtures.dry_run import apply
from fixtures.lws_remedy import BUDGET, EXPIRES, PRIOR, edits, inventory, lwt, lwt_diffs, rolled_out, serve
from fixtures.lws_world import ARGS, BAD_ARGS, GOOD_ARGS, HOST, NAME, patch, read, start_set
from fixtures.pyinfra_run import Rehearsal
from vllm_remedy.kube.annotations import rfc3339
from vllm_remedy.kube.diff import template_yaml
from vllm_remedy.kube.errors import ConflictError
from vllm_remedy.operations import lws_budget

rehearsal = pyinfra_run.rehearsal
FIX = [label for label, _op, _args in lws_budget.FIX]
WHERE = f"leaderworkerset llm/{NAME}"
PRIOR_JSON = json.dumps({"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm-leader"}, sort_keys=True,
                        separators=(",", ":"))


def remedy(rehearsal: Rehearsal, *args: str) -> subprocess.CompletedProcess[str]:
    """``vllm-remedy ARGS`` against the rehearsal cluster (the kubeconfig is also in the inventory's host data)."""
    return subprocess.run([sys.executable, "-m", "vllm_remedy", *args], capture_output=True, text=True,
                          env=rehearsal.env(), cwd=rehearsal.tmp, timeout=300)


def lws_inventory(rehearsal: Rehearsal, tmp: Path, policy: str = "") -> str:
    """The set under the shipped default policy plus ``policy`` (fixtures.lws_remedy's), the kubeconfig in host data."""
    inventory(tmp, policy)
    return drift_inventory(tmp, rehearsal.kubeconfig, str(tmp / "lws-policy.yaml"), hosts=[HOST], name="drift")


def planned_diffs(host: dict[str, Any]) -> list[Any]:
    """The leaderWorkerTemplate diffs drift's planned operations printed, parsed as a deploy's output is."""
    return lwt_diffs("\n".join(f"[{HOST}] {line}" for op in host["fix"]["operations"] for line in op["lines"]))


def leader_args(obj: dict[str, Any]) -> list[str]:
    return list(lwt(obj)["leaderTemplate"]["spec"]["containers"][0]["args"])


def test_a_drifted_set_gets_budgets_fix_and_budget_writes_exactly_it(rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)  # max-model-len 131072: its KV cache does not fit beside half the weights, crash-looping
    before = read(rehearsal)
    inv = lws_inventory(rehearsal, tmp_path)
    got = remedy(rehearsal, "drift", "-i", inv, "-o", "json")
    [host] = as_json(got)["hosts"]
    assert (got.returncode, host["status"]) == (1, "Drifted"), got.stdout
    assert "crash-loop" in host["drifted"], host["drifted"]
    assert host["fix"]["note"] is None and host["fix"]["refused"] is None, host["fix"]
    ops = {op["operation"]: op for op in host["fix"]["operations"]}
    assert list(ops) == [label for label in FIX if label in ops]  # lws_budget.FIX, in deploys/budget.py's order
    fix = ops["Smallest change that restores headroom, leader and workers"]
    assert fix["changes"] and any(line.startswith(f"budget {WHERE}, leader and workers: --max-model-len ")
                                  for line in fix["lines"]), fix
    planned = planned_diffs(host)
    assert [d.name for d in planned] == [f"{WHERE} leaderWorkerTemplate"], host["fix"]
    assert edits(read(rehearsal)) == edits(before), "drift wrote"

    applied = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    assert applied.returncode == 0, applied.stderr
    after = read(rehearsal)
    expected = template_yaml(lwt(before))
    for diff in planned:
        expected = apply(expected, diff)
    assert template_yaml(lwt(after)) == expected, applied.stderr  # the promise, on the object
    assert lwt_diffs(applied.stderr) == planned  # and what the deploy printed
    length = leader_args(after)[leader_args(after).index("--max-model-len") + 1]
    assert int(length) < 131072 and leader_args(after) == [*BAD_ARGS[:2], length, *BAD_ARGS[3:]]


def test_an_in_sync_set_is_in_sync_with_exit_0(rehearsal: Rehearsal, tmp_path: Path) -> None:
    serve(rehearsal)
    inv = lws_inventory(rehearsal, tmp_path, "peak_concurrency: 1\n")  # 32k over two L40S holds 1.44 requests
    for flags in ((), ("--detailed-exitcode",)):
        got = remedy(rehearsal, "drift", "-i", inv, "-o", "json", *flags)
        [host] = as_json(got)["hosts"]
        assert (got.returncode, host["status"], host["drifted"]) == (0, "InSync", []), got.stdout
        assert host["fix"]["operations"] == [] and host["fix"]["note"] is None, host["fix"]
    human = remedy(rehearsal, "drift", "-i", inv)
    assert human.returncode == 0 and "not planned" not in human.stdout, human.stdout


def _dead_process_toggle(rehearsal: Rehearsal, expires: str) -> None:
    """What deploys/enforce_eager.py records on the set, written directly (its writer then 'died')."""
    for _ in range(20):  # the controller's status writes may race the read
        notes = read(rehearsal)["metadata"].get("annotations") or {}
        ops = [{"op": "replace", "path": ARGS, "value": [*GOOD_ARGS, "--enforce-eager"]},
               {"op": "add", "path": "/metadata/annotations", "value": {**notes, EXPIRES: expires, PRIOR: PRIOR_JSON}}]
        try:
            patch(rehearsal, ops)
            return
        except ConflictError:
            time.sleep(0.1)
    raise AssertionError("the toggle never landed")


def test_expire_reverts_an_expired_toggle_on_the_set_and_a_second_run_changes_nothing(rehearsal: Rehearsal,
                                                                                      tmp_path: Path) -> None:
    serve(rehearsal)
    _dead_process_toggle(rehearsal, rfc3339(rehearsal.client().server_time() - 600))
    rolled_out(rehearsal)
    inv = lws_inventory(rehearsal, tmp_path)
    drift = as_json(remedy(rehearsal, "drift", "-i", inv, "-o", "json"))["hosts"][0]
    assert "enforce-eager" in drift["drifted"], drift
    # the budget's change on this set takes the revert in (one write): whichever operation writes it shows it
    reverts = [op for op in drift["fix"]["operations"] if op["changes"] and any(
        line.startswith("-") and line[1:].strip() == "- --enforce-eager" for line in op["lines"])]
    assert len(reverts) == 1, drift["fix"]

    got = remedy(rehearsal, "expire", "-i", inv, "-o", "json")
    doc = as_json(got)
    assert (got.returncode, doc["status"]["reverted"], doc["status"]["errors"]) == (0, 1, 0), got.stdout
    [host] = doc["hosts"]
    assert (host["status"], host["reverted"], host["remaining"]) == ("Reverted", ["enforce-eager"], []), host
    after = rolled_out(rehearsal)
    assert leader_args(after) == GOOD_ARGS  # the leader's exact prior argv
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes and notes["vllm-remedy.io/last-action"] == "expire"

    again = remedy(rehearsal, "expire", "-i", inv, "-o", "json")
    [host] = as_json(again)["hosts"]
    assert (again.returncode, host["status"], host["reverted"]) == (0, "Unchanged", []), again.stdout
    assert edits(read(rehearsal)) == edits(after)


def test_a_refused_pin_on_the_set_is_fix_refused_and_the_later_operations_do_not_run(rehearsal: Rehearsal,
                                                                                     tmp_path: Path) -> None:
    start_set(rehearsal)
    before = read(rehearsal)
    inv = lws_inventory(rehearsal, tmp_path, "gpu: {products: [NVIDIA-H100-80GB-HBM3]}\n")  # no node offers it
    got = remedy(rehearsal, "drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    [host] = doc["hosts"]
    assert (got.returncode, doc["status"]["result"], host["status"]) == (3, "DriftFixRefused", "FixRefused"), \
        got.stdout
    assert host["fix"]["refused"]["operation"] == FIX[0], host["fix"]  # lws_budget.FIX pins first
    ops = {op["operation"]: op for op in host["fix"]["operations"]}
    assert host["fix"]["changes"] == 0 and not any(op["changes"] for op in ops.values()), ops
    assert [(ops[label]["notRun"], ops[label]["lines"]) for label in FIX[1:]] == [(True, [])] * 2, ops
    assert remedy(rehearsal, "drift", "-i", inv, "--detailed-exitcode").returncode == 3
    assert edits(read(rehearsal)) == edits(before)
