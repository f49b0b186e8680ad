"""Hostile inputs to deploys/restore.py on a StatefulSet: one line naming the key, exit 2, nothing changed."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_world import RESTORE, STS_HOST, bad_rollout, inventory, pod_uids, sts

rehearsal = pyinfra_run.rehearsal


def test_hostile_revision_and_override_values(rehearsal: Rehearsal, tmp_path: Path) -> None:
    bad_rollout(rehearsal)
    inv = inventory(tmp_path, "never")
    before, pods = sts(rehearsal)["spec"], pod_uids(rehearsal)
    bad = {}
    cases = [("revision=abc",), ("revision=0",), ("revision=-1",), ("revision=99",), ("revision=" + "9" * 30,),
             ("revision=2.0",), ("revision=",), ("revision=2",), ("override=evidence",), ("override=yes",),
             ("revision=1", "override=everything"), ("revision=[1]",), ("revision=true",)]
    # the values are checked before any operation is planned, the same code under --dry and -y: every value under
    # --dry, three of them under -y as well (the suite's time: each run is a pyinfra process)
    for case in cases:
        data = [x for kv in case for x in ("--data", kv)]
        for flag in ("--dry", "-y") if case in (("revision=abc",), ("revision=99",), ("revision=2",)) else ("--dry",):
            got = rehearsal.pyinfra(inv, RESTORE, flag, *data, timeout=300)
            said = [line for line in host_lines(got.stderr, STS_HOST) if line and line != "Connected"]
            if got.returncode != 2 or len(said) != 1 or sts(rehearsal)["spec"] != before or pod_uids(rehearsal) != pods:
                bad[(case, flag)] = (got.returncode, said[:4], got.stderr.splitlines()[-3:])
    assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())


def test_forcing_the_current_crash_looping_revision_dry_and_y_agree(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """--data revision=2 names the revision crash-looping right now (no crash record yet: first run after the
    incident). --dry and -y must exit alike; the one-line refusal '--data revision=2 ... seen crash-looping' is what
    a second run prints."""
    bad_rollout(rehearsal)
    inv = inventory(tmp_path, "never")
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", timeout=300)
    got = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=2", timeout=300)
    again = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", timeout=300)
    for run in (dry, got, again):
        print("EXIT", run.returncode)
        print("\n".join(host_lines(run.stderr, STS_HOST)), run.stderr.splitlines()[-2:])
    assert dry.returncode == got.returncode, (dry.returncode, got.returncode)


def test_bad_delete_pods_policy_values_are_one_line_naming_file_and_key(rehearsal: Rehearsal, tmp_path: Path) -> None:
    bad_rollout(rehearsal)
    before, pods = sts(rehearsal)["spec"], pod_uids(rehearsal)
    bad = {}
    for value in ("sometimes", "true", "yes", "''", "[blocking]", "Blocking", "null"):
        sub = tmp_path / f"v{abs(hash(value))}"
        sub.mkdir()
        inv = inventory(sub, value)
        for flag in ("--dry", "-y") if value in ("sometimes", "[blocking]") else ("--dry",):  # as above
            got = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
            said = [line for line in host_lines(got.stderr, STS_HOST) if line and line != "Connected"]
            ok = (got.returncode == 1 and len(said) == 1 and "delete_pods" in said[0] and "policy.yaml" in said[0])
            if not ok or sts(rehearsal)["spec"] != before or pod_uids(rehearsal) != pods:
                bad[(value, flag)] = (got.returncode, said[:3])
    assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())
