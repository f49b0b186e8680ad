"""A reader that closes the pipe early never turns a verdict into success.

A review found `vllm-remedy check ... | true` exiting 0 where the same check exits 1: the CLI caught BrokenPipeError and
returned 0, so a CI step or a `set -o pipefail` script read a failing check (or `drift --detailed-exitcode`'s
"changes found") as a pass. A closed pipe now exits 141 (128 + SIGPIPE, what a shell reports) for every command,
whatever its own verdict, and says nothing more (no "Exception ignored" from the interpreter's exit flush).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest
from tests.conftest import ROOT

CHECK = ("check", "-f", "tests/data/manifests/runbook/bad-rev15.yaml", "--policy", "policies/llama-8b.yaml")
DIAGNOSE = ("diagnose", "--log", "tests/data/logs/v0.9.1_l40s_free_memory.log")


def _piped(args: tuple[str, ...], reader: str) -> tuple[int, str]:
    """The CLI's own exit status in ``vllm-remedy ARGS 2>ERR | READER`` under bash, and its stderr."""
    cli = shlex.join([sys.executable, "-m", "vllm_remedy", *args])
    got = subprocess.run(f"{cli} | {reader}; echo ${{PIPESTATUS[0]}}", shell=True, executable="/bin/bash",
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    return int(got.stdout.split()[-1]), got.stderr


@pytest.mark.parametrize(("args", "alone"), [(CHECK, 1), (DIAGNOSE, 0)])
def test_a_reader_that_closes_early_gets_141_never_the_verdict(cli, args, alone):
    """`check` fails (1) and `diagnose` succeeds (0) when read whole; `| true` closes the pipe unread: 141 for both."""
    assert cli(*args).returncode == alone
    status, stderr = _piped(args, "true")
    assert status == 141, stderr
    assert "Exception ignored" not in stderr and "Traceback" not in stderr, stderr


def test_a_reader_that_reads_everything_keeps_the_verdict():
    assert _piped(CHECK, "cat >/dev/null")[0] == 1
    assert _piped(DIAGNOSE, "cat >/dev/null")[0] == 0


def _into_closed_pipe(args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """The CLI writing into a pipe whose read end was closed before it started: no race with a reader."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "vllm_remedy", *args], stdout=write, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, timeout=120)
    finally:
        os.close(write)


def test_a_pipe_closed_before_the_first_write_is_not_success():
    got = _into_closed_pipe(DIAGNOSE)
    assert got.returncode == 141 and got.stderr == "", got.stderr


@pytest.mark.parametrize("args", [("--help",), ("plan", "--help"), ("--version",)])
def test_help_into_a_closed_pipe_is_not_success(args):
    """argparse swallows write errors while printing help (the second review: `--help | true` exited 0)."""
    got = _into_closed_pipe(args)
    assert got.returncode == 141 and got.stderr == "", got.stderr


def test_a_closed_stdout_is_one_line_and_not_a_verdict():
    """`vllm-remedy check ... >&-`: Python starts with no stdout; a passing check must not say 1 ("finding"), a drift
    not 1 ("drift"), and nothing may raise."""
    good = ("check", "-f", "tests/data/manifests/runbook/good-rev14.yaml", "--policy", "policies/llama-8b.yaml")
    cli = shlex.join([sys.executable, "-m", "vllm_remedy", *good])
    got = subprocess.run(f"{cli} >&-", shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert got.returncode == 141 and got.stderr == "vllm-remedy: error: standard output is closed\n", got.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_is_one_line_and_exit_74():
    """`> /dev/full`: the verdict could not be written; EX_IOERR (74), one line, no traceback."""
    with open("/dev/full", "w") as full:
        got = subprocess.run([sys.executable, "-m", "vllm_remedy", *CHECK], stdout=full, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT, timeout=120)
    assert got.returncode == 74, got.stderr
    assert got.stderr == "vllm-remedy: error: cannot write standard output: No space left on device\n", got.stderr
