"""Real kubectl 1.32 reading vLLM logs from a 600x cluster: one clock per line, and ``--since-time`` round trips.

``--timestamps``' prefix is served on kubectl's wall clock (``reader_clock``); vLLM's own stamp inside the line
(``INFO 12-04 20:52:24 [...]``) must read on the same clock, not hours ahead. A stamp copied from one
``logs --timestamps`` into a later ``--since-time`` must select the lines from that stamp on, although the shift
onto the wall clock has grown by ``speed - 1`` seconds per real second in between.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest

from fixtures import sim_world
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.sim.clock import parse_timestamp

runbook_sim = sim_world.runbook_sim
V = "32"
VLLM = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d) ")


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def _vllm_time(line: str, year: int) -> float | None:
    found = VLLM.search(line)
    if found is None:
        return None
    at = datetime.strptime(f"{year}-{found.group(1)}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    return at.timestamp()


def _text(line: str) -> str:
    """A line without its kubectl prefix and vLLM stamp: what stays the same whichever clock shows it."""
    return VLLM.sub("", line.split(" ", 1)[1], count=1)


def _gaps(text: str, year: int) -> dict[str, float]:
    """Per line (keyed by its text): vLLM's stamp less the ``--timestamps`` prefix, in seconds."""
    out = {}
    for line in text.splitlines():
        prefix, _, rest = line.partition(" ")
        inline = _vllm_time(rest, year)
        if inline is not None:
            out[_text(line)] = inline - parse_timestamp(prefix)
    return out


def test_vllm_stamps_read_on_the_same_clock_as_the_timestamps_prefix(runbook_sim):
    clock = runbook_sim.clusters["a"].clock
    time.sleep(0.5)  # five cluster minutes pass: the cluster clock runs ahead of the wall clock
    assert clock.now() - time.time() > 240
    client = KubeClient.for_context("a", str(runbook_sim.kubeconfig))  # automation: the cluster clock
    pod = client.list_pods("llm", "app=llama-8b")[0]["metadata"]["name"]
    path = f"/api/v1/namespaces/llm/pods/{pod}/log"
    year = time.gmtime(clock.now()).tm_year
    cluster = _gaps(client.request("GET", path, query=[("timestamps", "true")], expect_json=False), year)
    got = runbook_sim.kubectl(V, "-n", "llm", "logs", pod, "--timestamps", timeout=30)
    assert got.returncode == 0, got.stderr
    shown = _gaps(got.stdout, year)
    assert len(shown) > 8 and shown.keys() == cluster.keys(), got.stdout
    # the two stamps of a line stand as far apart for kubectl as on the cluster clock: both moved by one shift
    assert all(abs(shown[text] - cluster[text]) <= 1.5 for text in shown), (shown, cluster)
    plain = runbook_sim.kubectl(V, "-n", "llm", "logs", pod, timeout=30).stdout.splitlines()
    inline = [t for line in plain if (t := _vllm_time(line, year)) is not None]
    assert inline and max(inline) <= time.time() + 1, plain[-3:]  # nothing in kubectl's future


def test_a_copied_stamp_as_since_time_selects_the_lines_it_was_on(runbook_sim):
    k = runbook_sim.kubectl
    got = k(V, "-n", "llm", "logs", "deploy/llama-8b", "--timestamps", timeout=30)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert len(lines) > 8, got.stdout
    stamp = lines[len(lines) // 2].split(" ", 1)[0]
    second = int(parse_timestamp(stamp))
    expected = [_text(line) for line in lines if parse_timestamp(line.split(" ", 1)[0]) >= second]
    time.sleep(2.5)  # the shift onto the wall clock grows by ~25 cluster minutes
    later = k(V, "-n", "llm", "logs", "deploy/llama-8b", "--timestamps", f"--since-time={stamp}", timeout=30)
    assert later.returncode == 0, later.stderr
    again = [_text(line) for line in later.stdout.splitlines()]
    assert again[:len(expected)] == expected, (stamp, later.stdout[:2000])
