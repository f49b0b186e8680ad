"""`vllm-remedy respond` checks the inventory's host data when it loads it (hostile review 16, G8): a misspelt key
(``progres_seconds``) was accepted at start — "serving … for 1 inventory host(s)" — and found only at the page,
when the deploy's connect refused the host and the unattended rollback did nothing. Through the real CLI: the
start is refused with one line naming the host and the key, exit 2; a key misspelt while it runs (the inventory is
reloaded when its file changes) refuses the page with the same line and changes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.responder import TOKEN, alert, payload, start, write_inventory
from fixtures.restore_world import NAME, NS, deployment

rehearsal = pyinfra_run.rehearsal
HOST = "@k8s/rehearsal/llm/llama-8b"
TYPO = "unknown data key 'progres_seconds' in the inventory (did you mean 'progress_seconds'?)"


def misspell(path: str) -> None:
    """Add ``progres_seconds`` to the host's data (the inventory writes it as one dict)."""
    text = Path(path).read_text()
    Path(path).write_text(text.replace("{'policy':", "{'progres_seconds': 0, 'policy':"))
    assert "progres_seconds" in Path(path).read_text()


def test_a_misspelt_host_data_key_refuses_the_start_in_one_line(rehearsal: Rehearsal) -> None:
    inventory = write_inventory(rehearsal.tmp, "auto")
    misspell(inventory)
    try:  # the load takes seconds; a responder still up after a minute has started serving
        got = subprocess.run([sys.executable, "-m", "vllm_remedy", "respond", "-i", inventory, "--listen",
                              "127.0.0.1:0", "--notes", str(rehearsal.tmp / "notes")], capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=str(rehearsal.tmp),
                             env=rehearsal.env({"VLLM_REMEDY_RESPOND_TOKEN": TOKEN}))
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"respond started on the misspelt key: {exc.stderr!r}")
    assert got.returncode == 2, got.stderr
    assert got.stderr.splitlines()[-1] == f"vllm-remedy: error: {inventory}: {HOST}: {TYPO}", got.stderr
    assert "serving POST" not in got.stderr


def test_a_key_misspelt_while_running_refuses_the_page_with_the_same_line(rehearsal: Rehearsal) -> None:
    before = deployment(rehearsal)
    inventory = write_inventory(rehearsal.tmp, "off")
    responder = start(rehearsal, inventory)
    try:
        misspell(inventory)  # the file changed: the next page reloads it
        page = payload([alert("VllmCrashLoopBackOff", "7e1f", namespace=NS, deployment=NAME)])
        assert responder.post(page)[0] == 200
        [line] = responder.wait_log(r"\[7e1f\] ")
        assert line.endswith(f"[7e1f] error: {inventory}: {HOST}: {TYPO}"), line
        assert not responder.notes.exists()
        assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    finally:
        responder.stop()
