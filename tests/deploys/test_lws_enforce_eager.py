"""deploys/enforce_eager.py on a multi-node vLLM LeaderWorkerSet, through the real pyinfra CLI on the rehearsal
cluster: the timed toggle recorded on the set (expiry, the leader's exact prior argv), on in one guarded write of
leaderWorkerTemplate exactly as --dry showed, never extended; past its expiry any later LWS deploy reverts it; a
colleague's edit at the prompt is refused; a toggle predicted not to help, or longer than the policy allows, is one
line and no write."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.lws_remedy import (
    EAGER,
    EXPIRES,
    LOAD_GUARD,
    PRIOR,
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
from vllm_remedy.kube.annotations import parse_rfc3339

rehearsal = pyinfra_run.rehearsal
WHERE = f"leaderworkerset llm/{NAME}"
PRIOR_JSON = json.dumps({"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm-leader"}, sort_keys=True,
                        separators=(",", ":"))


def _args(obj: dict, key: str = "leaderTemplate") -> list[str]:
    return lwt(obj)[key]["spec"]["containers"][0]["args"]


def test_the_toggle_goes_on_as_dry_showed_with_its_record_and_is_never_extended(rehearsal: Rehearsal,
                                                                                tmp_path: Path) -> None:
    good = serve(rehearsal)
    inv = inventory(tmp_path)
    dry, got = dry_then_apply(rehearsal, inv, EAGER, "--data", "eager_ttl=2h", expect_diffs=1)
    assert got.returncode == 0, got.stderr
    assert any(line.startswith(f"turn on --enforce-eager on {WHERE}, leader and workers, for 2h") for line in
               lines(dry)), lines(dry)
    after = rolled_out(rehearsal)
    assert _args(after) == [*GOOD_ARGS, "--enforce-eager"]
    assert lwt(after)["workerTemplate"] == lwt(good)["workerTemplate"]
    notes = after["metadata"]["annotations"]
    assert parse_rfc3339(notes[EXPIRES]) == parse_rfc3339(notes["vllm-remedy.io/last-action-at"]) + 7200
    assert notes[PRIOR] == PRIOR_JSON and notes["vllm-remedy.io/last-action"] == "enforce-eager"

    again = rehearsal.pyinfra(inv, EAGER, "-y", "--data", "eager_ttl=2h", timeout=300)
    assert again.returncode == 0, again.stderr
    assert any(line.startswith(f"noop: --enforce-eager is already on for {WHERE} until ") for line in lines(again))
    assert edits(read(rehearsal)) == edits(after)


def test_an_expired_toggle_is_reverted_by_the_next_run_of_another_deploy(rehearsal: Rehearsal, tmp_path: Path) -> None:
    lws = vllm_lws(NAME)  # workers carrying the engine's flags too: the revert takes the flag off theirs as well
    template = lws["spec"]["leaderWorkerTemplate"]
    worker = copy.deepcopy(template["leaderTemplate"]["spec"]["containers"][0])
    del worker["readinessProbe"]
    template["workerTemplate"]["spec"]["containers"] = [{**worker, "name": "vllm-worker"}]
    serve(rehearsal, lws)
    inv = inventory(tmp_path)
    got = rehearsal.pyinfra(inv, EAGER, "-y", "--data", "eager_ttl=1m", timeout=300)
    assert got.returncode == 0, got.stderr
    on = read(rehearsal)
    assert _args(on) == _args(on, "workerTemplate") == [*GOOD_ARGS, "--enforce-eager"]
    client = rehearsal.client()
    while client.server_time() < parse_rfc3339(on["metadata"]["annotations"][EXPIRES]):
        time.sleep(0.05)  # the rehearsal clock runs 600x: a cluster minute is 0.1 s
    _dry, got = dry_then_apply(rehearsal, inv, LOAD_GUARD, expect_diffs=1)  # step 5's deploy, no cap in the policy
    assert got.returncode == 0, got.stderr
    assert any(line.startswith(f"revert expired toggles on {WHERE}: enforce-eager: restore the exact argv from "
                               "before --enforce-eager") for line in lines(got)), lines(got)
    after = rolled_out(rehearsal)
    assert _args(after) == _args(after, "workerTemplate") == GOOD_ARGS
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes and notes["vllm-remedy.io/last-action"] == "expire"
    again = rehearsal.pyinfra(inv, LOAD_GUARD, "-y", timeout=300)
    assert again.returncode == 0 and "noop: no temporary toggle has expired" in lines(again), again.stderr
    assert edits(read(rehearsal)) == edits(after)


def test_an_edit_at_the_prompt_is_refused_not_overwritten(rehearsal: Rehearsal, tmp_path: Path) -> None:
    serve(rehearsal)
    got, edited = colleague_edits_at_the_prompt(rehearsal, inventory(tmp_path), EAGER)
    assert got.returncode != 0, got.stderr
    failed = [line for line in lines(got) if "changed since it was read (HTTP 422); nothing was written" in line]
    assert len(failed) == 1 and failed[0].startswith(f"turn on --enforce-eager on {WHERE}, leader and workers"), \
        got.stderr
    after = read(rehearsal)
    assert after["spec"] == edited["spec"] and _args(after) == GOOD_ARGS
    assert EXPIRES not in after["metadata"]["annotations"]


def test_a_toggle_predicted_not_to_start_is_refused_and_nothing_changes(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Eager mode frees the CUDA graphs' memory, not the KV cache 131072 tokens need: still predicted to fail."""
    start_set(rehearsal)
    before = read(rehearsal)
    for flag in ("--dry", "-y"):  # a refusal fails the host in both: --dry exits 1 as -y does (CI reads it)
        got = rehearsal.pyinfra(inventory(tmp_path), EAGER, flag, timeout=300)
        assert got.returncode == 1 and "Traceback" not in got.stderr, got.stderr
        refused = [line for line in lines(got) if line.startswith(f"{WHERE}: --enforce-eager on: ")
                   or line.startswith(f"refused: {WHERE}: --enforce-eager on: ")]
        assert len(refused) == 1 and refused[0].endswith("nothing was changed"), got.stderr
    assert edits(read(rehearsal))[:2] == edits(before)[:2] and _args(read(rehearsal)) == BAD_ARGS


def test_a_ttl_above_the_policy_maximum_is_refused(rehearsal: Rehearsal, tmp_path: Path) -> None:
    before = serve(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path), EAGER, "-y", "--data", "eager_ttl=3h", timeout=300)
    assert got.returncode == 1, got.stderr
    said = [line for line in lines(got) if "exceeds the policy's enforce_eager.max_duration 2h" in line]
    assert len(said) == 1 and said[0].startswith(f"refused: {WHERE}: ttl: 3h"), got.stderr
    assert edits(read(rehearsal)) == edits(before)


def test_running_the_eager_deploy_after_expiry_shows_in_dry_what_it_does(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The expired toggle comes off (the argv from before it), then eager mode goes on anew on that argv with a new
    expiry: two writes, --dry planning the second on what the first leaves."""
    serve(rehearsal)
    inv = inventory(tmp_path)
    got = rehearsal.pyinfra(inv, EAGER, "-y", "--data", "eager_ttl=1m", timeout=300)
    assert got.returncode == 0, got.stderr
    expires = read(rehearsal)["metadata"]["annotations"][EXPIRES]
    client = rehearsal.client()
    while client.server_time() < parse_rfc3339(expires):
        time.sleep(0.05)
    dry, got = dry_then_apply(rehearsal, inv, EAGER, "--data", "eager_ttl=30m", expect_diffs=2)
    assert got.returncode == 0, got.stderr
    assert any(line.startswith(f"revert expired toggles on {WHERE}: enforce-eager") for line in lines(dry))
    assert any(line.startswith(f"turn on --enforce-eager on {WHERE}, leader and workers, for 30m")
               for line in lines(got)), lines(got)
    after = rolled_out(rehearsal)
    assert _args(after) == [*GOOD_ARGS, "--enforce-eager"]
    notes = after["metadata"]["annotations"]
    assert parse_rfc3339(notes[EXPIRES]) > parse_rfc3339(expires) and notes[PRIOR] == PRIOR_JSON
