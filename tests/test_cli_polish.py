"""The CLI's surface, run as a user runs it: every `--help` readable, the command list true, every `-o json` versioned.

Commands that need the rehearsal cluster (drift, expire, gameday run, rehearse, sim up/down) have their
envelope checked in the end-to-end tests that already run them with ``-o json`` (``CLUSTER_JSON``).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import vllm_remedy.commands
from vllm_remedy.envelope import API_VERSION, dumps, envelope, listing

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
COMMANDS_DIR = Path(vllm_remedy.commands.__file__).parent
COMMANDS = sorted(p.stem for p in COMMANDS_DIR.glob("*.py") if not p.stem.startswith("_"))
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
FORMS = DATA / "manifests" / "forms"

#: Commands whose ``-o json`` needs the rehearsal cluster → the existing end-to-end test asserting its envelope.
CLUSTER_JSON = {
    "drift": "tests/test_drift_cli.py::test_in_sync_exits_0_in_both_conventions",
    "expire": "tests/test_expire_cli.py",
    "gameday run": "tests/test_gameday.py::test_scenario_passes_end_to_end",
    "rehearse": "tests/test_gameday.py::test_bad_rollout_figures",
    "sim up": "tests/test_sim_api_cli.py::test_up_serves_the_runbook_world_and_down_up_keeps_state",
    "sim down": "tests/test_sim_api_cli.py::test_up_serves_the_runbook_world_and_down_up_keeps_state",
}


def run(*args: str, columns: int = 80, console_script: bool = False) -> subprocess.CompletedProcess[str]:
    """``vllm-remedy ARGS`` in a subprocess, at a fixed terminal width so wrapping is reproducible.

    Each distinct run starts once per test process (the suite's time budget: a CLI start is ~0.45 s of CPU): the
    same ``--help`` and ``-o json`` runs are read by several tests here (every command's help by the example test,
    the action test and ``json_commands``), and none of these runs writes anything, so a repeat would print the same.
    """
    return _run(args, columns, console_script)


@functools.cache
def _run(args: tuple[str, ...], columns: int, console_script: bool) -> subprocess.CompletedProcess[str]:
    """``run``'s memo, keyed the same however the caller spelled the defaults."""
    script = Path(sys.executable).parent / "vllm-remedy"
    argv = [str(script)] if console_script and script.exists() else [sys.executable, "-m", "vllm_remedy"]
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([*argv, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)


def listed(help_text: str, metavar: str) -> list[str]:
    """The names argparse lists under a subparsers ``metavar`` (COMMAND, ACTION) in ``help_text``."""
    lines = help_text.splitlines()
    start = lines.index(f"  {metavar}") + 1
    names = []
    for line in lines[start:]:
        if not line.strip():
            break
        match = re.match(r"^ {4}(\S+)", line)
        if match:
            names.append(match.group(1))
    return names


def docstring(command: str) -> str:
    """A command module's docstring, read without importing it (the help is built from it)."""
    return ast.get_docstring(ast.parse((COMMANDS_DIR / f"{command}.py").read_text(encoding="utf-8"))) or ""


def example_lines(doc: str) -> list[str]:
    """The indented lines of a docstring: examples and list items, each meant to stay a line of its own."""
    return [line.strip() for line in doc.splitlines() if line.strip() and line[0].isspace()]


def test_top_level_help_lists_exactly_the_discovered_commands() -> None:
    got = run("--help", console_script=True)
    assert got.returncode == 0, got.stderr
    names = listed(got.stdout, "COMMAND")
    assert sorted(names) == COMMANDS
    assert names[:2] == ["rehearse", "diagnose"]  # runbook order, from each module's ORDER
    assert "  vllm-remedy diagnose --log previous.log" in got.stdout.splitlines()


def test_unknown_command_error_names_every_command_and_nothing_else() -> None:
    got = run("no-such-command")
    choices = re.search(r"choose from (.*)\)", got.stderr)
    assert got.returncode == 2 and choices, got.stderr
    assert sorted(re.findall(r"'([^']+)'", choices.group(1))) == COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_help_keeps_every_example_on_its_own_line(command: str) -> None:
    doc = docstring(command)
    examples = example_lines(doc)
    assert "Examples:" in doc.splitlines() and any(e.startswith("vllm-remedy ") for e in examples), \
        f"commands/{command}.py: the docstring (the --help text) has no indented Examples: block"
    for columns in (80, 50):  # a narrow terminal refills prose, never an example
        got = run(command, "--help", columns=columns)
        assert got.returncode == 0, got.stderr
        lines = [line.strip() for line in got.stdout.splitlines()]
        assert "Examples:" in lines
        missing = [e for e in examples if e not in lines]
        assert not missing, f"{command} --help at {columns} columns joined or wrapped: {missing}\n{got.stdout}"


@pytest.mark.parametrize("command", ["args", "gameday", "sim"])
def test_every_action_has_help(command: str) -> None:
    top = run(command, "--help")
    actions = listed(top.stdout, "ACTION")
    assert actions, top.stdout
    for action in actions:
        got = run(command, action, "--help")
        assert got.returncode == 0, got.stderr
        assert got.stdout.startswith(f"usage: vllm-remedy {command} {action} ")
        assert "None" not in got.stdout, got.stdout  # an unset default rendered by %(default)s


def json_commands() -> set[str]:
    """Every command and action whose --help offers ``-o json``."""
    found = set()
    for command in COMMANDS:
        top = run(command, "--help").stdout
        actions = listed(top, "ACTION") if "  ACTION" in top.splitlines() else []
        for name, text in ([(f"{command} {a}", run(command, a, "--help").stdout) for a in actions]
                           or [(command, top)]):
            if re.search(r"-o \{[^}]*\bjson\b", text):
                found.add(name)
    return found


#: ``-o json`` documents that run without a cluster: (argv, kind).
NO_CLUSTER = [
    *[(("diagnose", "--log", str(log), "-o", "json"), "DiagnoseReport") for log in sorted(DATA.glob("logs/*.log"))],
    (("diagnose", "--log", str(DATA / "logs" / "v0.10.2_fp8_kv_healthy.log"), "--exit-code", "137", "--reason",
      "OOMKilled", "-o", "json"), "DiagnoseReport"),
    (("args", "show", "-f", str(FORMS / "01-args-only.yaml"), "-o", "json"), "VllmServerList"),
    (("args", "show", "-f", str(FORMS / "19-multi-node-lws.yaml"), "-o", "json"), "VllmServerList"),
    (("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "-o", "json"), "EstimateResult"),
    (("plan", "-f", str(FORMS / "01-args-only.yaml"), "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--policy",
      "policies/llama-8b.yaml", "-o", "json"), "BudgetPlan"),
    (("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.8.5", "-o", "json"), "BudgetPlan"),
    (("gameday", "list", "-o", "json"), "ScenarioList"),
    (("check", "-f", str(DATA / "manifests" / "runbook" / "good-rev14.yaml"), "--policy", "policies/llama-8b.yaml",
      "-o", "json"), "CheckReport"),
]


@pytest.mark.parametrize(("argv", "kind"), NO_CLUSTER, ids=lambda v: v[0] if isinstance(v, tuple) else v)
def test_json_output_carries_api_version_and_kind(argv: tuple[str, ...], kind: str) -> None:
    got = run(*argv)
    doc = json.loads(got.stdout)
    # plan's exit code is its verdict: 0 only when no change is needed
    assert got.returncode == (int(doc["verdict"] != "no_change_needed") if argv[0] == "plan" else 0), got.stderr
    assert isinstance(doc, dict) and (doc["apiVersion"], doc["kind"]) == (API_VERSION, kind)
    assert list(doc)[:2] == ["apiVersion", "kind"]


def test_json_keeps_the_keys_scripts_read() -> None:
    """The envelope is added around the document, never instead of it."""
    est = json.loads(run("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "-o", "json").stdout)
    assert {"outcome", "kv_cache_tokens", "max_concurrency", "model", "gpu", "vllm_version"} <= set(est)
    log = DATA / "logs" / "v0.10.2_fp8_kv_healthy.log"
    diag = json.loads(run("diagnose", "--log", str(log), "-o", "json").stdout)
    assert {"failure", "failure_detail", "evidence", "hint", "kv_cache_tokens"} <= set(diag)


def test_alerts_json_is_a_prometheus_rule() -> None:
    """The one exception: `alerts -o json` is a Kubernetes object for kubectl apply, so it keeps the
    Prometheus Operator's apiVersion (a vllm-remedy one would make the API server reject it)."""
    got = run("alerts", "-p", "policies/", "-o", "json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert (doc["apiVersion"], doc["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")


def test_every_json_command_is_checked_somewhere() -> None:
    """A new ``-o json`` must join NO_CLUSTER here or CLUSTER_JSON (an end-to-end test asserting its envelope)."""
    here = {" ".join(argv[:2]) if argv[0] in ("args", "gameday") else argv[0] for argv, _ in NO_CLUSTER}
    assert json_commands() == here | set(CLUSTER_JSON) | {"alerts"}


def test_envelope_helper() -> None:
    doc = envelope("X", {"apiVersion": "old", "kind": "Old", "a": 1})
    assert doc == {"apiVersion": API_VERSION, "kind": "X", "a": 1} and list(doc)[:2] == ["apiVersion", "kind"]
    assert listing("XList", iter([1, 2])) == {"apiVersion": API_VERSION, "kind": "XList", "items": [1, 2]}
    assert json.loads(dumps(doc)) == doc
    with pytest.raises(ValueError):
        envelope("", {})
    with pytest.raises(ValueError):
        dumps({"a": 1})
