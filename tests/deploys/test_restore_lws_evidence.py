"""deploys/restore.py on a LeaderWorkerSet chooses by evidence as on a Deployment or StatefulSet, through the real
pyinfra CLI on the rehearsal cluster: with two bad revisions on top of a good one it skips (and says why) the one
predicted to fail and lands on the good one, with the audit annotations every write of ours carries, and never
flip-flops; ``--data revision`` is honoured or refused in one line; an edit at the prompt stops the approved
rollback rather than turning it into a silent "nothing to restore"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.lws_world import ARGS, BAD_ARGS, HOST, NAME, RESTORE, inventory, patch, read, start_set
from fixtures.pyinfra_run import Rehearsal, host_lines
from vllm_remedy.kube.lws_wait import wait_for_lws_rollout

rehearsal = pyinfra_run.rehearsal
#: A second bad rollout: the same KV cache that does not fit, with one more flag (a new revision 3).
BAD_3 = [*BAD_ARGS, "--max-num-seqs", "128"]
WHERE = "leaderworkerset llm/qwen-lws"


def _two_bad_revisions(rehearsal: Rehearsal) -> dict:
    good = start_set(rehearsal)
    cluster = rehearsal.clusters["rehearsal"]
    patch(rehearsal, [{"op": "replace", "path": ARGS, "value": BAD_3}])
    failed = wait_for_lws_rollout(rehearsal.client(), "llm", NAME, timeout=1800, clock=cluster.clock, interval=5,
                                  fetch_log=False)
    assert failed.outcome == "crash-loop", failed.message
    return good


def _one_line(got: subprocess.CompletedProcess[str]) -> str:
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr
    # the one error line; a note (this inventory names no policy: the built-in default governs) is not an error
    lines = [line for line in host_lines(got.stderr, HOST)
             if line and line != "Connected" and not line.startswith("note: ")]
    assert len(lines) == 1, got.stderr
    return lines[0]


def test_two_bad_revisions_are_skipped_by_evidence_and_forced_targets_follow_the_deployment_rules(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    good = _two_bad_revisions(rehearsal)
    inv = inventory(tmp_path)
    bad = read(rehearsal)

    unknown = _one_line(rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=99"))
    assert unknown.startswith(f"host data revision: 99 is not in the rollout history of {WHERE} (revisions: 1, 2, "
                              "3"), unknown
    refused = _one_line(rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2"))
    assert refused.startswith("host data revision: revision 2 is not restored: ") and "max_len_exceeds_kv" in \
        refused and refused.endswith("add --data override=evidence"), refused
    overridden = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", "--data", "override=evidence")
    assert overridden.returncode == 0, overridden.stderr
    assert any(line.startswith(f"roll back {WHERE} from revision 3 to revision 2 (") for line in
               host_lines(overridden.stderr, HOST)), overridden.stderr

    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", timeout=300)
    assert dry.returncode == 0, dry.stderr
    lines = host_lines(dry.stderr, HOST)
    assert any(line.startswith(f"roll back {WHERE} from revision 3 to revision 1 (") for line in lines), lines
    assert any(line.startswith("skipped revision 2 (") and "max_len_exceeds_kv" in line for line in lines), lines
    assert any(line.startswith("record on controllerrevision ") and "(revision 3) that it was seen dying" in line
               for line in lines), lines
    assert read(rehearsal)["metadata"]["resourceVersion"] == bad["metadata"]["resourceVersion"]  # dry: no write

    # the operator insists on revision 2: it crash-loops, and the wait records that on its ControllerRevision
    forced = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=2", "--data", "override=evidence",
                               timeout=300)
    assert forced.returncode != 0, forced.stderr
    assert any("crash-loop after " in line for line in host_lines(forced.stderr, HOST)), forced.stderr
    assert any(line.startswith("wait for revision 2 to roll out: recorded on controllerrevision ") and
               line.endswith("restore will not return to it") for line in host_lines(forced.stderr, HOST))

    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)  # revision 2 came back as 4: neither 4 nor 3 again
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert any(line.startswith(f"roll back {WHERE} from revision 4 to revision 1 (") for line in lines), lines
    assert any(line.startswith("skipped revision 3 (") for line in lines), lines
    client = rehearsal.client()
    records = {int(r["revision"]): (r["metadata"].get("annotations") or {}).get("vllm-remedy.io/crashed")
               for r in client.request("GET", client.object_path("llm", "controllerrevisions"))["items"]}
    assert records[3] and records[4] and "max_len_exceeds_kv" in records[4], records  # both bad ones, on record
    after = read(rehearsal)
    assert after["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]
    notes = after["metadata"]["annotations"]
    assert notes["vllm-remedy.io/last-action"] == "restore" and notes["vllm-remedy.io/last-action-at"], notes
    assert notes["vllm-remedy.io/last-action-reason"].startswith("roll back to revision 1 ("), notes
    assert notes["kubernetes.io/change-cause"] and notes["vllm-remedy.io/change-id"], notes

    again = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)  # healthy now: no flip-flop back to a bad one
    assert again.returncode == 0, again.stderr
    assert (f"noop: nothing to restore: no pod of {WHERE}'s current template is crash-looping"
            in host_lines(again.stderr, HOST)), again.stderr
    assert read(rehearsal)["spec"] == after["spec"]


def test_an_edit_of_the_worker_at_the_prompt_stops_the_approved_rollback(rehearsal: Rehearsal,
                                                                        tmp_path: Path) -> None:
    start_set(rehearsal)
    edited: list[dict] = []

    def meanwhile() -> None:  # a colleague sets an env var on the worker while the operator reads the diff
        edited.append(patch(rehearsal, [{"op": "add", "path": "/spec/leaderWorkerTemplate/workerTemplate/spec/"
                                         "containers/0/env", "value": [{"name": "NCCL_DEBUG", "value": "INFO"}]}]))

    got = prompted_run(rehearsal, RESTORE, meanwhile, timeout=300, inventory=inventory(tmp_path))
    lines = host_lines(got.stderr, HOST)
    assert got.returncode == 1, got.stderr
    assert any(f"{WHERE} was edited after the plan you approved was made (resourceVersion " in line and
               "the planned change was not made — re-run" in line for line in lines), lines
    assert not any(line.startswith("noop: nothing to restore") for line in lines), lines
    after = read(rehearsal)
    assert after["spec"] == edited[0]["spec"]  # nothing written over the edit
    assert after["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"] == BAD_ARGS
