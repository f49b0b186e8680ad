"""Hostile review of promise 1 (LWS restore past an unstartable layout), through the real pyinfra CLI.

The layout of a revision is TP x PP against *that revision's* group (size x GPUs per pod). These tests vary
``size`` between revisions, so a restore judging an old revision by the current group's size would pick a
revision that cannot start; and feed hostile ``--data revision=`` values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.lws_remedy import inventory, lines
from fixtures.lws_world import ARGS, BAD_ARGS, GOOD_ARGS, NAME, RESTORE, install_crd, patch, read, serve_set, vllm_lws
from fixtures.pyinfra_run import Rehearsal
from vllm_remedy.kube.lws_wait import wait_for_lws_rollout

rehearsal = pyinfra_run.rehearsal
SIZE = "/spec/leaderWorkerTemplate/size"
# A group too small for its layout on 0.8.5 crash-loops only after Ray's placement-group wait (the first failure at
# 2,550 cluster seconds: vLLM checks its 1800 s limit after each doubling wait, executor/ray_utils.py@0.8.5), so the
# wait for the crash loop allows an hour of cluster time.
CRASH_WAIT = 3600


def _serve(rehearsal: Rehearsal) -> dict:
    return serve_set(rehearsal)


def _roll(rehearsal: Rehearsal, ops: list[dict]) -> None:
    patch(rehearsal, ops)
    got = wait_for_lws_rollout(rehearsal.client(), "llm", NAME, timeout=CRASH_WAIT, clock=rehearsal.cluster.clock,
                               interval=5, fetch_log=False)
    assert got.outcome == "crash-loop", got.message


def _revisions(rehearsal: Rehearsal) -> dict[int, dict]:
    client = rehearsal.client()
    items = client.request("GET", client.object_path("llm", "controllerrevisions"))["items"]
    return {int(r["revision"]): r for r in items}


def test_a_revision_too_wide_for_its_own_group_size_is_not_the_target(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """1: size 2, TP1xPP2 (serves). 2: size 1, same args (world 2 > 1 GPU: cannot start). 3: size 2 again with the
    runbook's bad max-model-len. Judged by its own size, 2 cannot start: restore must land on 1, not 2."""
    good = _serve(rehearsal)
    _roll(rehearsal, [{"op": "replace", "path": SIZE, "value": 1}])
    _roll(rehearsal, [{"op": "replace", "path": SIZE, "value": 2}, {"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    revs = _revisions(rehearsal)
    print({n: r["data"] for n, r in revs.items()})
    inv = inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", timeout=300)
    print(dry.stderr)
    said = lines(dry)
    target = [line for line in said if line.startswith(f"roll back leaderworkerset llm/{NAME} from revision 3")]
    assert target and "to revision 1 (" in target[0], "\n".join(said)
    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    print(got.stderr)
    assert got.returncode == 0, got.stderr
    assert read(rehearsal)["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]


def test_hostile_revision_values_are_one_line_exit_2_nothing_changed(rehearsal: Rehearsal, tmp_path: Path) -> None:
    _serve(rehearsal)
    _roll(rehearsal, [{"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    inv = inventory(tmp_path)
    before = read(rehearsal)
    bad = {}
    for value in ("abc", "0", "-1", "99", "99999999999999999999999", "1.5", "", "0x1", "1e3"):
        for flag in ("--dry", "-y"):
            got = rehearsal.pyinfra(inv, RESTORE, flag, "--data", f"revision={value}", timeout=300)
            said = [line for line in lines(got) if line and line != "Connected"]
            other = [line for line in got.stderr.splitlines() if line.strip()]
            if got.returncode != 2 or len(said) > 1 or read(rehearsal)["spec"] != before["spec"]:
                bad[(value, flag)] = (got.returncode, said, other[-6:])
    assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())


def test_every_revision_too_wide_refuses_in_one_line(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """1 serves at size 2; 2 size 1 (too wide); 3 size 1 + bad max-len (too wide too). Current is 3. Only 1 can start:
    restore lands on 1. Then --data revision=2 (too wide at its own size) is refused."""
    good = _serve(rehearsal)
    _roll(rehearsal, [{"op": "replace", "path": SIZE, "value": 1}])
    inv = inventory(tmp_path)
    forced = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=1", timeout=300)
    print(forced.stderr)
    # revision 2 is current; --data revision=2 would be "already"; force the wide one after a further wide revision
    _roll(rehearsal, [{"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, RESTORE, flag, "--data", "revision=2", timeout=300)
        said = [line for line in lines(got) if line and line != "Connected"]
        assert got.returncode == 2 and len(said) == 1 and "revision 2" in said[0], (flag, got.stderr)
    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    print(got.stderr)
    assert got.returncode == 0, got.stderr
    assert read(rehearsal)["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]


def test_override_evidence_on_a_layout_vllm_always_refuses(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """vLLM refuses a world size above the group's GPUs deterministically: naming such a revision is refused as input
    (one line, exit 2) with or without override=evidence, which no longer offers itself as the way out."""
    _serve(rehearsal)
    _roll(rehearsal, [{"op": "replace", "path": SIZE, "value": 1}])
    _roll(rehearsal, [{"op": "replace", "path": SIZE, "value": 2}, {"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    inv = inventory(tmp_path)
    before = read(rehearsal)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", "--data", "override=evidence", timeout=300)
    print(dry.stderr)
    assert dry.returncode == 2, dry.stderr
    got = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=2", "--data", "override=evidence", timeout=300)
    assert got.returncode == 2, got.stderr
    assert "revision 2 is not restored: it cannot start" in got.stderr and "override" not in got.stderr, got.stderr
    print(got.stderr)
    after = read(rehearsal)
    assert after["spec"]["leaderWorkerTemplate"]["size"] == before["spec"]["leaderWorkerTemplate"]["size"], (
        "override wrote revision 2's size-1 group with world size 2", got.returncode)


def test_no_revision_ever_could_start_refuses_in_one_line(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """Every revision too wide: 1 is size 1 with TP1xPP2 (never served), 2 adds the bad max-model-len. One refusal
    line, exit 1, --dry and -y alike, nothing written."""
    install_crd(rehearsal.clusters["rehearsal"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=vllm_lws(NAME, size=1))
    got = wait_for_lws_rollout(client, "llm", NAME, timeout=CRASH_WAIT, clock=rehearsal.cluster.clock, interval=5,
                               fetch_log=False)
    assert got.outcome == "crash-loop", got.message
    _roll(rehearsal, [{"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    inv = inventory(tmp_path)
    before = read(rehearsal)
    outs = {}
    for flag in ("--dry", "-y"):
        run = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
        print(run.stderr)
        said = lines(run)
        refusals = [line for line in said if line.removeprefix("refused: ").startswith("revision 2 crash-loops")]
        outs[flag] = (run.returncode, refusals)
        assert read(rehearsal)["spec"] == before["spec"], flag
    assert outs["--dry"][0] == outs["-y"][0] == 1, outs
    assert all(len(r) == 1 for _, r in outs.values()), outs


def test_a_rollback_that_changes_the_group_size_is_shown_as_made(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """1: size 2 TP1xPP2 (serves). 2: size 1, PP 1, max-model-len 131072 (one 48 GB card for a 32B model: cannot
    start). Restore 2 -> 1 changes size AND args: --dry's diff applied to the leaderWorkerTemplate gives -y's."""
    from fixtures.lws_remedy import dry_then_apply
    good = _serve(rehearsal)
    one = [*BAD_ARGS[:8], "1", *BAD_ARGS[9:]]
    _roll(rehearsal, [{"op": "replace", "path": SIZE, "value": 1}, {"op": "replace", "path": ARGS, "value": one}])
    inv = inventory(tmp_path)
    dry, got = dry_then_apply(rehearsal, inv, RESTORE, expect_diffs=1)
    print(dry.stderr)
    assert got.returncode == 0, got.stderr
    assert read(rehearsal)["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]


def test_forcing_the_current_crash_looping_revision_dry_and_y_agree(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """--data revision=2 names the LWS revision crash-looping now, before any crash record: --dry and -y exit alike."""
    from fixtures.lws_world import start_set
    start_set(rehearsal)
    inv = inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", timeout=300)
    got = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", "revision=2", timeout=300)
    again = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=2", timeout=300)
    for run in (dry, got, again):
        print("EXIT", run.returncode)
        print("\n".join(lines(run)))
    assert dry.returncode == got.returncode, (dry.returncode, got.returncode)


WIDE_SPELLINGS = {
    "equals": ["--tensor-parallel-size=2"],
    "short": ["-tp", "2"],
    "pp-equals": ["--pipeline-parallel-size=4"],
}


@pytest.mark.parametrize("spelling", list(WIDE_SPELLINGS))
def test_a_too_wide_revision_spelled_otherwise_is_still_skipped(rehearsal: Rehearsal, tmp_path: Path,
                                                               spelling: str) -> None:
    """Revision 2 widens the engine with vLLM's other spellings (``--tensor-parallel-size=2``, ``-tp 2``,
    ``--pipeline-parallel-size=4``): world size 4 > 2 GPUs. Restore from the bad revision 3 must skip 2, land on 1."""
    _serve(rehearsal)
    base = list(GOOD_ARGS)
    i = base.index("--pipeline-parallel-size") if spelling == "pp-equals" else base.index("--tensor-parallel-size")
    wide = base[:i] + WIDE_SPELLINGS[spelling] + base[i + 2:]
    patch(rehearsal, [{"op": "replace", "path": ARGS, "value": wide}])
    import time
    time.sleep(1.0)
    _roll(rehearsal, [{"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    inv = inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", timeout=300)
    said = lines(dry)
    print("\n".join(said))
    target = [line for line in said if line.startswith(f"roll back leaderworkerset llm/{NAME} from revision 3")]
    assert target and "to revision 1 (" in target[0], "\n".join(said)


CMD = "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/command"


@pytest.mark.parametrize("shape", ["sh-c", "env-wrapper", "tini"])
def test_a_too_wide_revision_inside_a_launch_script_is_still_skipped(rehearsal: Rehearsal, tmp_path: Path,
                                                                    shape: str) -> None:
    """Revision 2 launches vLLM with TP 2 x PP 2 (4 GPUs > 2) through a launch form README says is understood
    (``sh -c`` script, ``env`` wrapper, tini). Restore from the bad revision 3 must skip 2 and land on 1."""
    good = _serve(rehearsal)
    wide = [*GOOD_ARGS[:6], "2", *GOOD_ARGS[7:]]
    if shape == "sh-c":
        ops = [{"op": "replace", "path": CMD, "value": ["sh", "-c", "exec vllm serve " + " ".join(wide)]},
               {"op": "replace", "path": ARGS, "value": []}]
    elif shape == "env-wrapper":
        ops = [{"op": "replace", "path": CMD, "value": ["env", "VLLM_LOGGING_LEVEL=INFO", "vllm", "serve"]},
               {"op": "replace", "path": ARGS, "value": wide}]
    else:
        ops = [{"op": "replace", "path": CMD, "value": ["tini", "--", "vllm", "serve"]},
               {"op": "replace", "path": ARGS, "value": wide}]
    patch(rehearsal, ops)
    import time
    time.sleep(1.0)
    _roll(rehearsal, [{"op": "replace", "path": CMD, "value": ["vllm", "serve"]},
                      {"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    inv = inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", timeout=300)
    said = lines(dry)
    print("\n".join(line for line in said if "revision" in line))
    target = [line for line in said if line.startswith(f"roll back leaderworkerset llm/{NAME} from revision 3")]
    assert target and "to revision 1 (" in target[0], "\n".join(said)
    skipped2 = [line for line in said if line.startswith("skipped revision 2 (")]
    assert skipped2 and "world size 4" in skipped2[0], skipped2
    assert good
