"""deploys/load_guard.py on a multi-node vLLM LeaderWorkerSet, through the real pyinfra CLI on the rehearsal cluster:
the policy's load caps, only ever lowered, written into the leader's (and a vLLM-running worker's) command line in
one guarded write exactly as --dry showed; a rerun does nothing; a colleague's edit at the prompt is refused. A cap
on a group predicted not to start is one line and no write; a cap never raises a value. (A cap outside the
policy's flag bounds never reaches the deploy: the policy is refused when it loads.)"""

from __future__ import annotations

import copy
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.lws_remedy import (
    LOAD_GUARD,
    colleague_edits_at_the_prompt,
    dry_then_apply,
    edits,
    inventory,
    lines,
    lwt,
    rolled_out,
    serve,
)
from fixtures.lws_world import BAD_ARGS, GOOD_ARGS, NAME, read, start_set, vllm_lws
from fixtures.pyinfra_run import Rehearsal

rehearsal = pyinfra_run.rehearsal
WHERE = f"leaderworkerset llm/{NAME}"
CAPS = "load_shedding:\n  max_num_batched_tokens: 1024\n  max_loras: 2\n"


def _args(obj: dict, key: str = "leaderTemplate") -> list[str]:
    return lwt(obj)[key]["spec"]["containers"][0]["args"]


def test_the_caps_are_written_to_leader_and_workers_as_dry_showed_and_a_rerun_does_nothing(rehearsal: Rehearsal,
                                                                                           tmp_path: Path) -> None:
    lws = vllm_lws(NAME)
    template = lws["spec"]["leaderWorkerTemplate"]
    worker = copy.deepcopy(template["leaderTemplate"]["spec"]["containers"][0])
    del worker["readinessProbe"]
    template["workerTemplate"]["spec"]["containers"] = [{**worker, "name": "vllm-worker"}]
    serve(rehearsal, lws)
    inv = inventory(tmp_path, CAPS)
    dry, got = dry_then_apply(rehearsal, inv, LOAD_GUARD, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    shown = lines(dry)
    assert f"cap load on {WHERE}, leader and workers: --max-num-batched-tokens 1024" in shown, shown
    assert any(line.startswith(f"cap load on {WHERE}: ") and "--max-loras" in line for line in shown), shown
    after = rolled_out(rehearsal)
    assert _args(after) == _args(after, "workerTemplate") == [*GOOD_ARGS, "--max-num-batched-tokens", "1024"]
    assert after["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "load-guard"

    again = rehearsal.pyinfra(inv, LOAD_GUARD, "-y", timeout=300)
    assert again.returncode == 0, again.stderr
    assert any(line.startswith(f"noop: no cap to lower on {WHERE}: ") for line in lines(again)), again.stderr
    assert edits(read(rehearsal)) == edits(after)


def test_an_edit_at_the_prompt_is_refused_not_overwritten(rehearsal: Rehearsal, tmp_path: Path) -> None:
    serve(rehearsal)
    got, edited = colleague_edits_at_the_prompt(rehearsal, inventory(tmp_path, CAPS), LOAD_GUARD)
    assert got.returncode != 0, got.stderr
    failed = [line for line in lines(got) if "changed since it was read (HTTP 422); nothing was written" in line]
    assert len(failed) == 1 and failed[0].startswith(f"cap load on {WHERE}, leader and workers: "), got.stderr
    after = read(rehearsal)
    assert after["spec"] == edited["spec"] and _args(after) == GOOD_ARGS


def test_a_cap_is_only_ever_lowered(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The group already runs a smaller prefill chunk than the policy's cap: nothing is raised, nothing written."""
    before = serve(rehearsal, vllm_lws(NAME, args=[*GOOD_ARGS, "--max-num-batched-tokens", "512"]))
    got = rehearsal.pyinfra(inventory(tmp_path, CAPS), LOAD_GUARD, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    said = [line for line in lines(got) if line.startswith(f"noop: no cap to lower on {WHERE}: ")]
    assert len(said) == 1 and "--max-num-batched-tokens" in said[0], got.stderr
    assert edits(read(rehearsal)) == edits(before)


def test_caps_on_a_group_predicted_not_to_start_are_refused_and_nothing_changes(rehearsal: Rehearsal,
                                                                                tmp_path: Path) -> None:
    start_set(rehearsal)  # max-model-len 131072: no prefill cap makes its KV cache fit
    before = read(rehearsal)
    for flag in ("--dry", "-y"):  # a refusal fails the host in both: --dry exits 1 as -y does (CI reads it)
        got = rehearsal.pyinfra(inventory(tmp_path, CAPS), LOAD_GUARD, flag, timeout=300)
        assert got.returncode == 1 and "Traceback" not in got.stderr, got.stderr
        refused = [line for line in lines(got) if f"{WHERE}: cap load --max-num-batched-tokens 1024: " in line]
        assert len(refused) == 1 and refused[0].endswith("nothing was changed"), got.stderr
    assert edits(read(rehearsal))[:2] == edits(before)[:2] and _args(read(rehearsal)) == BAD_ARGS


def test_on_a_crash_looping_set_with_nothing_to_lower_dry_fails_as_y_does(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The bad rollout crash-loops and the policy caps nothing: the run writes nothing, and the wait -y reaches fails
    fast on the crash loop. --dry says so with the wait's label and exits 1 as -y does; the set is not changed."""
    start_set(rehearsal)
    inv = inventory(tmp_path)
    before = read(rehearsal)
    dry = rehearsal.pyinfra(inv, LOAD_GUARD, "--dry", timeout=300)
    got = rehearsal.pyinfra(inv, LOAD_GUARD, "-y", timeout=300)
    assert (dry.returncode, got.returncode) == (1, 1), (dry.stderr, got.stderr)
    assert any(line.startswith(f"wait for {WHERE} to roll out: will fail: ") for line in lines(dry)), lines(dry)
    assert lwt(read(rehearsal)) == lwt(before)
