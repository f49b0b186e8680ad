"""LWS budget with an expired eager toggle due (the revert is folded into the
budget's change), through the real pyinfra CLI: the budget with nothing of its own to change, the budget refusing,
and a colleague's edit at the prompt."""

from __future__ import annotations

import time
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.lws_remedy import BUDGET, EAGER, EXPIRES, colleague_edits_at_the_prompt, inventory, lines, lwt, serve
from fixtures.lws_remedy import rolled_out as lws_rolled_out
from fixtures.lws_world import GOOD_ARGS, read
from fixtures.pyinfra_run import Rehearsal
from vllm_remedy.kube.annotations import parse_rfc3339

rehearsal = pyinfra_run.rehearsal
PINNED = "gpu:\n  products: [NVIDIA-L40S]\n"


def _leader_args(obj: dict) -> list[str]:
    return lwt(obj)["leaderTemplate"]["spec"]["containers"][0]["args"]


def _expired_toggle(rehearsal: Rehearsal, tmp_path: Path) -> None:
    serve(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path, PINNED), EAGER, "-y", "--data", "eager_ttl=1m", timeout=300)
    assert got.returncode == 0, got.stderr
    lws_rolled_out(rehearsal)
    client = rehearsal.client()
    while client.server_time() < parse_rfc3339(read(rehearsal)["metadata"]["annotations"][EXPIRES]):
        time.sleep(0.05)
    assert _leader_args(read(rehearsal)) == [*GOOD_ARGS, "--enforce-eager"]


def test_budget_with_nothing_to_change_still_reverts_the_expired_toggle_once(rehearsal: Rehearsal,
                                                                            tmp_path: Path) -> None:
    _expired_toggle(rehearsal, tmp_path)
    inv = inventory(tmp_path, PINNED, name="p2")
    before = read(rehearsal)
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry", timeout=300)
    print("\n".join(lines(dry)))
    assert read(rehearsal)["spec"] == before["spec"]
    got = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    print("\n".join(lines(got)))
    assert dry.returncode == got.returncode == 0, (dry.returncode, got.returncode)
    writes = [line for line in lines(got) if ": written (resourceVersion " in line]
    assert len(writes) == 1, writes
    after = read(rehearsal)
    assert "--enforce-eager" not in _leader_args(after) and EXPIRES not in after["metadata"]["annotations"], after


def test_budget_refusing_with_an_expired_toggle_dry_and_y_agree(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """A policy under which no rung fits: the budget refuses. --dry and -y must exit alike and change the same."""
    _expired_toggle(rehearsal, tmp_path)
    inv = inventory(tmp_path, PINNED + "flags:\n  max-model-len: {min: 131072}\n", name="tight")
    before = read(rehearsal)
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry", timeout=300)
    print("\n".join(lines(dry)))
    mid = read(rehearsal)
    assert mid["spec"] == before["spec"]
    got = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    print("\n".join(lines(got)))
    after = read(rehearsal)
    dry_writes = [line for line in lines(dry) if line.startswith(("revert expired toggles", "budget "))]
    y_writes = [line for line in lines(got) if ": written (resourceVersion " in line]
    assert dry.returncode == got.returncode, (dry.returncode, got.returncode)
    assert (after["spec"] == before["spec"]) == (not y_writes), y_writes
    print(dry_writes, y_writes)
    claims = [line for line in lines(got) if line.endswith("nothing was changed")]
    assert not (y_writes and claims), f"the run wrote {y_writes} yet says {claims}"


def test_a_colleagues_edit_at_the_budget_prompt_is_kept(rehearsal: Rehearsal, tmp_path: Path) -> None:
    _expired_toggle(rehearsal, tmp_path)
    inv = inventory(tmp_path, PINNED, name="p3")
    got, edited = colleague_edits_at_the_prompt(rehearsal, inv, BUDGET)
    print("\n".join(lines(got)))
    after = read(rehearsal)
    assert after["metadata"]["annotations"].get("oncall.example.com/owner") == "someone-else"
    assert after["spec"] == edited["spec"]
    assert got.returncode != 0
