"""deploys/enforce_eager.py on an ``--enforce-eager`` a person set in the template (no toggle record of ours), through
the real pyinfra CLI on the rehearsal cluster, for every kind: a noop naming that, in --dry and -y alike, nothing
written — and no later deploy takes their flag away. Timing it would record a prior argv that never ran and revert
their flag once the made-up expiry passed."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fixtures import lws_remedy, lws_world, pyinfra_run, sts_step4, sts_world
from fixtures.budget_world import EAGER, GOOD_ARGS, LOAD_GUARD, LOCAL, args_of, deployment, rolled_out
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.restore_world import host_out, vllm_runtime

rehearsal = pyinfra_run.rehearsal
EAGER_ARGS = [*GOOD_ARGS, "--enforce-eager"]
OURS = ("vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior", "vllm-remedy.io/last-action")


def past_twenty_minutes(rehearsal: Rehearsal) -> None:
    """Let the cluster clock pass the 20 minutes the run was asked to time (600x: about 2 s)."""
    client = rehearsal.client()
    until = client.server_time() + 21 * 60
    while client.server_time() < until:
        time.sleep(0.05)


def noop_both_ways(rehearsal: Rehearsal, inv: str, said: Callable[[subprocess.CompletedProcess[str]], list[str]],
                   where: str, read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """--dry and -y with a 20m ttl: exit 0, the one noop line naming the person's flag, the object unchanged."""
    before = read()
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, EAGER, flag, "--data", "eager_ttl=20m", timeout=300)
        assert got.returncode == 0, got.stderr
        lines = said(got)
        assert (f"noop: --enforce-eager is already on in {where} and not a toggle of ours: nothing to time"
                in lines), lines
        assert not any(line.startswith("turn on --enforce-eager") for line in lines), lines
        after = read()
        assert (after["spec"], after["metadata"].get("annotations")) == (
            before["spec"], before["metadata"].get("annotations")), flag
    assert not any(k in (before["metadata"].get("annotations") or {}) for k in OURS)
    return before


def test_a_deployment_flag_set_by_a_person_is_not_timed_nor_reverted(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(lambda d: d["spec"]["template"]["spec"]["containers"][0].__setitem__("args", EAGER_ARGS),
                     change_cause="eager on for good (a person)")
    rolled_out(rehearsal)
    noop_both_ways(rehearsal, LOCAL, lambda got: host_out(got.stderr), "deployment llm/llama-8b",
                   lambda: deployment(rehearsal))
    past_twenty_minutes(rehearsal)
    got = rehearsal.pyinfra(LOCAL, LOAD_GUARD, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    assert args_of(deployment(rehearsal)) == EAGER_ARGS


def test_a_statefulset_flag_set_by_a_person_is_not_timed_nor_reverted(rehearsal: Rehearsal, tmp_path: Path) -> None:
    sts_world.llama_set(rehearsal)
    sts_step4.edit(rehearsal, lambda o: o["spec"]["template"]["spec"]["containers"][0].__setitem__("args",
                                                                                               EAGER_ARGS))
    sts_step4.rolled_out(rehearsal)
    sts_step4.quiet(rehearsal)
    inv = sts_step4.inventory(tmp_path)
    noop_both_ways(rehearsal, inv, lambda got: host_lines(got.stderr, sts_world.STS_HOST),
                   "statefulset llm/llama-sts", lambda: sts_world.sts(rehearsal))
    past_twenty_minutes(rehearsal)
    got = rehearsal.pyinfra(inv, LOAD_GUARD, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    assert sts_world.sts(rehearsal)["spec"]["template"]["spec"]["containers"][0]["args"] == EAGER_ARGS


def test_a_leaderworkerset_flag_set_by_a_person_is_not_timed_nor_reverted(rehearsal: Rehearsal,
                                                                          tmp_path: Path) -> None:
    lws = lws_world.vllm_lws(lws_world.NAME)
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"] = [
        *lws_world.GOOD_ARGS, "--enforce-eager"]
    lws_remedy.serve(rehearsal, lws)
    inv = lws_remedy.inventory(tmp_path)
    noop_both_ways(rehearsal, inv, lws_remedy.lines, f"leaderworkerset llm/{lws_world.NAME}",
                   lambda: lws_world.read(rehearsal))
    past_twenty_minutes(rehearsal)
    got = rehearsal.pyinfra(inv, lws_remedy.LOAD_GUARD, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    leader = lws_remedy.lwt(lws_world.read(rehearsal))["leaderTemplate"]["spec"]["containers"][0]["args"]
    assert leader == [*lws_world.GOOD_ARGS, "--enforce-eager"]
