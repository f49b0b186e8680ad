"""Our metrics through the real consumers: node-exporter's textfile collector and the Pushgateway
(Debian's static binaries, fetched by scripts/get_tools.py; skipped with the reason when absent)."""

from __future__ import annotations

import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.processes import stop, wait_serving
from vllm_remedy.metrics import (
    DRIFT_DETECTED,
    LAST_CHECK,
    REMEDIATIONS,
    Metrics,
    PushError,
    parse_samples,
    push,
    write_textfile,
)

ROOT = Path(__file__).resolve().parents[1]
NODE_EXPORTER = ROOT / ".tools/prometheus-node-exporter/usr/bin/prometheus-node-exporter"
PUSHGATEWAY = ROOT / ".tools/prometheus-pushgateway/usr/bin/prometheus-pushgateway"
HOST = "@k8s/prod/llm/llama-8b"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def _serve(binary: Path, *args: str) -> Iterator[str]:
    if not binary.is_file():
        pytest.skip(f"{binary.name} not at {binary}: run scripts/get_tools.py (needs apt-get download)")
    port = _free_port()
    proc = subprocess.Popen([str(binary), f"--web.listen-address=127.0.0.1:{port}", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(proc, lambda: _get(url + "/metrics") is not None, f"{binary.name} did not start", 20, tail=500)
        yield url
    finally:
        stop(proc)


@pytest.fixture
def textfile_dir(tmp_path: Path) -> Path:
    path = tmp_path / "textfile"
    path.mkdir()
    return path


@pytest.fixture
def node_exporter(textfile_dir: Path) -> Iterator[str]:
    yield from _serve(NODE_EXPORTER, "--collector.disable-defaults", "--collector.textfile",
                      f"--collector.textfile.directory={textfile_dir}")


@pytest.fixture
def pushgateway() -> Iterator[str]:
    yield from _serve(PUSHGATEWAY)


def test_node_exporter_reads_two_writers_files(node_exporter, textfile_dir):
    drift = Metrics()
    drift.drift(HOST, "max-model-len", True)
    drift.drift(HOST, "gpu-product", False)
    drift.override_expiry(HOST, "enforce-eager", 1735787045)
    drift.checked(1735787000)
    write_textfile(textfile_dir / "vllm-remedy-drift.prom", drift)
    deploys = Metrics()
    deploys.remediation("rollback", "applied")
    write_textfile(textfile_dir / "vllm-remedy-deploys.prom", deploys)
    scraped = _get(node_exporter + "/metrics")
    assert "node_textfile_scrape_error 0" in scraped.splitlines()
    assert parse_samples(scraped, DRIFT_DETECTED) == {(HOST, "max-model-len"): 1.0, (HOST, "gpu-product"): 0.0}
    assert parse_samples(scraped, REMEDIATIONS) == {("rollback", "applied"): 1.0}
    assert parse_samples(scraped, LAST_CHECK) == {(): 1735787000.0}


def test_node_exporter_flags_a_broken_file(node_exporter, textfile_dir):
    """Control: the collector does report a file it cannot parse (so the test above can fail)."""
    (textfile_dir / "broken.prom").write_text('vllm_remedy_drift_detected{host="x} 1\n')
    assert "node_textfile_scrape_error 1" in _get(node_exporter + "/metrics").splitlines()


def test_push_replaces_group_and_keeps_counters(pushgateway):
    first = Metrics()
    first.drift(HOST, "max-model-len", True)
    first.remediation("expire", "applied", 2)
    first.checked(1735787000)
    push(pushgateway, first, grouping={"cluster": "prod/eu"})
    scraped = _get(pushgateway + "/metrics")
    where = {"job": "vllm-remedy", "cluster": "prod/eu"}
    assert parse_samples(scraped, DRIFT_DETECTED, where) == {(HOST, "max-model-len"): 1.0}
    assert parse_samples(scraped, REMEDIATIONS, where) == {("expire", "applied"): 2.0}

    second = Metrics()  # the drift was fixed; one more expiry
    second.drift(HOST, "max-model-len", False)
    second.remediation("expire", "applied")
    second.checked(1735787600)
    push(pushgateway, second, grouping={"cluster": "prod/eu"})
    other = Metrics()  # another cluster's group is its own
    other.remediation("expire", "applied", 10)
    push(pushgateway, other, grouping={"cluster": "staging"})
    scraped = _get(pushgateway + "/metrics")
    assert parse_samples(scraped, DRIFT_DETECTED, where) == {(HOST, "max-model-len"): 0.0}
    assert parse_samples(scraped, REMEDIATIONS, where) == {("expire", "applied"): 3.0}
    assert parse_samples(scraped, LAST_CHECK, where) == {(): 1735787600.0}
    assert parse_samples(scraped, REMEDIATIONS, {"cluster": "staging"}) == {("expire", "applied"): 10.0}


def test_push_after_a_failed_host_keeps_what_was_published_for_it(pushgateway):
    """A host the run could not check keeps its published drift, and the last-check time does not move."""
    first = Metrics()
    first.drift(HOST, "max-model-len", True)
    first.drift("@k8s/prod/llm/other", "max-model-len", False)
    first.checked(1735787000)
    push(pushgateway, first, grouping={"cluster": "prod/us"})
    second = Metrics()  # HOST failed this time; the other host was fixed... and checked again
    second.drift("@k8s/prod/llm/other", "max-model-len", True)
    push(pushgateway, second, grouping={"cluster": "prod/us"}, unchecked={HOST})
    where = {"job": "vllm-remedy", "cluster": "prod/us"}
    scraped = _get(pushgateway + "/metrics")
    assert parse_samples(scraped, DRIFT_DETECTED, where) == {(HOST, "max-model-len"): 1.0,
                                                             ("@k8s/prod/llm/other", "max-model-len"): 1.0}
    assert parse_samples(scraped, LAST_CHECK, where) == {(): 1735787000.0}


def test_push_refused_and_unreachable_are_one_line(pushgateway):
    with pytest.raises(PushError) as refused:
        push(pushgateway, Metrics(), grouping={"bad-name": "x"}, keep_counters=False)
    assert str(refused.value).startswith(f"{pushgateway}/metrics/job/vllm-remedy/bad-name/x: Pushgateway answered "
                                         "HTTP 400")
    assert "\n" not in str(refused.value)
    port = _free_port()
    with pytest.raises(PushError, match=rf"^http://127\.0\.0\.1:{port}/metrics: cannot reach the Pushgateway"):
        push(f"http://127.0.0.1:{port}", Metrics(), timeout=2)
