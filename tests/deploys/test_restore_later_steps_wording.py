"""After a planned rollback, the run's later steps name the revision restored, and --dry says the wait will come
(hostile 15b F14, first bullet).

They decide on the state the rollback leaves, while the facts still number the crash-looping revision as current:
"revision 15: no pod is crash-looping" right under "revision 15 crash-loops" read as a contradiction, and --dry said
"is rolled out" of the wait ``-y`` then runs for two minutes.
"""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, RESTORE, host_out, incident, newest_revision

rehearsal = pyinfra_run.rehearsal


def test_later_steps_name_the_revision_restored_and_dry_says_the_wait_will_come(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    bad = newest_revision(rehearsal)
    dry, run = dry_then_apply(rehearsal, LOCAL, RESTORE, expect_diffs=1)
    assert run.returncode == 0, run.stderr
    will = f"will wait for revision {bad - 1} to roll out (up to 15m of cluster time, failing fast if it crash-loops)"
    for got in (dry, run):
        lines = host_out(got.stderr)
        assert will in lines, got.stderr
        assert f"noop: no load to shed: after the rollback to revision {bad - 1}: no pod is crash-looping" in lines
        assert f"noop: no budget hand-over: after the rollback to revision {bad - 1}: no pod is crash-looping" in lines
        assert not [line for line in lines if line.endswith(": no pod is crash-looping") and "after the" not in line]
    dry_lines = host_out(dry.stderr)
    assert "noop: deployment llm/llama-8b is rolled out" not in dry_lines, dry.stderr
    assert (f"noop: deployment llm/llama-8b: will wait for revision {bad - 1} to roll out (the rollback's wait, "
            "above)") in dry_lines, dry.stderr
    # -y ran that wait before the last step looked: there it is rolled out
    assert "noop: deployment llm/llama-8b is rolled out" in host_out(run.stderr), run.stderr
