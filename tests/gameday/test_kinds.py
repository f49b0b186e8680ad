"""Game days on other workload kinds than a Deployment: the scenario names the kind, the fault lands in that
kind's template, the game reads readiness from its status and runs restore.py on its ``<kind>/<name>`` host."""

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


def _variant(tmp: Path, src: Path = STS, **changes: object) -> Path:
    """A shipped scenario with top-level keys replaced; paths re-anchored on the shipped folder."""
    data = yaml.safe_load(src.read_text())
    data["policy"] = str((SHIPPED / data["policy"]).resolve())
    data["deploys"] = [str((SHIPPED / d).resolve()) for d in data["deploys"]]
    data.update(changes)
    out = tmp / f"{src.stem}-variant.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def test_statefulset_game_day_restores_the_set_through_its_own_host(cli, tmp_path: Path):
    got = cli("gameday", "run", "statefulset-bad-rollout", "--speed", "300", "--report-dir", str(tmp_path), "-o",
              "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0, body["checks"]
    assert body["verdict"] == "PASS"
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["detected"]["detail"].startswith("detected: max_len_exceeds_kv in pod llama-sts-")
    assert checks["ready replicas"]["detail"] == "2 Ready, expected 2"
    assert checks["final flags"]["detail"] == "--max-model-len=16384"
    assert checks["GPU"]["ok"] and checks["pre-game state restored"]["ok"]
    (run,) = body["deploys"]
    # restore.py ran on the StatefulSet host and rolled the set back by its ControllerRevisions
    assert any(line.startswith("roll back statefulset llm/llama-sts from revision 2 to revision 1")
               for line in run["output"]), run["output"]
    assert ("statefulset llm/llama-sts: pre-game spec.template, spec.updateStrategy, spec.replicas and annotations"
            in body["restored"])
    assert "controllerrevisions marks" in body["restored"]
    assert body["template_changes_to_recovery"] == 1


def test_statefulset_game_day_fails_when_the_playbook_does_not_restore(cli, tmp_path: Path):
    noop = tmp_path / "noop.py"
    noop.write_text('"""A deploy that does nothing (the broken playbook)."""\n')
    got = cli("gameday", "run", str(_variant(tmp_path, deploys=[str(noop)])), "--speed", "300",
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


def test_inferenceservice_game_day_restores_kserves_last_ready_revision(cli, tmp_path: Path):
    got = cli("gameday", "run", "inferenceservice-bad-rollout", "--speed", "300", "--report-dir", str(tmp_path),
              "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0, body["checks"]
    assert body["verdict"] == "PASS"
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["detected"]["detail"].startswith("detected: max_len_exceeds_kv in pod llama-predictor-")
    assert checks["ready replicas"]["detail"] == "1 Ready, expected 1"
    # the flags are read from the pod template KServe derives (runtime command + model.args)
    assert checks["final flags"]["detail"] == "--max-model-len=16384"
    (run,) = body["deploys"]
    assert any(line.startswith("roll back inferenceservice llm/llama from predictor revision llama-predictor-00002 "
                               "to llama-predictor-00001") for line in run["output"]), run["output"]
    assert "inferenceservice llm/llama: pre-game spec.predictor and annotations" in body["restored"]


def test_inferenceservice_game_day_fails_when_the_playbook_does_not_restore(cli, tmp_path: Path):
    noop = tmp_path / "noop.py"
    noop.write_text('"""A deploy that does nothing (the broken playbook)."""\n')
    got = cli("gameday", "run", str(_variant(tmp_path, ISVC, deploys=[str(noop)])), "--speed", "300",
              "--report-dir", str(tmp_path / "r"), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 1
    checks = {c["name"]: c for c in body["checks"]}
    assert body["verdict"].startswith("FAIL: service restored: no rollout of a new template became Ready")
    assert checks["final flags"]["detail"] == "--max-model-len=131072 (expected 16384)"
    assert checks["pre-game state restored"]["ok"], checks["pre-game state restored"]


def test_leaderworkerset_game_day_writes_the_previous_revision_back(cli, tmp_path: Path):
    got = cli("gameday", "run", "leaderworkerset-bad-rollout", "--speed", "300", "--report-dir", str(tmp_path),
              "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0, body["checks"]
    assert body["verdict"] == "PASS"
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["detected"]["detail"] == "detected: max_len_exceeds_kv in pod qwen-lws-0's log"  # the leader
    assert checks["ready replicas"]["detail"] == "1 Ready, expected 1"  # one group
    assert checks["final flags"]["detail"] == "--max-model-len=32768"
    (run,) = body["deploys"]
    assert any(line.startswith("roll back leaderworkerset llm/qwen-lws from revision 2 to revision 1")
               for line in run["output"]), run["output"]
    assert ("leaderworkerset llm/qwen-lws: pre-game spec.leaderWorkerTemplate, spec.replicas and annotations"
            in body["restored"])


def test_leaderworkerset_game_day_fails_when_the_playbook_does_not_restore(cli, tmp_path: Path):
    noop = tmp_path / "noop.py"
    noop.write_text('"""A deploy that does nothing (the broken playbook)."""\n')
    data = yaml.safe_load(LWS.read_text())
    seed = str((SHIPPED / data["world"]["seed"]).resolve())
    got = cli("gameday", "run", str(_variant(tmp_path, LWS, deploys=[str(noop)], world={"seed": seed})),
              "--speed", "300", "--report-dir", str(tmp_path / "r"), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 1
    checks = {c["name"]: c for c in body["checks"]}
    assert body["verdict"].startswith("FAIL: service restored: no rollout of a new template became Ready")
    assert checks["ready replicas"]["detail"] == "0 Ready, expected 1"  # the group is recreated, its leader dies
    assert checks["pre-game state restored"]["ok"], checks["pre-game state restored"]
