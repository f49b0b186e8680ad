"""An option no vLLM release read had, on vllm/vllm-openai:v0.35.0 (past the newest read, 0.34.0), is "not judged"
wherever a prediction or the image's extrapolated rules are said, in check's words (``cmdline.unrecognized.note``):
the prediction lines of deploys/budget.py, enforce_eager.py, load_guard.py and restore.py, the crash line of
diagnose.py (through the real pyinfra CLI on the rehearsal cluster), and ``vllm-remedy drift``, text and JSON. Only
check and plan said it before; every one of these printed the extrapolated rules and stayed silent on the option."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, EAGER, GOOD_ARGS, LOAD_GUARD, LOCAL, MODEL, scenario
from fixtures.drift_world import inventory, policy
from fixtures.kube_writes import mark_known_good
from fixtures.pyinfra_run import Rehearsal, crash_heads
from fixtures.restore_world import (
    DIAGNOSE,
    RESTORE,
    bad_revision,
    crash_looping,
    host_out,
    incident,
    newest_revision,
    replicaset,
    wait_until,
)

rehearsal = pyinfra_run.rehearsal
IMAGE = "vllm/vllm-openai:v0.35.0"
RULES = "(vLLM 0.35.0: rules extrapolated from 0.34.0)"
NOTE = ("(not judged: --foo-bar is not an option of vLLM 0.34.0, the newest release read; 0.35.0 may accept it (a "
        "rehearsal pod starts with it, its effect not modelled))")
FOO = ["--foo-bar", "1"]


def _newer(args: list[str]):
    def mutate(dep: dict) -> None:
        container = dep["spec"]["template"]["spec"]["containers"][0]
        container["image"], container["args"] = IMAGE, list(args)
    return mutate


def _predictions(lines: list[str]) -> list[str]:
    found = [line for line in lines if "prediction on " in line]
    assert found, "\n".join(lines)
    return found


def test_the_budget_s_predictions_say_it_in_a_plan_and_a_noop(rehearsal: Rehearsal) -> None:
    scenario(rehearsal, _newer([MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64", *FOO]),
             "0.35.0 with --foo-bar, no --max-model-len")
    dry = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    assert dry.returncode == 0, dry.stderr
    assert all(line.endswith(f"{RULES} {NOTE}") for line in _predictions(host_out(dry.stderr))), dry.stderr
    scenario(rehearsal, _newer([*GOOD_ARGS, *FOO]), "0.35.0 with --foo-bar and --max-model-len")
    noop = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    assert noop.returncode == 0, noop.stderr
    [said] = [line for line in host_out(noop.stderr) if "fits on NVIDIA-L40S with headroom" in line]
    assert said.endswith(f"{RULES} {NOTE})"), said


def test_enforce_eager_and_load_guard_say_it_beside_their_write(rehearsal: Rehearsal) -> None:
    scenario(rehearsal, _newer([*GOOD_ARGS, "--max-num-batched-tokens", "16384", *FOO]), "0.35.0, big prefill")
    for deploy in (EAGER, LOAD_GUARD):
        got = rehearsal.pyinfra(LOCAL, deploy, "--dry")
        assert got.returncode == 0, got.stderr
        [line] = _predictions(host_out(got.stderr))
        assert line.endswith(f"{RULES} {NOTE}"), (deploy, line)


def test_restore_says_it_of_the_revision_it_rolls_back_to(rehearsal: Rehearsal) -> None:
    scenario(rehearsal, _newer([*GOOD_ARGS, *FOO]), "0.35.0 with --foo-bar")
    client = rehearsal.client()
    good = replicaset(rehearsal, 15)
    mark_known_good(client, "llm", good["metadata"]["name"], at=client.server_time(), reason="served in a test")
    incident(rehearsal)  # revision 16: 0.35.0 without --foo-bar or --max-model-len, on an L4: crash-loops
    got = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")
    assert got.returncode == 0, got.stderr
    assert any(line.endswith(f"{RULES} {NOTE}") for line in _predictions(host_out(got.stderr))), got.stderr


def test_diagnose_says_it_on_the_crash_line(rehearsal: Rehearsal) -> None:
    def bad(dep: dict) -> None:
        bad_revision(dep)
        container = dep["spec"]["template"]["spec"]["containers"][0]
        container["image"] = IMAGE
        container["args"] = [*container["args"], *FOO]

    number = newest_revision(rehearsal) + 1
    rehearsal.change(bad, change_cause="0.35.0 with --foo-bar, the model's default length on an L4")
    wait_until(lambda: crash_looping(rehearsal, revision=number), what=f"revision {number} to crash-loop")
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "--dry")
    assert got.returncode == 0, got.stderr
    heads = [line for line in crash_heads(host_out(got.stderr)) if "/vllm (" in line]
    assert heads and all(line.endswith(f"{RULES} {NOTE}") for line in heads), heads


def test_drift_says_it_in_text_and_json(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    scenario(rehearsal, _newer([*GOOD_ARGS, *FOO]), "0.35.0 with --foo-bar")
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    text = cli("drift", "-i", inv)
    line = next((line.strip() for line in text.stdout.splitlines() if line.strip().startswith("prediction on ")), "")
    assert line.endswith(f"{RULES} {NOTE}"), text.stdout + text.stderr
    [host] = json.loads(cli("drift", "-i", inv, "-o", "json").stdout)["hosts"]
    assert host["prediction"]["not_judged"] == [NOTE[1:-1]], host["prediction"]
    assert host["prediction"]["line"] == line
