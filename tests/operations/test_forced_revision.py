"""Host data ``revision`` as typed (pure): pyinfra's ``int()`` reads ``+14``, ``014`` and ``1_4`` as 14, so the
check reads the command line's text, and only a plain positive integer is a revision."""

from __future__ import annotations

import pytest

from vllm_remedy.operations.forced_revision import revision_problem, typed


def test_the_last_data_value_of_the_key_is_read_as_typed() -> None:
    argv = ["pyinfra", "inv.py", "restore.py", "--data", "revision=14", "--data=override=evidence",
            "--data", "revision=+14", "--data", "revisions=3"]
    assert typed("revision", argv) == "+14"  # the last one wins, as in pyinfra; "revisions" is another key
    assert typed("override", argv) == "evidence"
    assert typed("revision", ["pyinfra", "inv.py", "restore.py", "-y"]) is None  # from the inventory, if anywhere


@pytest.mark.parametrize("text", ["+14", "014", "1_4", " 14", "14 ", "0", "-1", "", "١٤", "1.0", "True"])
def test_only_a_plain_positive_integer_is_a_revision(text: str) -> None:
    said = f"host data revision: {text!r} is not a revision number (a whole number >= 1)"
    assert revision_problem(text, None) == said


def test_a_plain_revision_passes_and_override_needs_one() -> None:
    assert revision_problem("14", None) is None and revision_problem("14", "evidence") is None
    assert revision_problem(None, "evidence") == "host data override: only applies with --data revision=N"
    assert revision_problem("14", "yes") is not None
