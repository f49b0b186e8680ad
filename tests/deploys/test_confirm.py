"""deploys/confirm.py (runbook step 6) through the real pyinfra CLI: confirm in cluster time, then mark."""

from __future__ import annotations

import re
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import (
    CONFIRM,
    HOST,
    LOCAL,
    NAME,
    NS,
    RESTORE,
    bad_revision,
    crash_looping,
    host_out,
    incident,
    pods,
    replicaset,
    stable,
    wait_until,
    write_inventory,
)
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.kube.client import MERGE_PATCH
from vllm_remedy.kube.history import templates_equal

# confirm compares the concurrency vLLM logs with the policy peak in exact figures: the estimate must be the truth
rehearsal = pyinfra_run.exact_rehearsal


def restored(rehearsal: Rehearsal, speed: float = 600.0) -> dict:
    """The incident, restored by deploys/restore.py at ``speed``; returns the restored ReplicaSet (revision 16)."""
    incident(rehearsal)
    rehearsal.cluster.clock.set_speed(speed)
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    return replicaset(rehearsal, 16)


def test_confirm_waits_for_stability_then_marks_the_replicaset_once(rehearsal: Rehearsal) -> None:
    # at 600x, 30 cluster minutes are 3 real seconds: a loaded machine's pyinfra start-up alone - or the rest of
    # the restore run after its wait - could pass them; at 60x they are 30 seconds
    rs = restored(rehearsal, speed=60.0)
    rehearsal.cluster.clock.set_speed(6.0)
    early = rehearsal.pyinfra(LOCAL, CONFIRM, "-y")
    rehearsal.cluster.clock.set_speed(600.0)
    assert early.returncode != 0
    lines = host_out(early.stderr)
    refusal = [line for line in lines if line.startswith("refused: revision 16 not confirmed: ")]
    assert len(refusal) == 1, lines
    assert "of the required 30m" in refusal[0] and "Ready for " in refusal[0]
    client = rehearsal.client()
    assert "vllm-remedy.io/known-good" not in (replicaset(rehearsal, 16)["metadata"].get("annotations") or {})

    stable(rehearsal)
    started = int(rehearsal.cluster.clock.now())  # RFC 3339 stamps have whole seconds
    got = rehearsal.pyinfra(LOCAL, CONFIRM, "-y")
    finished = rehearsal.cluster.clock.now()
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert f"step 6 — confirm revision 16 ({rs['metadata']['name']}):" in lines
    for pod in sorted(p["metadata"]["name"] for p in pods(rehearsal)):
        assert f"ok: pod {pod}: maximum concurrency 12.08x vs peak 8 × 1.25 = 10.00" in lines
        assert f"ok: pod {pod}: KV cache usage 0.0% (limit 90%)" in lines
    assert any(line.startswith(f"mark revision 16 ({rs['metadata']['name']}) known-good: written") for line in lines)
    marked = client.request("GET", f"/apis/apps/v1/namespaces/{NS}/replicasets/{rs['metadata']['name']}")
    notes = marked["metadata"]["annotations"]
    # stamped in cluster time during this run (a wall-time margin at 600x fails on a loaded machine)
    assert started <= parse_rfc3339(notes["vllm-remedy.io/known-good"]) <= finished
    assert notes["vllm-remedy.io/known-good-reason"].startswith("confirmed: ok: revision 16: 2 pod(s)")
    assert notes["vllm-remedy.io/last-action"] == "restore"  # the Deployment's, copied by the controller
    assert notes["kubernetes.io/change-cause"] == rs["metadata"]["annotations"]["kubernetes.io/change-cause"]
    deployment = client.get_deployment(NS, NAME)
    assert "vllm-remedy.io/known-good" not in deployment["metadata"]["annotations"]

    again = rehearsal.pyinfra(LOCAL, CONFIRM, "-y")
    assert again.returncode == 0, again.stderr
    assert host_out(again.stderr).count("No changes") == 4  # revert toggles, record crashes, wait, mark
    after = client.request("GET", f"/apis/apps/v1/namespaces/{NS}/replicasets/{rs['metadata']['name']}")
    assert after["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]


def test_capacity_below_policy_peak_fails_with_the_figures(rehearsal: Rehearsal, tmp_path: Path) -> None:
    restored(rehearsal)
    stable(rehearsal)
    policy = tmp_path / "peak.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\npeak_concurrency: 16\n")
    got = rehearsal.pyinfra(write_inventory(tmp_path, HOST, policy=str(policy)), CONFIRM, "-y")
    assert got.returncode != 0
    lines = host_out(got.stderr)
    for pod in sorted(p["metadata"]["name"] for p in pods(rehearsal)):
        assert f"FAIL: pod {pod}: maximum concurrency 12.08x vs peak 16 × 1.25 = 20.00" in lines
    assert "vllm-remedy.io/known-good" not in (replicaset(rehearsal, 16)["metadata"].get("annotations") or {})


def test_restore_prefers_the_revision_confirm_marked(rehearsal: Rehearsal) -> None:
    rs = restored(rehearsal)
    stable(rehearsal)
    assert rehearsal.pyinfra(LOCAL, CONFIRM, "-y").returncode == 0

    def worse(dep: dict) -> None:  # revision 17: another bad change on top of the confirmed one
        bad_revision(dep)
        dep["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "VLLM_TRY", "value": "6"})

    rehearsal.change(worse, change_cause="revision 17")
    wait_until(lambda: crash_looping(rehearsal), what="revision 17 to crash-loop")
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    summary = (f"roll back deployment llm/llama-8b from revision 17 to revision 16 ({rs['metadata']['name']}) — "
               "chosen by rule: known-good mark")
    assert any(line.startswith(summary) for line in host_out(got.stderr)), got.stderr
    after = rehearsal.client().get_deployment(NS, NAME)
    assert templates_equal(after["spec"]["template"], rs["spec"]["template"])


def test_a_revision_no_node_can_take_fails_fast_with_the_schedulers_reason(rehearsal: Rehearsal) -> None:
    """Past its progress deadline, a new pod stuck Pending is a verdict, not a reason to sit out the timeout."""
    def h100(dep: dict) -> None:  # no H100 node in the rehearsal world
        dep["spec"]["progressDeadlineSeconds"] = 120
        dep["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}

    rehearsal.change(h100, change_cause="pin to H100")

    def deadline_passed() -> bool:
        conds = rehearsal.client().get_deployment(NS, NAME)["status"].get("conditions") or []
        return any(c["type"] == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded" for c in conds)

    wait_until(deadline_passed, 30, "ProgressDeadlineExceeded")
    got = rehearsal.pyinfra(LOCAL, CONFIRM, "-y")
    assert got.returncode != 0
    lines = host_out(got.stderr)
    stuck = [line for line in lines if ": unschedulable after " in line]
    assert len(stuck) == 1, lines
    assert "Unschedulable: 0/" in stuck[0] and "node(s) didn't match Pod's node affinity/selector" in stuck[0]
    # the wait's own cluster time (process start-up at 600x is not the wait's): not the 15-minute timeout
    waited = re.search(r": unschedulable after (\d+)s: ", stuck[0])
    assert waited is not None and int(waited.group(1)) < 120, stuck[0]
    dry = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")  # step 1 has nothing to roll back, and says why
    assert dry.returncode == 0, dry.stderr
    said = [line for line in host_out(dry.stderr) if line.startswith("noop: nothing to restore: ")]
    assert len(said) == 1 and "no pod is crash-looping, but 1 new pod(s) cannot be scheduled" in said[0], said


def test_confirm_never_marks_a_revision_running_a_temporary_toggle(rehearsal: Rehearsal) -> None:
    from fixtures.budget_world import EAGER, rolled_out

    got = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=2h")
    assert got.returncode == 0, got.stderr
    expires = rolled_out(rehearsal)["metadata"]["annotations"]["vllm-remedy.io/enforce-eager-expires"]
    stable(rehearsal)
    got = rehearsal.pyinfra(LOCAL, CONFIRM, "-y")
    assert got.returncode != 0
    lines = host_out(got.stderr)
    refusal = [line for line in lines if line.startswith("refused: revision 15 not confirmed: ")]
    assert len(refusal) == 1, lines
    assert f"temporary toggle enforce-eager is on until {expires}" in refusal[0], refusal
    assert "vllm-remedy.io/known-good" not in (replicaset(rehearsal, 15)["metadata"].get("annotations") or {})


def test_an_annotation_made_at_the_prompt_refuses_the_mark_and_is_kept(rehearsal: Rehearsal) -> None:
    """A colleague marks the ReplicaSet do-not-trust between change detection and execute: the mark is refused."""
    rs = restored(rehearsal)
    stable(rehearsal)
    name = rs["metadata"]["name"]
    path = f"/apis/apps/v1/namespaces/{NS}/replicasets/{name}"

    def distrust() -> None:
        rehearsal.client().request("PATCH", path, body={"metadata": {"annotations": {
            "colleague/verdict": "do-not-trust"}}}, content_type=MERGE_PATCH)

    got = prompted_run(rehearsal, CONFIRM, distrust)
    assert "Press enter to execute" in got.stderr, got.stderr  # annotated at the prompt
    assert got.returncode == 1, got.stderr
    lines = host_out(got.stderr)
    failed = [line for line in lines if line.startswith(f"mark revision 16 ({name}) known-good: ")]
    assert failed == [f"mark revision 16 ({name}) known-good: rehearsal: replicaset {NS}/{name} changed since it was "
                      "read (HTTP 422); nothing was written — re-run to plan against the new state"], lines
    notes = rehearsal.client().request("GET", path)["metadata"]["annotations"]
    assert notes["colleague/verdict"] == "do-not-trust"  # theirs stands
    assert "vllm-remedy.io/known-good" not in notes  # ours not written over it
