"""deploys/confirm.py (runbook step 6) asks the policy's Prometheus for the gateway error rate: a real Prometheus
scraping gateway counters (tests/fixtures/prometheus_server.py) and the real pyinfra CLI on the rehearsal cluster.
An error rate above the policy's ``max`` refuses the mark, a normal one marks (no data, a bad query and an
unreachable server: tests/test_prometheus.py, through the same functions)."""

from __future__ import annotations

from pathlib import Path

from fixtures import prometheus_server, pyinfra_run
from fixtures.prometheus_server import Prometheus, error_rate_query
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import CONFIRM, HOST, host_out, replicaset, stable, write_inventory

rehearsal = pyinfra_run.rehearsal
prometheus = prometheus_server.prometheus
KNOWN_GOOD = "vllm-remedy.io/known-good"


def inventory(tmp: Path, url: str, route: str, name: str) -> str:
    """The llama-8b policy with the gateway error-rate check on ``route``'s traffic (limit 1 %)."""
    policy = tmp / f"{name}.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\n"
                      "confirm:\n  gateway_error_rate:\n"
                      f"    prometheus: {url}\n    query: '{error_rate_query(route)}'\n    max: 0.01\n")
    folder = tmp / name
    folder.mkdir()
    return write_inventory(folder, HOST, policy=str(policy))


def test_the_gateway_error_rate_decides_the_mark(rehearsal: Rehearsal, prometheus: Prometheus,
                                                 tmp_path: Path) -> None:
    stable(rehearsal)  # the seed's revision 14, Ready for 31 cluster minutes: every other check passes
    failing = rehearsal.pyinfra(inventory(tmp_path, prometheus.url, "failing", "failing"), CONFIRM, "-y")
    assert failing.returncode != 0
    lines = host_out(failing.stderr)
    said = [line for line in lines if line.startswith("FAIL: gateway error rate ")]
    assert len(said) == 1 and said[0].endswith(f"(limit 0.01, query at {prometheus.url})"), lines
    assert 0.15 <= float(said[0].split()[4]) <= 0.25, said  # the failing route answers 20 % 503s
    refusal = [line for line in lines if line.startswith("refused: revision 14 not confirmed: ")]
    assert len(refusal) == 1 and refusal[0].endswith(f"(limit 0.01, query at {prometheus.url})"), lines
    assert KNOWN_GOOD not in (replicaset(rehearsal, 14)["metadata"].get("annotations") or {})

    steady = rehearsal.pyinfra(inventory(tmp_path, prometheus.url, "steady", "steady"), CONFIRM, "-y")
    assert steady.returncode == 0, steady.stderr
    lines = host_out(steady.stderr)
    said = [line for line in lines if line.startswith("ok: gateway error rate ")]
    assert len(said) == 1 and float(said[0].split()[4]) <= 0.002, lines
    assert KNOWN_GOOD in replicaset(rehearsal, 14)["metadata"]["annotations"]
