"""A refused fix is never printed under "in sync" nor exits 0: a host whose checks pass (or are unknown, accepted or
not) while the deploys' operations refuse on it is FixRefused, exit 3 in both conventions, as drift whose fix is
refused is — every deploy run there would stop at the refusal (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from vllm_remedy.drift import report
from vllm_remedy.kube.annotations import parse_rfc3339

NOW = parse_rfc3339("2026-01-01T12:00:00Z")
PIN = {"operation": "Pin the GPU type", "changes": False, "refused": "pin: no capacity", "notRun": False,
       "lines": ["refused: pin: no capacity"], "noop": None}
AFTER = {"operation": "Smallest change", "changes": False, "refused": None, "notRun": True, "lines": [], "noop": None}


def host(*statuses: str, accept: bool = False) -> dict[str, Any]:
    return {"host": "h", "error": None, "accept_unknown": accept, "fix": [PIN, AFTER],
            "checks": [{"check": f"c{i}", "status": s, "detail": ""} for i, s in enumerate(statuses)]}


@pytest.mark.parametrize(("statuses", "accept", "head"), [
    (("pass", "pass"), False, "h: FIX REFUSED: no check drifted, but a deploy run stops at a refusal"),
    (("pass", "unknown"), True, "h: FIX REFUSED: no check drifted, but a deploy run stops at a refusal"),
    (("pass", "unknown"), False, "h: UNKNOWN (c1), fix refused"),
    (("drift", "unknown"), False, "h: DRIFTED (c0), fix refused"),
])
def test_a_refused_fix_is_never_in_sync(statuses: tuple[str, ...], accept: bool, head: str) -> None:
    doc = report.drift_report({"hosts": [host(*statuses, accept=accept)]}, NOW)
    entry = doc["hosts"][0]
    assert (entry["status"], doc["status"]["result"], doc["status"]["fixRefused"]) == (
        "FixRefused", "DriftFixRefused", 1)
    assert (doc["status"]["exitCode"], doc["status"]["inSync"]) == (3, 0)
    assert report.drift_report({"hosts": [host(*statuses, accept=accept)]}, NOW, True)["status"]["exitCode"] == 3
    assert (entry["fix"]["changes"], entry["fix"]["refused"]) == (0, {"operation": "Pin the GPU type",
                                                                      "reason": "pin: no capacity"})
    text = report.render_drift(doc).splitlines()
    assert text[0] == head
    assert any(line.startswith("  fix refused: Pin the GPU type: pin: no capacity") for line in text)
    assert not any("in sync" in line for line in text[:-1]), text


def test_without_a_refusal_the_verdicts_stand() -> None:
    clean = {**host("pass"), "fix": [AFTER | {"notRun": False}]}
    assert report.host_entry(clean)["status"] == "InSync"
    assert report.host_entry({**host("pass", "unknown"), "fix": []})["status"] == "Unknown"
    assert report.host_entry({**host("drift"), "fix": []})["status"] == "Drifted"
