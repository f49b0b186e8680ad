"""What a process's first estimate reads and imports: every CLI and deploy run is a new process, so it pays this each
time (bench/bench_memory.py, bench/bench_cli_start.py). The rows ``arch_release`` reads one by one must say what the
whole table says, and a file of another shape must fall back to the whole table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from vllm_remedy.vllm import arch_release


def _fresh(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_every_row_read_alone_equals_the_whole_table() -> None:
    table = arch_release.table()
    assert arch_release._rows() is not None  # the shipped file has the generated shape: the fast path is live
    assert arch_release._releases() == table.releases
    assert arch_release._fallback() == table.fallback
    for key in ("architectures", "quantization"):
        whole = getattr(table, key)
        assert list(arch_release._rows()[key]) == list(whole)  # same names, same order
        for name, spans in whole.items():
            assert arch_release._spans(key, name) == spans, (key, name)
    assert arch_release._spans("architectures", "NoSuchForCausalLM") is None
    assert arch_release._spans("quantization", "") is None


def test_a_fresh_process_estimates_without_parsing_the_whole_registry() -> None:
    got = _fresh(
        "import json\n"
        "from vllm_remedy.vllm import arch_release, catalog\n"
        "from vllm_remedy.vllm.memory import EngineSettings, estimate\n"
        "est = estimate(catalog.model('meta-llama/Llama-3.1-8B-Instruct'), catalog.gpu('NVIDIA-L4'),\n"
        "               EngineSettings.from_flags({'max-model-len': '8192'}, '0.8.5'))\n"
        "print(json.dumps({'outcome': est.outcome.value, 'whole': arch_release.table.cache_info().currsize}))\n")
    assert got == {"outcome": "fits", "whole": 0}


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


@pytest.fixture
def odd_file(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry with one row of another shape (a trailing comment), every cache emptied before and after."""
    caches = (arch_release._rows, arch_release._releases, arch_release._fallback, arch_release._spans,
              arch_release.read_release)
    text = arch_release._text().replace("  awq: [0.5.5, null]", "  awq: [0.5.5, null]  # odd")
    assert "# odd" in text
    for c in caches:
        c.cache_clear()
    monkeypatch.setattr(arch_release, "_text", lambda: text)
    arch_release.table.cache_clear()
    yield
    monkeypatch.undo()
    for c in (*caches, arch_release.table):
        c.cache_clear()


@pytest.mark.usefixtures("odd_file")
def test_a_file_of_another_shape_is_answered_from_the_whole_table() -> None:
    assert arch_release._rows() is None
    assert arch_release._spans("quantization", "awq") == (((0, 5, 5), None),)
    assert arch_release.has_architecture("LlamaForCausalLM", "0.8.5") is True
    assert arch_release._releases() == arch_release.table().releases
