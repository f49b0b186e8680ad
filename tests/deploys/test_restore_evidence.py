"""deploys/restore.py chooses its target by evidence, never by position (issue 11), through the real pyinfra CLI.

The world the users hit on the rehearsal cluster: no policy pin, no known-good mark, revision 14 good (16384
on L40S), 15 the runbook's incident (--max-model-len dropped, on the L4 pool) and 16 the same with
--gpu-memory-utilization 0.95. Position alone rolled back to 15 — predicted, and seen, to die on an L4.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.kube_writes import mark_known_good
from fixtures.pyinfra_run import Rehearsal, detected_changes
from fixtures.restore_world import (
    BAD_ARGS,
    BIG_CHUNKS,
    DIAGNOSE,
    LOAD,
    NS,
    RESTORE,
    crash_looping,
    deployment,
    host_out,
    incident,
    no_pins,
    pods,
    replicaset,
    settled,
    skipped,
    wait_until,
    write_inventory,
)
from vllm_remedy.kube.annotations import rfc3339
from vllm_remedy.kube.client import MERGE_PATCH
from vllm_remedy.kube.history import templates_equal
from vllm_remedy.vllm.memory.kv_margin import KV_ESTIMATE_MARGIN, KV_MARGIN_PERCENTILE

rehearsal = pyinfra_run.rehearsal
POLICY = pyinfra_run.ROOT / "policies" / "llama-8b.yaml"
GOOD_RS = "llama-8b-6b765dc795"  # revision 14's ReplicaSet
L4_FAIL = "predicted max_len_exceeds_kv on NVIDIA-L4"
#: 15's pods crash-looped and 16's Recreate deleted them: their Events speak first (then its record, once written).
SEEN_GONE = "seen crash-looping in its pods' Events ("


def two_bad_revisions(rehearsal: Rehearsal) -> None:
    """15 (the incident) crash-loops, then 16: the same plus --gpu-memory-utilization 0.95, crash-looping too."""
    incident(rehearsal)

    def hotter(dep: dict) -> None:
        args = list(BAD_ARGS)
        args[args.index("--gpu-memory-utilization") + 1] = "0.95"
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = args

    rehearsal.change(hotter, change_cause="--gpu-memory-utilization 0.95 for more KV cache")
    wait_until(lambda: deployment(rehearsal)["metadata"]["annotations"].get(
        "deployment.kubernetes.io/revision") == "16", what="revision 16")
    wait_until(lambda: crash_looping(rehearsal) and all(p["metadata"]["labels"].get("pod-template-hash") ==
               replicaset(rehearsal, 16)["metadata"]["labels"]["pod-template-hash"]
               for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp")), 60, "revision 16 to crash-loop")


def test_two_bad_revisions_restore_revision_14_in_one_run(rehearsal: Rehearsal, tmp_path: Path) -> None:
    two_bad_revisions(rehearsal)
    good = replicaset(rehearsal, 14)
    assert good["metadata"]["name"] == GOOD_RS
    got = rehearsal.pyinfra(no_pins(tmp_path), RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert ("roll back deployment llm/llama-8b from revision 16 to revision 14 (llama-8b-6b765dc795) — chosen by "
            "rule: newest earlier revision with no evidence against it") in " ".join(lines), lines
    assert "the current revision, dying now (2 pod(s) max_len_exceeds_kv)" in skipped(lines, 16)
    assert SEEN_GONE in skipped(lines, 15)
    assert not [line for line in lines if line.startswith("skipped revision 14")]
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["status"].get("readyReplicas") == 2
    # what this run saw dying is on 16's ReplicaSet, never on the Deployment (the controller would copy it)
    record = json.loads(replicaset(rehearsal, 16)["metadata"]["annotations"]["vllm-remedy.io/crashed"])
    assert record["failure"] == "max_len_exceeds_kv"
    assert "vllm-remedy.io/crashed" not in after["metadata"]["annotations"]


def test_two_bad_revisions_dry_and_prompted_show_the_same_choice_and_change_nothing(rehearsal: Rehearsal,
                                                                                    tmp_path: Path) -> None:
    two_bad_revisions(rehearsal)
    before = settled(rehearsal)
    inv = no_pins(tmp_path)
    for args, stdin in ((["--dry"], None), ([], "n\n")):
        got = rehearsal.pyinfra(inv, RESTORE, *args, stdin=stdin)
        lines = host_out(got.stderr)
        assert any("to revision 14 (llama-8b-6b765dc795) — chosen by rule: newest earlier revision with no "
                   "evidence against it" in line for line in lines), (args, lines)
        assert SEEN_GONE in skipped(lines, 15)
        assert "dying now" in skipped(lines, 16)
        assert "+    nvidia.com/gpu.product: NVIDIA-L40S" in lines
        changes = detected_changes(got.stderr)
        assert changes["Roll back a crash-looping revision to the last known-good one"] != ("-", "-"), changes
    after = deployment(rehearsal)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "vllm-remedy.io/crashed" not in replicaset(rehearsal, 16)["metadata"]["annotations"]  # nothing written
    good = replicaset(rehearsal, 14)
    accepted = rehearsal.pyinfra(inv, RESTORE, stdin="\n")  # Enter at the prompt: what was shown is what runs
    assert accepted.returncode == 0, accepted.stderr
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])


def test_a_rerun_never_bounces_onto_a_revision_seen_dying(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The operator forces 15; it crash-loops again. The next run must not pick 16 (recorded dying) either."""
    two_bad_revisions(rehearsal)
    good = replicaset(rehearsal, 14)
    inv = no_pins(tmp_path)
    forced = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=15", "--data", "override=evidence")
    lines = host_out(forced.stderr)
    assert any("chosen by rule: operator override (host data revision)" in line for line in lines), lines
    assert any(line.startswith("warning: forced despite the evidence (override=evidence): " + SEEN_GONE)
               for line in lines), lines
    assert forced.returncode != 0  # 15 crash-loops again: the wait fails fast
    again = rehearsal.pyinfra(inv, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    lines = host_out(again.stderr)
    assert "seen crash-looping (max_len_exceeds_kv) at " in skipped(lines, 16), lines
    assert any("to revision 14 (llama-8b-6b765dc795) — chosen by rule: newest earlier revision with no evidence "
               "against it" in line for line in lines), lines  # 16 (dying) skipped, 15 now runs as 17
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["status"].get("readyReplicas") == 2


def test_a_forced_revision_that_does_not_exist_or_is_garbage_is_one_line_exit_2(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    incident(rehearsal)
    before = settled(rehearsal)
    inv = no_pins(tmp_path)
    for value, said in (("99", "host data revision: 99 is not in the rollout history of deployment llm/llama-8b "
                                "(revisions: 12, 13, 14, 15)"),
                        ("fourteen", "host data revision: 'fourteen' is not a revision number (a whole number >= 1)"),
                        # empty (an unset shell variable); pyinfra itself reads " 14" as 14
                        ("", "host data revision: '' is not a revision number (a whole number >= 1)")):
        got = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", f"revision={value}")
        assert got.returncode == 2, got.stderr
        assert host_out(got.stderr)[-1] == said, got.stderr
        assert "Traceback" not in got.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_marked_revision_that_dies_under_load_loses_its_mark_and_is_skipped(rehearsal: Rehearsal,
                                                                            tmp_path: Path) -> None:
    """15 (16k prefill chunks) is confirmed known-good, then long prompts kill it under load; diagnose sees it.
    The mark is withdrawn on 15's ReplicaSet, and after a bad rollout restore skips 15 and returns to 14."""
    client = rehearsal.client()

    def big_chunks(dep: dict) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(BIG_CHUNKS)

    rehearsal.change(big_chunks, change_cause="bigger prefill chunks for throughput")
    wait_until(lambda: rehearsal.cluster.rolled_out("llm", "llama-8b"), 30, "revision 15 to roll out")
    marked_at = client.server_time()
    mark_known_good(client, NS, replicaset(rehearsal, 15)["metadata"]["name"], at=marked_at, reason="confirmed")

    def loaded(dep: dict) -> None:
        dep["metadata"]["annotations"]["sim.vllm-remedy.io/load"] = LOAD

    rehearsal.change(loaded)  # metadata only: no new revision
    for pod in pods(rehearsal):
        client.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}")
    wait_until(lambda: crash_looping(rehearsal), 30, "OOM under load to crash-loop the pods")
    seen = rehearsal.pyinfra(no_pins(tmp_path), DIAGNOSE, "-y")
    assert seen.returncode == 0, seen.stderr
    notes = replicaset(rehearsal, 15)["metadata"]["annotations"]
    assert "vllm-remedy.io/known-good" not in notes and "vllm-remedy.io/known-good-reason" not in notes
    withdrawn = json.loads(notes["vllm-remedy.io/known-good-withdrawn"])
    assert withdrawn["reason"] == "died under load (oom_under_load) after it was marked known-good"
    assert withdrawn["marked_at"] == rfc3339(marked_at)
    assert json.loads(notes["vllm-remedy.io/crashed"])["failure"] == "oom_under_load"

    incident(rehearsal)  # revision 16: the runbook's bad rollout on top
    # 15's pods crash-loop already, so incident() can return before 16's do (restore then saw "no pod is
    # crash-looping" and waited on 16's crash): wait for the pods to be 16's
    wait_until(lambda: crash_looping(rehearsal) and all(p["metadata"]["labels"].get("pod-template-hash") ==
               replicaset(rehearsal, 16)["metadata"]["labels"]["pod-template-hash"]
               for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp")), 60, "revision 16 to crash-loop")
    got = rehearsal.pyinfra(no_pins(tmp_path), RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert "died under load (oom_under_load) at " in skipped(lines, 15), lines
    assert any("to revision 14 (llama-8b-6b765dc795) — chosen by rule: newest earlier revision with no evidence "
               "against it" in line for line in lines), lines


def l40s_pool_gone(rehearsal: Rehearsal) -> None:
    """The L40S pool is cordoned (the reservation ended) and the L4 pool loses its taint (it is the pool now)."""
    client = rehearsal.client()
    for node in client.list_nodes():
        labels = node["metadata"]["labels"]
        path = f"/api/v1/nodes/{node['metadata']['name']}"
        if labels.get("nvidia.com/gpu.product") == "NVIDIA-L40S":
            ops = [{"op": "add", "path": "/spec/unschedulable", "value": True}]
        elif labels.get("nvidia.com/gpu.product") == "NVIDIA-L4":
            ops = [{"op": "remove", "path": "/spec/taints"}]
        else:
            continue
        client.request("PATCH", path, body=ops, content_type="application/json-patch+json")


def l4_policy(tmp: Path) -> str:
    """llama-8b's policy for a cluster whose GPUs are L4s now: no pin, the L4 product, one max-length request."""
    policy = tmp / "l4.yaml"
    policy.write_text(f"extends: {POLICY.with_suffix('')}\nknown_good: []\ngpu:\n  products: [NVIDIA-L4]\n"
                      "peak_concurrency: 1\n")
    return write_inventory(tmp, policy=str(policy))


def test_no_revision_fits_hands_over_to_the_budget_on_the_last_revision_that_served(rehearsal: Rehearsal,
                                                                                    tmp_path: Path) -> None:
    l40s_pool_gone(rehearsal)
    two_bad_revisions(rehearsal)
    good = replicaset(rehearsal, 14)
    # the L40S policy: budget cannot pin a cordoned product either, so the host fails with every reason
    before = settled(rehearsal)
    stuck = rehearsal.pyinfra(no_pins(tmp_path), RESTORE, "-y")
    assert stuck.returncode == 1, stuck.stderr
    refusal = [line for line in host_out(stuck.stderr) if "no earlier revision is predicted to serve" in line
               and "budget: pin NVIDIA-L40S: no schedulable NVIDIA-L40S capacity" in line]
    assert len(refusal) == 1 and "revision 15 (llama-8b-85bd68ffdd): seen crash-looping" in refusal[0], stuck.stderr
    assert deployment(rehearsal)["spec"]["template"] == before["spec"]["template"]
    inv = l4_policy(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry")
    assert dry.returncode == 0, dry.stderr
    said = host_out(dry.stderr)
    for number in (14, 13, 12):
        assert "its pods would not schedule now (nvidia.com/gpu.product=NVIDIA-L40S: 3 matching node(s), none " \
               "schedulable (cordoned or not Ready))" in skipped(said, number), said
    assert "seen crash-looping" in skipped(said, 15)
    assert "+    nvidia.com/gpu.product: NVIDIA-L4" in said
    got = rehearsal.pyinfra(inv, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith("budget handover on deployment llm/llama-8b: revision 14 (llama-8b-6b765dc795), the "
                               "last that served, with pin nvidia.com/gpu.product=NVIDIA-L4") for line in lines), lines
    after = deployment(rehearsal)
    spec = after["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L4"}
    assert spec["containers"][0]["args"] == good["spec"]["template"]["spec"]["containers"][0]["args"]
    assert after["status"].get("readyReplicas") == 2
    assert all(p["spec"]["nodeName"].startswith("gke-l4-pool-") for p in pods(rehearsal)
               if not p["metadata"].get("deletionTimestamp"))


def test_a_record_that_cannot_be_written_is_one_warning_and_never_blocks_the_rollback(rehearsal: Rehearsal,
                                                                                     tmp_path: Path) -> None:
    """No RBAC patch on replicasets (403): the crash record is one warning line; restore still restores."""
    two_bad_revisions(rehearsal)
    good = replicaset(rehearsal, 14)
    rehearsal.faults([{"verb": "patch", "resource": "replicasets", "error_rate": 1.0, "error_code": 403}])
    got = rehearsal.pyinfra(no_pins(tmp_path), RESTORE, "-y")
    rehearsal.faults([])
    assert got.returncode == 0, got.stderr
    warned = [line for line in host_out(got.stderr) if line.startswith("warning: record on replicaset ")]
    # one line per record: 16 dying now, 15 by its gone pods' Events
    assert len(warned) == 2 and all(": not recorded (" in w and "403" in w for w in warned), got.stderr
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])
    assert "vllm-remedy.io/crashed" not in replicaset(rehearsal, 16)["metadata"]["annotations"]


def test_a_record_planned_on_a_replicaset_edited_at_the_prompt_is_refused_and_never_blocks(
        rehearsal: Rehearsal) -> None:
    """A colleague annotates the dying revision's ReplicaSet between change detection and execute: the record
    planned on it is refused ("changed since it was read", one warning), theirs stands, the rollback goes on."""
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    name = replicaset(rehearsal, 15)["metadata"]["name"]
    path = f"/apis/apps/v1/namespaces/{NS}/replicasets/{name}"

    def distrust() -> None:
        rehearsal.client().request("PATCH", path, body={"metadata": {"annotations": {
            "colleague/verdict": "do-not-trust"}}}, content_type=MERGE_PATCH)

    got = prompted_run(rehearsal, RESTORE, distrust, timeout=120)
    assert "Press enter to execute" in got.stderr, got.stderr
    assert got.returncode == 0, got.stderr
    warned = [line for line in host_out(got.stderr) if line.startswith(f"warning: record on replicaset {name} ")]
    assert len(warned) == 1 and warned[0].endswith(
        f": not recorded (rehearsal: replicaset {NS}/{name} changed since it was read (HTTP 422); nothing was "
        "written — re-run to plan against the new state)"), got.stderr
    notes = rehearsal.client().request("GET", path)["metadata"]["annotations"]
    assert notes["colleague/verdict"] == "do-not-trust"
    assert "vllm-remedy.io/crashed" not in notes
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])


def test_the_hand_over_keeps_the_policy_margin_and_its_dry_run_says_so(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Revision 14 on an L4 holds 1.97 requests of 16384 as predicted, 1.25 wanted: 36 % spare, less than this
    policy's 40 % margin, so the hand-over shortens --max-model-len and the dry run says why."""
    l40s_pool_gone(rehearsal)
    two_bad_revisions(rehearsal)
    before = settled(rehearsal)
    policy = tmp_path / "l4.yaml"
    policy.write_text(f"extends: {POLICY.with_suffix('')}\nknown_good: []\ngpu:\n  products: [NVIDIA-L4]\n"
                      "peak_concurrency: 1\nbudget:\n  kv_margin: 0.4\n")
    dry = rehearsal.pyinfra(write_inventory(tmp_path, policy=str(policy)), RESTORE, "--dry")
    assert dry.returncode == 0, dry.stderr
    said = host_out(dry.stderr)
    derived = f"{KV_ESTIMATE_MARGIN * 100:.3g} %"
    assert (f"note: 40 % KV estimate margin (policy budget.kv_margin; the derived {derived} covers the estimator's "
            f"error in {KV_MARGIN_PERCENTILE} % of held-out startup logs)") in said, said
    assert ("budget problem: the predicted KV cache for 1.25x at max-model-len 16,384 fits by 36 %, below the 40 % "
            "estimate margin") in said, said
    assert any(line.startswith("budget handover on deployment llm/llama-8b: revision 14 (llama-8b-6b765dc795), the "
                               "last that served, with pin nvidia.com/gpu.product=NVIDIA-L4; --max-model-len ")
               for line in said), said
    assert deployment(rehearsal)["spec"]["template"] == before["spec"]["template"]
