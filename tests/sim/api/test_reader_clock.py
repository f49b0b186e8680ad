"""reader_clock: which times a person's tool gets moved onto its wall clock, and how the shift is held."""

from __future__ import annotations

import time

from vllm_remedy.sim.api import reader_clock
from vllm_remedy.sim.api.http import Request
from vllm_remedy.sim.clock import Clock, parse_timestamp

KUBECTL = {"user-agent": "kubectl/v1.32.2 (linux/amd64) kubernetes/67a30c0"}


def test_every_time_field_moves_with_its_precision_and_free_form_text_stays():
    doc = {"metadata": {"creationTimestamp": "2026-01-01T01:00:00Z", "annotations": {"restartedAt":
                        "2026-01-01T01:00:00Z"}, "labels": {"x": "y"},
                        "managedFields": [{"time": "2026-01-01T01:00:00Z", "fieldsV1": {"f:lastTransitionTime": {}}}]},
           "eventTime": "2026-01-01T01:00:00.250000Z", "data": {"startTime": "2026-01-01T01:00:00Z"},
           "status": {"containerStatuses": [{"state": {"running": {"startedAt": "2026-01-01T01:00:00Z"}}}],
                      "conditions": [{"lastProbeTime": None, "lastTransitionTime": "not a time"}]},
           "rows": [{"cells": ["admin", "2026-01-01T01:00:00Z", 3]}]}
    got = reader_clock.move(doc, -3600.0)
    assert got["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert got["metadata"]["managedFields"][0]["time"] == "2026-01-01T00:00:00Z"
    assert got["eventTime"] == "2026-01-01T00:00:00.250000Z"
    assert got["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] == "2026-01-01T00:00:00Z"
    assert got["rows"][0]["cells"] == ["admin", "2026-01-01T00:00:00Z", 3]
    assert got["metadata"]["annotations"] == doc["metadata"]["annotations"] and got["data"] == doc["data"]
    assert got["status"]["conditions"] == doc["status"]["conditions"]
    assert doc["metadata"]["creationTimestamp"] == "2026-01-01T01:00:00Z"  # a copy: stored objects stay as they are
    capped = reader_clock.move(doc, 0.0, cap=parse_timestamp("2026-01-01T00:30:00Z"))
    assert capped["metadata"]["creationTimestamp"] == "2026-01-01T00:30:00Z"  # never in the reader's future


def test_the_shift_is_held_per_connection_and_only_for_readers():
    clock = Clock(speed=600)
    time.sleep(0.05)
    assert reader_clock.held_shift(Request("GET", "/api", headers={"user-agent": "vllm-remedy"}), "a", clock) is None
    conn: dict[str, object] = {}
    first = reader_clock.held_shift(Request("GET", "/api", headers=KUBECTL, connection=conn), "a", clock)
    assert first is not None and -40 < first < -25  # 0.05 s at 600x: the cluster is ~30 s ahead
    time.sleep(0.05)
    again = reader_clock.held_shift(Request("GET", "/api", headers=KUBECTL, connection=conn), "a", clock)
    other = reader_clock.held_shift(Request("GET", "/api", headers=KUBECTL, connection={}), "a", clock)
    assert again == first and other is not None and other < first - 20  # a new command reads the new ages


def test_since_time_goes_back_onto_the_cluster_clock():
    req = Request("GET", "/api/v1/namespaces/llm/pods/p/log", query={"sinceTime": "2026-01-01T00:00:00Z"},
                  headers=KUBECTL)
    reader_clock.received(req, -90.0)
    assert req.query["sinceTime"] == "2026-01-01T00:01:30.000000Z"
