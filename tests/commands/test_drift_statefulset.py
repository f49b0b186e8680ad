"""`vllm-remedy drift` and `vllm-remedy expire` on the StatefulSet llama-sts, through the real CLI on the rehearsal
cluster: drift plans deploys/budget.py's own fix for the set (``budget.FIX``, as for a Deployment) and the promise is
checked on the object - the template diffs drift planned, applied to the set as it was, are the set after
``pyinfra … deploys/budget.py -y``; an in-sync set is in sync (exit 0); expire reverts an expired eager toggle
recorded on the set to the exact prior argv, and a second expire changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS
from fixtures.drift_world import as_json
from fixtures.drift_world import inventory as drift_inventory
from fixtures.dry_run import apply, diffs
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import wait_until
from fixtures.sts_step4 import IMPLICIT, TEMPLATE, edit, edits, inventory, quiet, rolled_out, scenario, with_args
from fixtures.sts_world import STS_HOST, delete_pod, llama_set, sts
from vllm_remedy.kube.annotations import rfc3339
from vllm_remedy.kube.diff import template_yaml
from vllm_remedy.operations import budget

rehearsal = pyinfra_run.rehearsal
FIX = [label for label, _op, _args in budget.FIX]
EXPIRES, PRIOR = "vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior"
PRIOR_JSON = json.dumps({"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm"}, sort_keys=True,
                        separators=(",", ":"))


def remedy(rehearsal: Rehearsal, *args: str) -> subprocess.CompletedProcess[str]:
    """``vllm-remedy ARGS`` against the rehearsal cluster (the kubeconfig is also in the inventory's host data)."""
    return subprocess.run([sys.executable, "-m", "vllm_remedy", *args], capture_output=True, text=True,
                          env=rehearsal.env(), cwd=rehearsal.tmp, timeout=300)


def sts_inventory(rehearsal: Rehearsal, tmp: Path) -> str:
    """llama-sts under the runbook's llama-8b policy (fixtures.sts_step4's), the kubeconfig in host data."""
    inventory(tmp)
    return drift_inventory(tmp, rehearsal.kubeconfig, str(tmp / "sts-policy.yaml"), hosts=[STS_HOST], name="drift")


def planned_diffs(host: dict[str, Any]) -> list[Any]:
    """The template diffs drift's planned operations printed, parsed as a deploy's output is."""
    text = "\n".join(f"[{STS_HOST}] {line}" for op in host["fix"]["operations"] for line in op["lines"])
    return diffs(text, STS_HOST)


def args(obj: dict[str, Any]) -> list[str]:
    return list(obj["spec"]["template"]["spec"]["containers"][0]["args"])


def toggled(expires: str, served: list[str] = GOOD_ARGS, prior: str = PRIOR_JSON) -> Callable[[dict[str, Any]], None]:
    """The edit deploys/enforce_eager.py makes (``served`` plus the flag, the toggle's record), its writer gone."""
    def edit_(obj: dict[str, Any]) -> None:
        obj["spec"]["template"]["spec"]["containers"][0]["args"] = [*served, "--enforce-eager"]
        obj["metadata"].setdefault("annotations", {}).update({EXPIRES: expires, PRIOR: prior})
    return edit_


def test_a_drifted_set_gets_budgets_fix_and_budget_writes_exactly_it(rehearsal: Rehearsal, tmp_path: Path) -> None:
    before = scenario(rehearsal, with_args(IMPLICIT))  # --max-model-len dropped: 1.51 max-length requests fit
    inv = sts_inventory(rehearsal, tmp_path)
    got = remedy(rehearsal, "drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    [host] = doc["hosts"]
    assert (got.returncode, host["status"]) == (1, "Drifted"), got.stdout
    assert "max-model-len" in host["drifted"], host["drifted"]
    assert host["fix"]["note"] is None and host["fix"]["refused"] is None, host["fix"]
    ops = {op["operation"]: op for op in host["fix"]["operations"]}
    assert list(ops) == [label for label in FIX if label in ops]  # deploys/budget.py's list for a set, in its order
    fix = ops["Smallest change that restores headroom"]
    assert fix["changes"] and any(line.startswith("budget statefulset llm/llama-sts: --max-model-len 16384")
                                  for line in fix["lines"]), fix
    planned = planned_diffs(host)
    assert [d.name for d in planned] == [TEMPLATE], host["fix"]
    assert edits(sts(rehearsal)) == edits(before), "drift wrote"

    applied = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    assert applied.returncode == 0, applied.stderr
    after = rolled_out(rehearsal)
    expected = template_yaml(before["spec"]["template"])
    for diff in planned:
        expected = apply(expected, diff)
    assert template_yaml(after["spec"]["template"]) == expected, applied.stderr  # the promise, on the object
    assert diffs(applied.stderr, STS_HOST) == planned  # and what the deploy printed
    assert args(after) == [*IMPLICIT, "--max-model-len", "16384"]

    quiet(rehearsal)
    again = remedy(rehearsal, "drift", "-i", inv, "-o", "json")
    [host] = as_json(again)["hosts"]
    assert "max-model-len" not in host["drifted"] and not any(op["changes"] for op in host["fix"]["operations"])


def test_an_in_sync_set_is_in_sync_with_exit_0(rehearsal: Rehearsal, tmp_path: Path) -> None:
    llama_set(rehearsal)
    quiet(rehearsal)
    inv = sts_inventory(rehearsal, tmp_path)
    for flags, code in (((), 0), (("--detailed-exitcode",), 0)):
        got = remedy(rehearsal, "drift", "-i", inv, "-o", "json", *flags)
        [host] = as_json(got)["hosts"]
        assert (got.returncode, host["status"], host["drifted"]) == (code, "InSync", []), got.stdout
        assert (host["fix"]["operations"], host["fix"]["changes"], host["fix"]["note"]) == ([], 0, None), host["fix"]
    human = remedy(rehearsal, "drift", "-i", inv)
    assert human.returncode == 0 and "not planned" not in human.stdout, human.stdout


def test_expire_reverts_an_expired_toggle_on_the_set_and_a_second_run_changes_nothing(rehearsal: Rehearsal,
                                                                                      tmp_path: Path) -> None:
    llama_set(rehearsal)
    expired = rfc3339(rehearsal.client().server_time() - 600)

    edit(rehearsal, toggled(expired))
    rolled_out(rehearsal)
    quiet(rehearsal)
    inv = sts_inventory(rehearsal, tmp_path)
    drift = as_json(remedy(rehearsal, "drift", "-i", inv, "-o", "json"))["hosts"][0]
    assert "enforce-eager" in drift["drifted"], drift
    revert = next(op for op in drift["fix"]["operations"] if op["operation"] == "Revert expired temporary toggles")
    assert revert["changes"] and "-    - --enforce-eager" in revert["lines"], revert

    got = remedy(rehearsal, "expire", "-i", inv, "-o", "json")
    doc = as_json(got)
    assert (got.returncode, doc["status"]["reverted"], doc["status"]["errors"]) == (0, 1, 0), got.stdout
    [host] = doc["hosts"]
    assert (host["status"], host["reverted"], host["remaining"]) == ("Reverted", ["enforce-eager"], []), host
    after = sts(rehearsal)
    assert args(after) == GOOD_ARGS  # the exact prior argv
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes and notes["vllm-remedy.io/last-action"] == "expire"

    rolled_out(rehearsal)
    settled = quiet(rehearsal)
    again = remedy(rehearsal, "expire", "-i", inv, "-o", "json")
    [host] = as_json(again)["hosts"]
    assert (again.returncode, host["status"], host["reverted"]) == (0, "Unchanged", []), again.stdout
    assert edits(sts(rehearsal)) == edits(settled)


def test_expire_leaves_a_toggle_not_yet_due_on_the_set_and_reports_it_remaining(rehearsal: Rehearsal,
                                                                                tmp_path: Path) -> None:
    llama_set(rehearsal)
    rehearsal.cluster.clock.set_speed(1.0)  # an hour of cluster time must outlast the run
    expires = rfc3339(rehearsal.client().server_time() + 3600)

    edit(rehearsal, toggled(expires))
    before = quiet(rehearsal)
    got = remedy(rehearsal, "expire", "-i", sts_inventory(rehearsal, tmp_path), "-o", "json")
    [host] = as_json(got)["hosts"]
    assert (got.returncode, host["status"], host["reverted"]) == (0, "Unchanged", []), got.stdout
    assert [(t["name"], t["expires"]) for t in host["remaining"]] == [("enforce-eager", expires)], host
    assert edits(sts(rehearsal)) == edits(before)


def test_a_refused_pin_on_the_set_is_fix_refused_and_the_later_operations_do_not_run(rehearsal: Rehearsal,
                                                                                     tmp_path: Path) -> None:
    before = scenario(rehearsal, with_args(IMPLICIT))
    inventory(tmp_path, "gpu: {products: [NVIDIA-H100-80GB-HBM3]}\n")  # no node offers it: budget's pin refuses
    inv = drift_inventory(tmp_path, rehearsal.kubeconfig, str(tmp_path / "sts-policy.yaml"), hosts=[STS_HOST])
    got = remedy(rehearsal, "drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    [host] = doc["hosts"]
    assert (got.returncode, doc["status"]["result"], host["status"]) == (3, "DriftFixRefused", "FixRefused"), \
        got.stdout
    assert host["fix"]["refused"]["operation"] == "Pin the GPU type", host["fix"]
    assert host["fix"]["refused"]["reason"].startswith("pin statefulset llm/llama-sts to NVIDIA-H100-80GB-HBM3: "), \
        host["fix"]
    ops = {op["operation"]: op for op in host["fix"]["operations"]}
    assert host["fix"]["changes"] == 0 and not any(op["changes"] for op in ops.values()), ops
    fix = ops["Smallest change that restores headroom"]
    assert (fix["notRun"], fix["lines"]) == (True, [])  # a deploy run stops the host at the pin
    assert remedy(rehearsal, "drift", "-i", inv, "--detailed-exitcode").returncode == 3
    assert edits(sts(rehearsal)) == edits(before)


def test_expire_keeps_an_expired_toggle_the_set_would_not_start_without_and_fails(rehearsal: Rehearsal,
                                                                                  tmp_path: Path) -> None:
    """At --gpu-memory-utilization 0.98 the CUDA graphs eager mode saves put the predicted peak over the L40S: the
    revert is refused like any write predicted not to start (exit 1), nothing written, the toggle still remaining."""
    llama_set(rehearsal)
    tight = [a if a != "0.90" else "0.98" for a in GOOD_ARGS]
    prior = json.dumps({"args": tight, "command": ["vllm", "serve"], "container": "vllm"})
    expired = rfc3339(rehearsal.client().server_time() - 600)

    edit(rehearsal, toggled(expired, tight, prior))
    before = quiet(rehearsal)
    got = remedy(rehearsal, "expire", "-i", sts_inventory(rehearsal, tmp_path), "-o", "json")
    [host] = as_json(got)["hosts"]
    assert got.returncode == 1 and host["reverted"] == [], got.stdout
    assert host["error"].startswith("kept expired toggle enforce-eager (expired ") and \
        "on statefulset llm/llama-sts: without it predicted cudagraph_capture_oom on NVIDIA-L40S" in host["error"], host
    assert [t["name"] for t in host["remaining"]] == ["enforce-eager"]
    assert edits(sts(rehearsal)) == edits(before)


def test_pods_an_on_delete_set_left_on_an_older_revision_are_drift(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Under OnDelete a template change reaches no pod until it is deleted (a hostile review saw drift say 'in sync'
    while both pods kept an expired --enforce-eager the template no longer had)."""
    llama_set(rehearsal, {"type": "OnDelete"})
    inv = sts_inventory(rehearsal, tmp_path)
    quiet(rehearsal)
    clean = {c["check"]: c for c in as_json(remedy(rehearsal, "drift", "-i", inv, "-o", "json"))["hosts"][0]["checks"]}
    assert clean["rollout-pending"]["status"] == "pass", clean
    edit(rehearsal, lambda obj: obj["spec"]["template"]["metadata"].setdefault("annotations", {}).__setitem__(
        "example.com/rotated", "1"))  # any template change: the pods stay as they are
    quiet(rehearsal)
    got = remedy(rehearsal, "drift", "-i", inv, "-o", "json")
    checks = {c["check"]: c for c in as_json(got)["hosts"][0]["checks"]}
    assert checks["rollout-pending"]["status"] == "drift", checks
    assert checks["rollout-pending"]["detail"].startswith("pods llama-sts-0 (revision 1), llama-sts-1 (revision 1) "
                                                          "do not run the update revision 2"), checks
    assert got.returncode != 0, got.stdout


def test_expire_on_an_on_delete_set_says_the_pods_still_run_the_toggle_and_fails(rehearsal: Rehearsal,
                                                                                  tmp_path: Path) -> None:
    """expire writes the revert but deletes no pod; under OnDelete the pods keep --enforce-eager until deleted, so
    'reverted, exit 0' would be a timed toggle that never expires where it runs (a hostile review's finding)."""
    llama_set(rehearsal, {"type": "OnDelete"})
    expired = rfc3339(rehearsal.client().server_time() - 600)

    first = sts(rehearsal)["status"]["updateRevision"]
    edit(rehearsal, toggled(expired))
    # the controller must have made the toggled revision before the pods are deleted, or they come back on the old one
    wait_until(lambda: sts(rehearsal)["status"]["updateRevision"] != first, 30, "the toggled update revision")
    for pod in ("llama-sts-1", "llama-sts-0"):  # OnDelete: the pods take the toggled revision once deleted
        delete_pod(rehearsal, pod)
    rolled_out(rehearsal)
    quiet(rehearsal)
    got = remedy(rehearsal, "expire", "-i", sts_inventory(rehearsal, tmp_path), "-o", "json")
    [host] = as_json(got)["hosts"]
    assert got.returncode == 1, got.stdout
    assert host["error"] == ("statefulset llm/llama-sts: the toggle is off the template, but pods llama-sts-0, "
                             "llama-sts-1 keep running it until they are deleted (updateStrategy OnDelete): delete "
                             "them, or run a deploy under restore.delete_pods: blocking"), host
    assert args(sts(rehearsal)) == GOOD_ARGS  # the template's revert was written


def test_expire_waits_for_the_controller_to_see_its_revert_before_judging_the_pods(rehearsal: Rehearsal,
                                                                                    tmp_path: Path) -> None:
    """Before: expire read the set right after its write; until the controller syncs, status.updateRevision is still
    the toggled revision the pods run, so an OnDelete revert that reaches no pod passed with exit 0 (a loaded full
    run caught it). The controllers are stopped while expire writes and started a second later."""
    llama_set(rehearsal, {"type": "OnDelete"})
    expired = rfc3339(rehearsal.client().server_time() - 600)
    first = sts(rehearsal)["status"]["updateRevision"]
    edit(rehearsal, toggled(expired))
    wait_until(lambda: sts(rehearsal)["status"]["updateRevision"] != first, 30, "the toggled update revision")
    for pod in ("llama-sts-1", "llama-sts-0"):
        delete_pod(rehearsal, pod)
    rolled_out(rehearsal)
    quiet(rehearsal)
    cluster = rehearsal.clusters["rehearsal"]
    cluster.stop()  # kube-controller-manager stalls: the API server still takes the write
    restart = threading.Timer(1.0, cluster.start)
    restart.start()
    try:
        got = remedy(rehearsal, "expire", "-i", sts_inventory(rehearsal, tmp_path), "-o", "json")
    finally:
        restart.join()
    [host] = as_json(got)["hosts"]
    assert got.returncode == 1, got.stdout
    assert host["error"].startswith("statefulset llm/llama-sts: the toggle is off the template, but pods "
                                    "llama-sts-0, llama-sts-1 keep running it"), host

