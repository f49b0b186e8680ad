"""Game days on other workload kinds than a Deployment: the scenario names the kind, the fault lands in that
kind's template, the game reads readiness from its status and runs restore.py on its ``<kind>/<name>`` host.

The shipped kinds scenarios passing (and what each kind's run must show) are checked on the one run
test_runner.py's end-to-end test makes of each; here: the broken playbook per kind, and bad scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.pyinfra_run import ROOT
from vllm_remedy.errors import UserError
from vllm_remedy.gameday.scenario import load_scenario

SHIPPED = ROOT / "gameday"
STS = SHIPPED / "11-statefulset-bad-rollout.yaml"
ISVC = SHIPPED / "12-inferenceservice-bad-rollout.yaml"
LWS = SHIPPED / "13-leaderworkerset-bad-rollout.yaml"
#: The broken-playbook games wait out the scenario's whole hour for a restore that never comes: at the demo's 600x
#: that is 6 s of wall time, not 12. The 300x of the passing runs keeps a loaded box's lost wall seconds from
#: eating their time-to-restore limit; here there is no restore to time and the one deploy does nothing, so no
#: real-time guard runs: the cluster's clock alone paces the crash loops, the restore and what is asserted.
NOOP_SPEED = "600"


def _variant(tmp: Path, src: Path = STS, **changes: object) -> Path:
    """A shipped scenario with top-level keys replaced; paths re-anchored on the shipped folder."""
    data = yaml.safe_load(src.read_text())
    data["policy"] = str((SHIPPED / data["policy"]).resolve())
    data["deploys"] = [str((SHIPPED / d).resolve()) for d in data["deploys"]]
    data.update(changes)
    out = tmp / f"{src.stem}-variant.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def test_statefulset_game_day_fails_when_the_playbook_does_not_restore(cli, tmp_path: Path):
    noop = tmp_path / "noop.py"
    noop.write_text('"""A deploy that does nothing (the broken playbook)."""\n')
    got = cli("gameday", "run", str(_variant(tmp_path, deploys=[str(noop)])), "--speed", NOOP_SPEED,
              "--report-dir", str(tmp_path / "r"), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 1
    checks = {c["name"]: c for c in body["checks"]}
    assert body["verdict"].startswith("FAIL: service restored: no rollout of a new template became Ready")
    assert checks["ready replicas"]["detail"] == "1 Ready, expected 2"  # llama-sts-1 crash-loops on an L4
    assert not checks["final flags"]["ok"] and not checks["final state matches policy"]["ok"]
    # the game's own restore still brings the set back: it deletes the pod OrderedReady would wait on forever
    assert checks["pre-game state restored"]["ok"], checks["pre-game state restored"]


def test_statefulset_scenario_refuses_a_step_for_another_kind(tmp_path: Path):
    data = yaml.safe_load(STS.read_text())
    data["fault"][0]["deployment"] = data["fault"][0].pop("statefulset")
    path = _variant(tmp_path, fault=data["fault"])
    with pytest.raises(UserError, match=r"fault\[0\]\.deployment: the target is a statefulset: write statefulset:"):
        load_scenario(path)


def test_statefulset_scenario_names_the_kinds_a_game_day_supports(tmp_path: Path):
    path = _variant(tmp_path, target={"namespace": "llm", "kind": "daemonset", "name": "x"})
    with pytest.raises(UserError, match=r"target\.kind: kind 'daemonset': game days support deployment, statefulset"):
        load_scenario(path)


def test_inferenceservice_game_day_fails_when_the_playbook_does_not_restore(cli, tmp_path: Path):
    noop = tmp_path / "noop.py"
    noop.write_text('"""A deploy that does nothing (the broken playbook)."""\n')
    got = cli("gameday", "run", str(_variant(tmp_path, ISVC, deploys=[str(noop)])), "--speed", NOOP_SPEED,
              "--report-dir", str(tmp_path / "r"), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 1
    checks = {c["name"]: c for c in body["checks"]}
    assert body["verdict"].startswith("FAIL: service restored: no rollout of a new template became Ready")
    assert checks["final flags"]["detail"] == "--max-model-len=131072 (expected 16384)"
    assert checks["pre-game state restored"]["ok"], checks["pre-game state restored"]


def test_leaderworkerset_game_day_fails_when_the_playbook_does_not_restore(cli, tmp_path: Path):
    noop = tmp_path / "noop.py"
    noop.write_text('"""A deploy that does nothing (the broken playbook)."""\n')
    data = yaml.safe_load(LWS.read_text())
    seed = str((SHIPPED / data["world"]["seed"]).resolve())
    got = cli("gameday", "run", str(_variant(tmp_path, LWS, deploys=[str(noop)], world={"seed": seed})),
              "--speed", NOOP_SPEED, "--report-dir", str(tmp_path / "r"), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 1
    checks = {c["name"]: c for c in body["checks"]}
    assert body["verdict"].startswith("FAIL: service restored: no rollout of a new template became Ready")
    assert checks["ready replicas"]["detail"] == "0 Ready, expected 1"  # the group is recreated, its leader dies
    assert checks["pre-game state restored"]["ok"], checks["pre-game state restored"]
