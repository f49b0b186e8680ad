"""--dry exits as -y does on a crash-looping host where the run writes nothing: the operator naming the current (dying)
revision is refused like any revision with evidence against it, and a deploy with nothing to change predicts the failing
wait (hostile review, December 2026)."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, RESTORE, host_out, incident

rehearsal = pyinfra_run.rehearsal


def test_forcing_the_current_crash_looping_revision_on_a_deployment(rehearsal: Rehearsal, tmp_path: Path) -> None:
    incident(rehearsal)  # revision 15 crash-loops
    dry = rehearsal.pyinfra(LOCAL, RESTORE, "--dry", "--data", "revision=15", timeout=300)
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y", "--data", "revision=15", timeout=300)
    for run in (dry, got):
        print("EXIT", run.returncode)
        print("\n".join(host_out(run.stderr)))
    assert dry.returncode == got.returncode, (dry.returncode, got.returncode)


def test_a_deploy_with_nothing_to_do_on_a_crash_looping_host(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """deploys/load_guard.py on the crash-looping incident: its --dry and -y exit alike?"""
    from fixtures.pyinfra_run import ROOT
    incident(rehearsal)
    deploy = str(ROOT / "deploys" / "load_guard.py")
    dry = rehearsal.pyinfra(LOCAL, deploy, "--dry", timeout=300)
    got = rehearsal.pyinfra(LOCAL, deploy, "-y", timeout=300)
    for run in (dry, got):
        print("EXIT", run.returncode)
        print("\n".join(host_out(run.stderr)))
    assert dry.returncode == got.returncode, (dry.returncode, got.returncode)
