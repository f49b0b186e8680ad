"""deploys/restore.py when the world misbehaves: a concurrent edit, API faults, bad input.

Each case runs the real pyinfra CLI against the rehearsal cluster and asserts both the one-line message
and that nothing was overwritten.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    BAD_ARGS,
    HOST,
    LOCAL,
    NAME,
    NS,
    PATH,
    RESTORE,
    host_out,
    incident,
    replicaset,
    run_with_outage,
    settled,
    with_grace,
    write_inventory,
)
from fixtures.yaml_bombs import hostile_inputs
from vllm_remedy.kube.errors import ConflictError
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
POLICY = str(pyinfra_run.ROOT / "policies" / "llama-8b.yaml")


def annotate(dep: dict[str, Any]) -> None:
    """Someone else's edit that keeps revision 15 crash-looping (kubectl's undo would replace these annotations)."""
    dep["metadata"]["annotations"]["oncall.example.com/owner"] = "someone-else"


def restore_with_an_edit_at_the_prompt(rehearsal: Rehearsal, edit: Any, act: Any = None
                                       ) -> tuple[int, list[str], dict[str, Any]]:
    """Run restore.py interactively; ``edit`` the Deployment (or run ``act()``) while pyinfra waits at its prompt,
    then approve."""
    incident(rehearsal)
    proc = subprocess.Popen([sys.executable, "-m", "pyinfra", LOCAL, RESTORE], cwd=rehearsal.tmp,
                            env=rehearsal.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
    err: list[str] = []
    shown = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            if "reflect the state defined by the input operations" in line:
                shown.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert shown.wait(60), "".join(err)
    for _ in range(20):  # between prepare and execute; the crash loop's status writes may race our read
        try:
            edited = rehearsal.change(edit) if act is None else act()
            break
        except ConflictError:
            continue
    proc.stdin.write("\n")  # pyinfra: "Press enter to execute..."
    proc.stdin.close()
    code = proc.wait(120)
    reader.join(10)
    return code, host_out("".join(err)), edited


def test_concurrent_edit_between_prepare_and_execute_is_not_overwritten(rehearsal: Rehearsal) -> None:
    code, lines, edited = restore_with_an_edit_at_the_prompt(rehearsal, annotate)
    assert code != 0, lines
    failed = [line for line in lines if "changed since it was read" in line and not line.startswith("warning: ")]
    assert len(failed) == 1, lines
    assert failed[0].startswith("roll back deployment llm/llama-8b from revision 15 to revision 14")
    # the controller copied their annotation onto revision 15's ReplicaSet: the crash record planned on it is
    # refused too, as a warning (a record never fails the host)
    warned = [line for line in lines if line.startswith("warning: record on replicaset ")]
    assert len(warned) <= 1 and all("changed since it was read" in line for line in warned), lines
    assert "nothing was written" in failed[0]
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["spec"]["template"] == edited["spec"]["template"]
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == BAD_ARGS
    assert after["metadata"]["annotations"] == edited["metadata"]["annotations"]
    assert after["metadata"]["annotations"]["oncall.example.com/owner"] == "someone-else"


def test_an_approved_rollback_is_never_dropped_silently(rehearsal: Rehearsal) -> None:
    """Someone starts revision 16 at the prompt: at execute it has not crash-looped yet, so the body finds
    nothing to do - that must fail the host with one line, not report "No changes" and exit 0."""
    def new_revision(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append(
            {"name": "ONCALL_TRY", "value": "2"})

    code, lines, edited = restore_with_an_edit_at_the_prompt(rehearsal, new_revision)
    assert code != 0, lines
    failed = [line for line in lines if "was edited after the plan you approved was made" in line]
    assert len(failed) == 1, lines
    assert "the planned change was not made — re-run to plan against the new state" in failed[0]
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["spec"]["template"] == edited["spec"]["template"]  # nothing overwritten


def test_a_crash_record_written_at_the_prompt_does_not_change_what_is_written(rehearsal: Rehearsal) -> None:
    """The prompt showed "revision 15 to revision 14"; someone records revision 14 as crashed meanwhile. The
    Deployment is unchanged, so its guard passes - but the re-planned rollback would go to 13, which nobody
    approved: the host fails with both plans named and nothing is written."""
    def record_crash_on_14() -> dict[str, Any]:
        rs = replicaset(rehearsal, 14)
        body = {"metadata": {"annotations": {"vllm-remedy.io/crashed": '{"at": "2026-01-01T00:00:00Z", '
                                                                          '"failure": "cuda_oom"}'}}}
        rehearsal.client().request("PATCH", f"/apis/apps/v1/namespaces/{NS}/replicasets/{rs['metadata']['name']}",
                                   body=body, content_type="application/merge-patch+json")
        return rehearsal.client().get_deployment(NS, NAME)

    code, lines, before = restore_with_an_edit_at_the_prompt(rehearsal, None, act=record_crash_on_14)
    assert code != 0, lines
    failed = [line for line in lines if "what would be written changed after the plan you approved" in line]
    assert len(failed) == 1, lines
    assert "approved: roll back deployment llm/llama-8b from revision 15 to revision 14" in failed[0], failed
    assert "now: roll back deployment llm/llama-8b from revision 15 to revision 13" in failed[0], failed
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["spec"]["template"] == before["spec"]["template"]  # nothing written
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == BAD_ARGS


def test_transient_5xx_and_latency_converge(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    flaky = [{"verb": "*", "resource": "deployments", "error_rate": 0.3, "error_code": 503},
             {"verb": "patch", "resource": "deployments", "error_rate": 0.5, "error_code": 500},
             {"verb": "*", "resource": "*", "latency_ms": 5}]
    got = run_with_outage(rehearsal, RESTORE, (), flaky)
    assert got.returncode == 0, got.stderr
    assert f"PATCH {PATH}: HTTP 503; retrying" in got.stderr  # the rollback write itself met the outage
    after = rehearsal.client().get_deployment(NS, NAME)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])


def test_injected_conflicts_on_write_converge(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    rehearsal.faults([{"verb": "patch", "resource": "deployments", "conflicts": 2}])
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    after = rehearsal.client().get_deployment(NS, NAME)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])


def test_a_patch_that_keeps_failing_fails_the_host_in_one_line_and_writes_nothing(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    before = settled(rehearsal)
    rehearsal.faults([{"verb": "patch", "resource": "deployments", "error_rate": 1.0, "error_code": 503}])
    got = rehearsal.pyinfra(with_grace(rehearsal.tmp, "1s"), RESTORE, "-y")
    rehearsal.faults([])
    assert got.returncode != 0
    failed = [line for line in host_out(got.stderr) if "HTTP 503" in line]
    assert len(failed) == 1, got.stderr
    # the write's own failure; a 503 may come from a proxy that forwarded it: honest about not knowing
    assert re.search(r"HTTP 503: injected fault: 503 on patch \(after 5 attempts\); outcome unknown: the API did "
                     r"not answer; change [0-9a-f]{16} may still land — rerun to see", failed[0]), failed
    assert "nothing was written" not in failed[0]
    assert "Traceback" not in got.stderr
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def _connect_failure(got: subprocess.CompletedProcess[str], host: str) -> list[str]:
    assert got.returncode != 0
    assert "Traceback" not in got.stderr
    return [line for line in host_out(got.stderr) if line] if host == HOST else [
        line.split(f"[{host}]", 1)[1].strip() for line in pyinfra_run.plain(got.stderr).splitlines()
        if f"[{host}]" in line]


def test_missing_deployment_is_one_line_and_changes_nothing(rehearsal: Rehearsal, tmp_path: Path) -> None:
    host = "@k8s/rehearsal/llm/llama-70b"
    inv = write_inventory(tmp_path, host, policy=POLICY)
    before = rehearsal.client().get_deployment(NS, NAME)
    got = rehearsal.pyinfra(inv, RESTORE, "-y")
    lines = _connect_failure(got, host)
    assert len(lines) == 1, got.stderr
    assert lines[0] == ('deployment llm/llama-70b not found in context rehearsal '
                        '(deployments.apps "llama-70b" not found)')
    assert rehearsal.client().get_deployment(NS, NAME)["metadata"]["generation"] == before["metadata"]["generation"]


def test_invalid_policy_is_one_line_and_changes_nothing(rehearsal: Rehearsal, tmp_path: Path) -> None:
    incident(rehearsal)
    before = settled(rehearsal)
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: {os.path.splitext(POLICY)[0]}\nrestore:\n  rollout_timeout: soon\n")
    inv = write_inventory(tmp_path, HOST, policy=str(bad))
    got = rehearsal.pyinfra(inv, RESTORE, "-y")
    lines = _connect_failure(got, HOST)
    assert len(lines) == 1, got.stderr
    assert lines[0] == (f'{bad}: restore.rollout_timeout: expected a duration such as "30m", "2h" or "1h30m", '
                        'got "soon"')
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_hostile_policy_is_one_line_and_changes_nothing(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """A deeply nested policy in host data printed a RecursionError traceback before the read limits."""
    incident(rehearsal)
    before = settled(rehearsal)
    text, refusal = hostile_inputs()["nested-flow-map"]
    deep = tmp_path / "deep.yaml"
    deep.write_text(text)
    got = rehearsal.pyinfra(write_inventory(tmp_path, HOST, policy=str(deep)), RESTORE, "-y")
    assert _connect_failure(got, HOST) == [f"{deep}: refused: {refusal}"]
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
