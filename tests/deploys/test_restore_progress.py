"""deploys/restore.py's wait shows its progress: through the real pyinfra CLI, against the rehearsal cluster with its
clock slowed so the restored pods' start (weights, profiling, CUDA graphs) takes a few real seconds.

Piped (a CronJob's log, a CI console): plain ``[host]`` lines. On a terminal (a pty): one live line rewritten
in place, beside pyinfra's own spinner.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, NAME, NS, RESTORE, host_out, incident
from vllm_remedy.operations.util.wait import HEARTBEAT
from vllm_remedy.vllm.startup_log.stage import STAGES

rehearsal = pyinfra_run.rehearsal

SPEED = 20.0  # cluster seconds per real second while the restore runs: its ~110 s start takes ~6 s, room for a
# loaded machine's slower deploy start before the wait begins (at 30, 1 run in 6 under load saw one line)
LOOK = ("--data", "progress_seconds=0.2")
LINE = re.compile(r"progress at (\d+)s: (\d)/(\d) Ready; (?:newest pod llama-8b-\S+: (.+)|no pod of the new "
                  r"ReplicaSet yet)$")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def stage_rank(text: str) -> int:
    """Where a progress line's stage stands in a start (before vLLM runs: -1; Ready: the last)."""
    name = text.split(" (", 1)[0]
    return STAGES.index(name) if name in STAGES else -1


def slowed_incident(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    rehearsal.cluster.clock.set_speed(SPEED)


def test_a_piped_restore_reports_ready_of_desired_and_each_stage_as_it_passes(rehearsal: Rehearsal) -> None:
    slowed_incident(rehearsal)
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y", *LOOK)
    assert got.returncode == 0, got.stderr
    assert "\r" not in got.stderr and "\x1b[J" not in got.stderr  # plain lines only, nothing redrawn
    lines = host_out(got.stderr)
    done = next(i for i, line in enumerate(lines) if line.startswith("wait for revision 14's template to roll out: "))
    assert 'successfully rolled out after' in lines[done]
    seen = [LINE.search(line) for line in lines if line.startswith("progress at ")]
    assert len(seen) >= 2 and all(seen), lines
    assert all(lines.index(m.string) < done for m in seen if m)  # all before the verdict
    assert all((m.group(3), m.group(2) in "012") == ("2", True) for m in seen if m)  # Ready of the 2 desired
    elapsed = [int(m.group(1)) for m in seen if m]
    assert elapsed == sorted(elapsed)
    stages = [m.group(4) or "" for m in seen if m]
    texts = [(int(m.group(1)), m.string.split(": ", 1)[1]) for m in seen if m]
    for (t0, a), (t1, b) in itertools.pairwise(texts):  # a line per change; the same again only as a heartbeat
        assert a != b or t1 - t0 >= HEARTBEAT * 0.2 * SPEED - 12, texts  # (12 looks; Date has whole seconds)
    ranks = [stage_rank(s) for s in stages]
    assert ranks == sorted(ranks), stages  # the start only moves forward
    names = {s.split(" (", 1)[0] for s in stages}
    assert len(names) >= 2 and "loading weights" in names, stages  # the model load is 72 of its ~110 s


def test_on_a_terminal_the_progress_is_a_live_line_rewritten_in_place(rehearsal: Rehearsal) -> None:
    slowed_incident(rehearsal)
    # pyinfra's spinner draws too; COLUMNS agrees with the pty (an inherited one would win over it)
    env = rehearsal.env({"PYINFRA_PROGRESS": "on", "TERM": "xterm", "COLUMNS": "160", "LINES": "50"})
    out = run_in_pty([sys.executable, "-m", "pyinfra", LOCAL, RESTORE, "-y", *LOOK], env, str(rehearsal.tmp))
    text = COLOUR.sub("", out.decode("utf-8", errors="replace")).replace("\r\n", "\n")
    draws = re.findall(r"\r\x1b\[J    \[@k8s/rehearsal/llm/llama-8b\] (progress at [^\n\r]*)\n", text)
    assert len(draws) >= 2, text[-3000:]
    assert all(LINE.search(d) for d in draws)
    assert text.count("progress at ") == len(draws)  # every report is a redraw: no plain progress lines
    assert "\x1b[1A\r\x1b[J    [@k8s/rehearsal/llm/llama-8b] progress at " in text  # back up over the last one
    verdict = text.index("successfully rolled out after")
    assert text.rindex("progress at ") < verdict
    assert text[:verdict].endswith("\x1b[1A\r\x1b[J    [@k8s/rehearsal/llm/llama-8b] wait for revision 14's "
                                   'template to roll out: deployment "llama-8b" ')  # the live line gave way


def test_progress_seconds_zero_is_silent_and_a_bad_value_is_one_line_before_anything_changes(
        rehearsal: Rehearsal) -> None:
    slowed_incident(rehearsal)
    before = rehearsal.client().get_deployment(NS, NAME)
    bad = rehearsal.pyinfra(LOCAL, RESTORE, "-y", "--data", "progress_seconds=soon")
    assert bad.returncode == 1  # pyinfra: no host left after connect
    assert host_out(bad.stderr) == ["host data progress_seconds: expected a number of seconds >= 0, got 'soon'"]
    after = rehearsal.client().get_deployment(NS, NAME)  # its status moves on (a crash loop); nothing else may
    assert (after["metadata"]["generation"], after["metadata"]["annotations"], after["spec"]) == (
        before["metadata"]["generation"], before["metadata"]["annotations"], before["spec"])
    quiet = rehearsal.pyinfra(LOCAL, RESTORE, "-y", "--data", "progress_seconds=0")
    assert quiet.returncode == 0, quiet.stderr
    lines = host_out(quiet.stderr)
    assert any("successfully rolled out after" in line for line in lines)
    assert not any(line.startswith("progress at ") for line in lines)


def run_in_pty(cmd: list[str], env: dict[str, str], cwd: str, timeout: float = 180) -> bytes:
    """Run ``cmd`` with stdin/stdout/stderr on a 160-column pseudo-terminal; everything it drew, as bytes."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True)
    os.close(slave)
    out, deadline = bytearray(), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child side closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 0, bytes(out)[-3000:]
    return bytes(out)
