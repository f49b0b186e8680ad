"""The rehearsal cluster's kube-state-metrics endpoint: the series the rendered alert rules read, with
kube-state-metrics' names and labels, following a real crash loop — and text the real promtool accepts."""

from __future__ import annotations

import re
import subprocess
import urllib.error
import urllib.request

import pytest

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import NAME, NS, incident, wait_until

rehearsal = pyinfra_run.rehearsal
PROMTOOL = ROOT / ".tools/prometheus/usr/bin/promtool"


def scrape(rehearsal: Rehearsal, cluster: str = "rehearsal") -> str:
    with urllib.request.urlopen(f"{rehearsal.server.url}/kube-state-metrics/{cluster}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def series(text: str, name: str) -> list[dict[str, str]]:
    """Label sets (plus ``value``) of every sample of ``name``."""
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1:].rsplit("} ", 1)
            out.append({**dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels)), "value": value})
    return out


def test_a_crash_loop_shows_as_kube_state_metrics_shows_it(rehearsal: Rehearsal) -> None:
    healthy = scrape(rehearsal)
    (dep,) = [s for s in series(healthy, "kube_deployment_status_replicas_available") if s["deployment"] == NAME]
    assert dep["namespace"] == NS and dep["value"] == "2"
    assert not series(healthy, "kube_pod_container_status_waiting_reason")
    incident(rehearsal)
    texts: list[str] = []

    def backing_off() -> bool:  # between restarts: the container also runs (and crashes) part of the time
        texts.append(scrape(rehearsal))
        return any(s["reason"] == "CrashLoopBackOff"
                   for s in series(texts[-1], "kube_pod_container_status_waiting_reason"))

    wait_until(backing_off, what="a CrashLoopBackOff series")
    text = texts[-1]
    waiting = [s for s in series(text, "kube_pod_container_status_waiting_reason") if s["namespace"] == NS]
    assert any(s["reason"] == "CrashLoopBackOff" and s["container"] == "vllm" and s["pod"].startswith(NAME + "-")
               and s["uid"] and s["value"] == "1" for s in waiting)
    restarts = [s for s in series(text, "kube_pod_container_status_restarts_total") if s["namespace"] == NS]
    assert any(int(s["value"]) >= 1 for s in restarts)
    exits = {s["pod"]: s["value"] for s in series(text, "kube_pod_container_status_last_terminated_exitcode")}
    reasons = {s["pod"]: s["reason"] for s in series(text, "kube_pod_container_status_last_terminated_reason")}
    crashed = [p for p in exits if p.startswith(NAME + "-")]
    assert crashed and all(exits[p] == "1" and reasons[p] == "Error" for p in crashed)  # vLLM's exit, not OOMKilled
    info = {s["pod"]: s for s in series(text, "kube_pod_container_info") if s["container"] == "vllm"}
    assert all(re.match(r".*vllm.*", info[p]["image"]) for p in crashed)
    labels = {s["pod"]: s for s in series(text, "kube_pod_labels")}
    assert all(labels[p]["label_app"] == NAME for p in crashed)


def test_promtool_accepts_the_text_and_unknown_paths_are_refused(rehearsal: Rehearsal) -> None:
    if not PROMTOOL.is_file():
        pytest.skip(f"promtool not at {PROMTOOL}: run scripts/get_tools.py (needs apt-get download)")
    got = subprocess.run([str(PROMTOOL), "check", "metrics"], input=scrape(rehearsal), capture_output=True,
                         text=True, timeout=60)
    assert got.returncode == 0, got.stdout + got.stderr
    for path in ("/kube-state-metrics/nope/metrics", "/kube-state-metrics/rehearsal"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(rehearsal.server.url + path, timeout=10)
        assert err.value.code == 404
