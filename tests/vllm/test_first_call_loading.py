"""What a process's first estimate reads and imports: every CLI and deploy run is a new process, so it pays this each
time (bench/bench_memory.py, bench/bench_cli_start.py): the release registry is JSON, and the estimate command does not
import the startup-log parser.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_remedy.vllm import arch_release

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_registry_is_generated_json_one_name_per_line() -> None:
    """The generator's shape: JSON (the stdlib reads it in well under a millisecond) whose tables hold one name per
    line, so a regeneration's diff names the names that moved."""
    text = (ROOT / "src/vllm_remedy/vllm/data/vllm_registry.json").read_text()
    doc = json.loads(text)
    rows = [line for line in text.splitlines() if line.startswith('  "')]
    names = sum(len(doc[k]) for k in ("architectures", "previously_supported", "quantization")) + len(doc["about"])
    assert len(rows) == names
    table = arch_release.table()
    assert len(table.architectures) == len(doc["architectures"]) and table.releases[0] == (0, 5, 5)


def test_the_estimate_command_does_not_import_the_log_parser() -> None:
    """``batch_words`` needs ``startup_log.config_refusal`` only; the package no longer imports its parser,
    classifier and renderer with it (~14 ms of every ``vllm-remedy estimate``)."""
    got = _fresh("import json, sys\nimport vllm_remedy.cli, vllm_remedy.commands.estimate\n"
                 "print(json.dumps(sorted(m for m in sys.modules if m.startswith('vllm_remedy.vllm.startup_log'))))\n")
    assert got == ["vllm_remedy.vllm.startup_log", "vllm_remedy.vllm.startup_log.config_refusal"]


def test_the_package_names_still_import() -> None:
    from vllm_remedy.vllm import startup_log
    from vllm_remedy.vllm.startup_log import StartupReport, classify, config_refusal, parse_startup_log
    from vllm_remedy.vllm.startup_log.parse import parse_startup_log as direct

    assert parse_startup_log is direct and callable(classify) and isinstance(StartupReport, type)
    assert config_refusal.__name__ == "vllm_remedy.vllm.startup_log.config_refusal"
    with pytest.raises(AttributeError):
        startup_log.no_such_name  # noqa: B018
