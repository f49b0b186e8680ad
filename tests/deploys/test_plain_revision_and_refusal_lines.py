"""Bad input and refusals read the same in --dry and -y, through the real pyinfra CLI on the rehearsal cluster.

``--data revision=+14`` was revision 14 (pyinfra reads values through ``int()``, which takes a sign, a leading zero
or a digit separator): a restore an operator did not type. Any revision that is not a plain positive integer is now
one line naming the key, exit 2, nothing changed. And an operation's refusal was ``refused: …`` in --dry but the
bare reason with -y: a grep for refusals in a CronJob's log (or the responder's) missed every -y one."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, RESTORE, deployment, host_out, incident, no_pins, quiet, settled, vllm_runtime

rehearsal = pyinfra_run.rehearsal


def test_a_revision_that_is_not_a_plain_positive_integer_is_one_line_exit_2(rehearsal: Rehearsal,
                                                                           tmp_path: Path) -> None:
    """pyinfra reads --data values with int() and json.loads, so +14, 014 and 1_4 arrive as 14 and null as None: the
    text as typed is what is checked, under --dry and -y alike."""
    incident(rehearsal)  # revisions 12-15, 15 crash-looping: 14 is a target restore would take
    before = settled(rehearsal)
    inv = no_pins(tmp_path)
    for value, flag in (("+14", "--dry"), ("+14", "-y"), ("014", "--dry"), ("1_4", "--dry"),
                        ("null", "--dry"), ("null", "-y"), ("true", "--dry"), ("[]", "-y")):
        got = rehearsal.pyinfra(inv, RESTORE, flag, "--data", f"revision={value}")
        said = [line for line in host_out(got.stderr) if line]
        assert (got.returncode, said[-1:]) == (
            2, [f"host data revision: {value!r} is not a revision number (a whole number >= 1)"]), got.stderr
        assert "Traceback" not in got.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_refusal_is_the_same_line_in_dry_and_y(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    before = quiet(rehearsal)
    policy = str(pyinfra_run.ROOT / "policies" / "llama-8b.yaml")
    said = {}
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(LOCAL, EAGER, flag, "--data", "eager_ttl=3h")
        assert got.returncode == 1, got.stderr  # --dry exits 1 as -y does
        said[flag] = [line for line in host_out(got.stderr) if "exceeds the policy's" in line]
    line = f"refused: deployment llm/llama-8b: ttl: 3h exceeds the policy's enforce_eager.max_duration 2h ({policy})"
    assert said["--dry"] == said["-y"] == [line], said
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
