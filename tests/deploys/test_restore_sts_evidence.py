"""deploys/restore.py on a StatefulSet chooses its target by evidence, never by position, through the real pyinfra
CLI: revision 3 crash-loops, revision 2 crash-looped before (recorded on its ControllerRevision by an earlier run),
and the restore lands on revision 1 — which real kubectl 1.32 then shows renumbered to 4, as its own undo does."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import pyinfra_run, sim_world
from fixtures.pyinfra_run import Rehearsal, crash_on_start, host_lines
from fixtures.sts_world import (
    MAX_LEN_LOG,
    RESTORE,
    STS_HOST,
    STS_PATH,
    crash_looping_on,
    inventory,
    llama_set,
    revision_names,
    roll,
)
from vllm_remedy.kube.history import templates_equal
from vllm_remedy.kube.sts_history import revision_template

rehearsal = pyinfra_run.rehearsal
RECORD = "vllm_remedy.operations.sts_evidence.crash_recorded"
CRASHED = "vllm-remedy.io/crashed"


def two_bad_revisions(rehearsal: Rehearsal, inv: str) -> dict:
    """1 serves; 2 crash-loops (an earlier run records it); a colleague's 3 crash-loops too. Returns revision 1's CR."""
    llama_set(rehearsal)
    roll(rehearsal, crash_on_start(MAX_LEN_LOG.read_text()))
    crash_looping_on(rehearsal, "llama-sts-1")
    recorded = rehearsal.pyinfra(inv, RECORD, "-y")
    assert recorded.returncode == 0, recorded.stderr
    roll(rehearsal, crash_on_start(MAX_LEN_LOG.read_text(), after=3.0))
    # the colleague's forced rollout: OrderedReady would never move past the crash-looping pod of revision 2
    rehearsal.client().request("DELETE", rehearsal.client().object_path("llm", "pods", "llama-sts-1", group="v1"))
    crash_looping_on(rehearsal, "llama-sts-1")
    revisions = revision_names(rehearsal)
    assert sorted(revisions) == [1, 2, 3]
    assert json.loads(revisions[2]["metadata"]["annotations"][CRASHED])["failure"] == "max_len_exceeds_kv"
    assert CRASHED not in (revisions[3]["metadata"].get("annotations") or {})
    return revisions[1]


def test_the_previous_revision_seen_dying_is_skipped_and_restore_lands_on_1(rehearsal: Rehearsal,
                                                                             tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    good = two_bad_revisions(rehearsal, inv)
    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, STS_HOST)
    assert (f"roll back statefulset llm/llama-sts from revision 3 to revision 1 ({good['metadata']['name']}) — "
            "chosen by rule: newest earlier revision with no evidence against it") in lines, lines
    [two] = [line for line in lines if line.startswith("skipped revision 2 ")]
    assert "seen crash-looping (max_len_exceeds_kv) at " in two, two
    [three] = [line for line in lines if line.startswith("skipped revision 3 ")]
    assert "the current revision, dying now (1 pod(s) max_len_exceeds_kv)" in three, three
    assert any(line.startswith("record on controllerrevision ") and "(revision 3)" in line for line in lines), lines
    sts = rehearsal.client().request("GET", STS_PATH)
    assert templates_equal(sts["spec"]["template"], revision_template(good))
    assert sts["status"]["readyReplicas"] == 2
    revisions = revision_names(rehearsal)
    assert sorted(revisions) == [2, 3, 4] and revisions[4]["metadata"]["name"] == good["metadata"]["name"]
    assert json.loads(revisions[3]["metadata"]["annotations"][CRASHED])["failure"] == "max_len_exceeds_kv"
    sim = sim_world.Sim(rehearsal.server, rehearsal.clusters, rehearsal.kubeconfig, rehearsal.tmp)
    table = sim.kubectl("32", "-n", "llm", "rollout", "history", "sts/llama-sts", context="rehearsal")
    assert table.returncode == 0, table.stderr
    assert [row.split()[0] for row in table.stdout.splitlines() if row[:1].isdigit()] == ["2", "3", "4"], table.stdout
    four = sim.kubectl("32", "-n", "llm", "rollout", "history", "sts/llama-sts", "--revision=4", "-o", "json",
                       context="rehearsal")
    assert four.returncode == 0, four.stderr
    assert templates_equal(json.loads(four.stdout)["spec"]["template"], revision_template(good))


def test_a_forced_revision_with_evidence_is_refused_unless_overridden(rehearsal: Rehearsal, tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    two_bad_revisions(rehearsal, inv)
    before = rehearsal.client().request("GET", STS_PATH)
    refused = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=2")
    assert refused.returncode == 2, refused.stderr
    [line] = [line for line in host_lines(refused.stderr, STS_HOST) if "host data revision" in line]
    assert line.startswith("host data revision: revision 2 is not restored: seen crash-looping (max_len_exceeds_kv) "
                           "at "), line
    assert line.endswith("to restore it anyway, add --data override=evidence"), line
    missing = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=9")
    assert missing.returncode == 2
    assert any("host data revision: 9 is not in the rollout history of statefulset llm/llama-sts (revisions: 1, 2, "
               "3;" in line for line in host_lines(missing.stderr, STS_HOST)), missing.stderr
    after = rehearsal.client().request("GET", STS_PATH)
    assert after["spec"] == before["spec"] and after["metadata"]["generation"] == before["metadata"]["generation"]
    forced = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", "--data", "override=evidence")
    assert forced.returncode == 0, forced.stderr
    lines = host_lines(forced.stderr, STS_HOST)
    assert any(line.startswith("roll back statefulset llm/llama-sts from revision 3 to revision 2 (") and
               line.endswith("chosen by rule: operator override (host data revision)") for line in lines), lines
    assert any(line.startswith("warning: forced despite the evidence (override=evidence): seen crash-looping")
               for line in lines), lines
