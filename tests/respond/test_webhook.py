"""Alertmanager's v4 payload: what is accepted, and the one line for what is not."""

from __future__ import annotations

import json

import pytest

from vllm_remedy.respond.webhook import PayloadError, parse

ALERT = {"status": "firing", "labels": {"alertname": "VllmCrashLoopBackOff", "namespace": "llm", "pod": "p"},
         "annotations": {"summary": "s"}, "startsAt": "2026-12-03T16:00:00.123456789Z",
         "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://prom/graph", "fingerprint": "a1b2c3d4e5f60718"}


def payload(**over: object) -> bytes:
    doc = {"version": "4", "groupKey": '{}:{alertname="VllmCrashLoopBackOff"}', "truncatedAlerts": 0,
           "status": "firing", "receiver": "vllm-remedy", "groupLabels": {}, "commonLabels": {},
           "commonAnnotations": {}, "externalURL": "http://am:9093", "alerts": [ALERT], **over}
    return json.dumps(doc).encode()


def test_a_real_payload_parses() -> None:
    got = parse(payload())
    assert got.receiver == "vllm-remedy"
    (alert,) = got.alerts
    assert (alert.name, alert.firing, alert.fingerprint, alert.labels["pod"]) == (
        "VllmCrashLoopBackOff", True, "a1b2c3d4e5f60718", "p")
    assert alert.starts_at.isoformat() == "2026-12-03T16:00:00.123456+00:00"


@pytest.mark.parametrize(("body", "message"), [
    (b"{not json", "body: not JSON"),
    (b"[]", "body: expected a JSON object"),
    (payload(version="3"), "version: expected \"4\""),
    (payload(alerts={}), "alerts: expected a list"),
    (payload(alerts=[{**ALERT, "status": "pending"}]), "alerts[0].status: expected firing or resolved"),
    (payload(alerts=[{**ALERT, "labels": {"namespace": "llm"}}]), "alerts[0].labels.alertname: missing"),
    (payload(alerts=[{**ALERT, "labels": {"alertname": 1}}]), "alerts[0].labels: expected a mapping of strings"),
    (payload(alerts=[{k: v for k, v in ALERT.items() if k != "fingerprint"}]), "alerts[0].fingerprint: missing"),
    (payload(alerts=[{**ALERT, "startsAt": "yesterday"}]), "alerts[0].startsAt: expected an RFC 3339 time"),
    (b"\xff\xfe", "body: not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "body: JSON nested too deeply"),
    (payload(alerts=[{**ALERT, "fingerprint": "../../etc/x"}]), "alerts[0].fingerprint: expected 1-64 lowercase hex"),
    (payload(alerts=[{**ALERT, "fingerprint": "ab\n# injected"}]), "alerts[0].fingerprint: expected 1-64"),
    (payload(alerts=[{**ALERT, "fingerprint": "a" * 65}]), "alerts[0].fingerprint: expected 1-64"),
    (payload(alerts=[{**ALERT, "startsAt": "9999-12-31T23:59:59Z"}]), "alerts[0].startsAt: expected a time in the"),
    (payload(alerts=[{**ALERT, "startsAt": "0001-01-01T00:00:00Z"}]), "alerts[0].startsAt: expected a time in the"),
])
def test_bad_payloads_are_one_line(body: bytes, message: str) -> None:
    with pytest.raises(PayloadError) as err:
        parse(body)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
