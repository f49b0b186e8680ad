"""``--data revision=null`` (and ``true``, ``[]``) is bad input, not "no revision" (hostile review 2026-12-05).

pyinfra reads --data values through int() and then json.loads(), so ``revision=null`` reached the deploy as None and
the run went on as if no revision had been typed: restore planned the automatic rollback, exit 0, a write the
operator did not ask for. A revision key on the command line whose text is not a plain positive integer is one line
naming the key, exit 2, nothing changed, in --dry and -y alike. Through the real pyinfra CLI on the rehearsal cluster.
"""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import RESTORE, deployment, host_out, incident, no_pins, settled

rehearsal = pyinfra_run.rehearsal


def test_a_json_revision_value_is_refused_as_typed(rehearsal: Rehearsal, tmp_path: Path) -> None:
    incident(rehearsal)  # revisions 12-15, 15 crash-looping: the automatic choice would roll back
    before = settled(rehearsal)
    inv = no_pins(tmp_path)
    for value, flag in (("null", "--dry"), ("null", "-y"), ("true", "--dry"), ("[]", "-y")):
        got = rehearsal.pyinfra(inv, RESTORE, flag, "--data", f"revision={value}")
        said = [line for line in host_out(got.stderr) if line]
        assert (got.returncode, said[-1:]) == (
            2, [f"host data revision: {value!r} is not a revision number (a whole number >= 1)"]), got.stderr[-3000:]
        assert "Traceback" not in got.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
