"""The Deployment restore's promises, kept for a StatefulSet through the real pyinfra CLI, with -y and at the prompt:
the dry run's diff is the change; a rerun changes nothing; a colleague's edit between our read and our write is
refused and kept; a run killed mid-wait is resumed by the next. The bad rollout is fixtures.sts_world's: revision
2 of llama-sts crash-loops on pod llama-sts-1 (OrderedReady keeps llama-sts-0 on revision 1)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.chaos_proxy import HOOK, ChaosProxy, Rule
from fixtures.dry_run import apply, diffs
from fixtures.pyinfra_run import CLUSTER, Rehearsal, host_lines
from fixtures.sts_world import (
    RESTORE,
    STS_HOST,
    STS_PATH,
    bad_rollout,
    inventory,
    killed_after_deleting_the_blocking_pod,
    sts,
)
from vllm_remedy.kube.client import JSON_PATCH
from vllm_remedy.kube.diff import template_yaml
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.sim import kubeconfig as sim_kubeconfig

rehearsal = pyinfra_run.rehearsal
TEMPLATE = "statefulset llm/llama-sts template"
CHANGE_ID = "vllm-remedy.io/change-id"


def the_change_is_the_diff(before: dict[str, Any], shown_in: str, after: dict[str, Any]) -> None:
    """The one template diff printed, applied to the template before, is the template after; nothing else moved."""
    [diff] = [d for d in diffs(shown_in, STS_HOST) if d.name == TEMPLATE]
    assert apply(template_yaml(before["spec"]["template"]), diff) == template_yaml(after["spec"]["template"])
    assert {k: v for k, v in after["spec"].items() if k != "template"} == \
        {k: v for k, v in before["spec"].items() if k != "template"}


def no_changes(rehearsal: Rehearsal, inv: str, *args: str, stdin: str | None = "") -> list[str]:
    """A rerun: every operation says "No changes" and the set is not written (same resourceVersion); its lines."""
    version = sts(rehearsal)["metadata"]["resourceVersion"]
    again = rehearsal.pyinfra(inv, RESTORE, *args, stdin=stdin)
    assert again.returncode == 0, again.stderr
    assert host_lines(again.stderr, STS_HOST).count("No changes") == 4, again.stderr  # crashes, rollback, toggles, wait
    assert sts(rehearsal)["metadata"]["resourceVersion"] == version
    return host_lines(again.stderr, STS_HOST)


def test_with_y_the_dry_runs_diff_is_the_change_and_a_rerun_is_a_no_op(rehearsal: Rehearsal, tmp_path: Path) -> None:
    before = bad_rollout(rehearsal)
    inv = inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry")
    assert dry.returncode == 0, dry.stderr
    assert sts(rehearsal)["metadata"]["generation"] == before["metadata"]["generation"]  # --dry wrote nothing
    applied = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert applied.returncode == 0, applied.stderr
    assert diffs(applied.stderr, STS_HOST) == diffs(dry.stderr, STS_HOST)  # -y printed what --dry showed
    the_change_is_the_diff(before, dry.stderr, sts(rehearsal))
    no_changes(rehearsal, inv, "-y")
    no_changes(rehearsal, inv, stdin="\n")  # the prompt path: nothing detected; pyinfra still asks


def test_a_forced_revision_restored_is_nothing_to_do_on_a_rerun(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """As for a Deployment (tests/deploys/test_restore_gone_pods.py): once ``--data revision=1`` succeeded - the
    controller renumbered revision 1 to 3 - the same command changes nothing and exits 0, saying why."""
    bad_rollout(rehearsal)
    inv = inventory(tmp_path)
    first = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=1", timeout=300)
    assert first.returncode == 0, first.stderr
    lines = no_changes(rehearsal, inv, "-y", "--data", "revision=1")
    assert ("noop: nothing to restore: host data revision: 1 is the current revision (renumbered 3 when it was "
            "rolled back to)") in lines, lines
    no_changes(rehearsal, inv, "--data", "revision=1", stdin="\n")  # the prompt path too


def test_at_the_prompt_what_was_shown_is_what_runs_and_a_rerun_is_a_no_op(rehearsal: Rehearsal,
                                                                          tmp_path: Path) -> None:
    before = bad_rollout(rehearsal)
    inv = inventory(tmp_path)
    declined = rehearsal.pyinfra(inv, RESTORE, stdin="n\n")
    assert sts(rehearsal)["metadata"]["generation"] == before["metadata"]["generation"], declined.stderr
    got = prompted_run(rehearsal, RESTORE, lambda: None, timeout=300, inventory=inv)
    assert got.returncode == 0, got.stderr
    assert diffs(got.stderr, STS_HOST) == diffs(declined.stderr, STS_HOST)
    the_change_is_the_diff(before, got.stderr, sts(rehearsal))
    no_changes(rehearsal, inv, stdin="\n")


def env_fix(sts: dict[str, Any]) -> None:
    """The colleague's fix: an env var in the template (a new revision)."""
    container = sts["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [*(container.get("env") or []), {"name": "COLLEAGUE_FIX", "value": "1"}]


def colleague(rehearsal: Rehearsal, edit: Callable[[dict[str, Any]], None] = env_fix) -> None:
    """An on-call colleague's own edit of the set, straight to the API server (by default: ``env_fix``)."""
    client = rehearsal.client()
    current = client.request("GET", STS_PATH)
    wanted = copy.deepcopy(current)
    edit(wanted)
    edited = json_patch(current, wanted)
    client.request("PATCH", STS_PATH, body=edited, content_type=JSON_PATCH)


def their_edit_stands(rehearsal: Rehearsal, lines: list[str]) -> None:
    failed = [line for line in lines if "changed since it was read" in line or "was edited after the plan" in line]
    assert failed and all(not line.startswith("warning: ") for line in failed), "\n".join(lines)
    after = sts(rehearsal)
    assert {"name": "COLLEAGUE_FIX", "value": "1"} in after["spec"]["template"]["spec"]["containers"][0]["env"]
    assert CHANGE_ID not in (after["metadata"].get("annotations") or {})  # nothing of ours was written


def test_a_concurrent_edit_at_the_prompt_is_refused_and_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    bad_rollout(rehearsal)
    got = prompted_run(rehearsal, RESTORE, lambda: colleague(rehearsal), timeout=120, inventory=inventory(tmp_path))
    assert got.returncode == 1, got.stderr
    their_edit_stands(rehearsal, host_lines(got.stderr, STS_HOST))


def test_an_annotation_edit_at_the_prompt_is_refused_by_the_precondition_and_kept(rehearsal: Rehearsal,
                                                                                tmp_path: Path) -> None:
    """An edit that leaves revision 2 crash-looping (an on-call note on the set) while pyinfra waits at its prompt:
    the approved rollback is still the plan, so it is sent - guarded by the resourceVersion read at the plan, which
    the API refuses with the usual line, exactly as for a Deployment (tests/deploys/test_restore_safety.py)."""
    bad_rollout(rehearsal)

    def note_on_the_set(sts: dict[str, Any]) -> None:
        sts["metadata"].setdefault("annotations", {})["oncall.example.com/owner"] = "someone-else"

    got = prompted_run(rehearsal, RESTORE, lambda: colleague(rehearsal, note_on_the_set), timeout=120,
                       inventory=inventory(tmp_path))
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    [failed] = [line for line in lines if "changed since it was read" in line and not line.startswith("warning: ")]
    assert failed.startswith("roll back statefulset llm/llama-sts from revision 2 to revision 1 ("), lines
    assert ": rehearsal: statefulset llm/llama-sts changed since it was read (HTTP 422); nothing was written" in failed
    after = sts(rehearsal)
    assert after["metadata"]["annotations"]["oncall.example.com/owner"] == "someone-else"
    assert CHANGE_ID not in after["metadata"]["annotations"]  # nothing of ours was written
    assert after["spec"]["template"]["metadata"].get("annotations")  # still the crash-looping revision 2


def test_with_y_an_edit_between_our_read_and_our_write_is_refused_and_kept(rehearsal: Rehearsal,
                                                                          tmp_path: Path) -> None:
    bad_rollout(rehearsal)
    proxy = ChaosProxy(rehearsal.server.url, rules=[Rule("PATCH", STS_PATH + r"(\?|$)", HOOK, on=[1],
                                                         hook=lambda: colleague(rehearsal))]).start()
    try:
        config = sim_kubeconfig.write(tmp_path / "kubeconfig-chaos", proxy.url, [CLUSTER])
        got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", env={"KUBECONFIG": str(config)})
    finally:
        proxy.stop()
    assert proxy.faults(HOOK) == 1  # the edit landed after the write's read, before its PATCH
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert any("statefulset llm/llama-sts changed since it was read (HTTP 422); nothing was written" in line
               for line in lines), lines
    their_edit_stands(rehearsal, lines)


def test_after_kill_9_mid_wait_a_rerun_resumes_the_wait(rehearsal: Rehearsal, tmp_path: Path) -> None:
    bad_rollout(rehearsal)
    inv = inventory(tmp_path)
    clock = rehearsal.cluster.clock
    clock.set_speed(5.0)  # the restored pod takes ~15 s of real time to load: long enough to kill the run mid-wait
    said = killed_after_deleting_the_blocking_pod(rehearsal, inv, tmp_path)
    written = sts(rehearsal)
    assert CHANGE_ID in written["metadata"]["annotations"], said
    assert int(written["status"].get("readyReplicas") or 0) < 2, written["status"]  # killed before Ready

    def faster() -> None:
        clock.set_speed(60.0)

    again = prompted_run(rehearsal, RESTORE, faster, timeout=180, inventory=inv)  # the rerun, at the prompt
    assert again.returncode == 0, again.stderr
    said = host_lines(again.stderr, STS_HOST)
    resumed = [line for line in said if line.startswith("wait for statefulset llm/llama-sts to roll out (last "
                                                        "vllm-remedy write: restore at ")]
    assert len(resumed) == 1 and "roll out complete" in resumed[0], said
    after = sts(rehearsal)
    assert after["metadata"]["generation"] == written["metadata"]["generation"]  # resumed, not written again
    assert after["metadata"]["annotations"][CHANGE_ID] == written["metadata"]["annotations"][CHANGE_ID]
    assert after["status"]["readyReplicas"] == 2

