"""deploys/restore.py on an OnDelete StatefulSet whose update revision is a colleague's edit over our timed toggle,
through the real pyinfra CLI (found by a hostile review): nothing crash-loops, so nothing is rolled back — the
toggle on the set's own template is the set's and expires there, so the expired toggle comes off that template
(only the flag) and the colleague's --max-num-seqs stays. Before, the toggle's record on the update revision was
taken as evidence against it, the set was rolled back to the revision before the toggle and their edit was lost."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER, GOOD_ARGS
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.sts_step4 import edit, quiet, rolled_out
from fixtures.sts_step4 import inventory as step4_inventory
from fixtures.sts_world import RESTORE, STS_HOST, llama_set, sts

rehearsal = pyinfra_run.rehearsal
EXPIRES = "vllm-remedy.io/enforce-eager-expires"


def args(obj: dict) -> list[str]:
    return list(obj["spec"]["template"]["spec"]["containers"][0]["args"])


def test_restore_keeps_a_colleagues_edit_over_an_expired_toggle(rehearsal: Rehearsal, tmp_path: Path) -> None:
    llama_set(rehearsal, {"type": "OnDelete"})
    inv = step4_inventory(tmp_path)
    on = rehearsal.pyinfra(inv, EAGER, "-y", "--data", "eager_ttl=30m", timeout=300)
    assert on.returncode == 0, on.stderr
    assert args(rolled_out(rehearsal)) == [*GOOD_ARGS, "--enforce-eager"]
    theirs = [a if a != "64" else "48" for a in GOOD_ARGS]  # the colleague's --max-num-seqs, still pending (OnDelete)

    def colleague(obj: dict) -> None:
        obj["spec"]["template"]["spec"]["containers"][0]["args"] = [*theirs, "--enforce-eager"]
        obj["metadata"]["annotations"][EXPIRES] = "2001-01-01T00:00:00Z"  # and the toggle has expired since
    edit(rehearsal, colleague)
    quiet(rehearsal)
    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    lines = host_lines(got.stderr, STS_HOST)
    assert not any(line.startswith("roll back statefulset") for line in lines), lines
    after = sts(rehearsal)
    assert args(after) == theirs, (args(after), lines)  # only the toggle's flag came off; their edit stands
    assert EXPIRES not in after["metadata"]["annotations"]
