"""`vllm-remedy respond` end to end: a real v4 payload POSTed to the real CLI restores the crash-looping
Deployment of the rehearsal cluster through the real pyinfra CLI, and the incident is on the record."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.responder import TOKEN, Responder, alert, payload, start, start_chat, write_inventory
from fixtures.restore_world import NAME, NS, deployment, incident, pods, replicaset, settled
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
PREDICTION = "prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens, maximum concurrency 12.08x"


def _events(rehearsal: Rehearsal) -> list[dict]:
    got = rehearsal.client().request("GET", f"/api/v1/namespaces/{NS}/events")
    return [e for e in got["items"] if e.get("reportingComponent") == "vllm-remedy.io/responder"]


def _wait_metric(responder: Responder, sample: str) -> None:
    deadline = time.monotonic() + 60
    while sample not in responder.get("/metrics")[1]:
        assert time.monotonic() < deadline, f"{sample} never served:\n{responder.text()}"
        time.sleep(0.05)


def _crashing_pod(rehearsal: Rehearsal) -> str:
    return next(p["metadata"]["name"] for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp"))


def test_a_crash_loop_page_is_restored_recorded_and_a_repeat_does_nothing(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    chat = start_chat()
    # the cool-down counts in cluster time (600x here): 12h holds for the minute of wall time the test takes
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto", cooldown="12h"), "--chat-webhook", chat.url)
    try:
        page = payload([alert("VllmCrashLoopBackOff", "c0ffee0001", namespace=NS, pod=_crashing_pod(rehearsal),
                              container="vllm")])
        assert responder.post(page) == (200, {"status": "accepted", "alerts": 1})
        _wait_metric(responder, "vllm_remedy_respond_actions_running 1.0")  # answered while the deploy runs
        assert responder.get("/healthz") == (200, "ok\n")
        responder.wait_log(r"@k8s/rehearsal/llm/llama-8b: VllmCrashLoopBackOff on .* remediated")
        after = deployment(rehearsal)
        assert templates_equal(after["spec"]["template"], good["spec"]["template"])
        assert after["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "restore"

        events = _events(rehearsal)
        assert sorted(e["reason"] for e in events) == ["Remediated", "RemediationStarted"], events
        done = next(e for e in events if e["reason"] == "Remediated")
        assert done["type"] == "Normal" and done["source"] == {"component": "vllm-remedy-responder"}
        assert done["involvedObject"]["kind"] == "Deployment" and done["involvedObject"]["name"] == NAME
        assert "roll back deployment llm/llama-8b from revision 15 to revision 14" in done["message"]
        assert PREDICTION in done["message"]

        (note,) = sorted(responder.notes.glob("*.json"))
        doc = json.loads(note.read_text())
        assert (doc["result"], doc["deploy"], doc["host"]) == ("remediated", "restore", "@k8s/rehearsal/llm/llama-8b")
        assert any(line.startswith("step 2 — startup log:") for line in doc["diagnosis"])
        assert "+    nvidia.com/gpu.product: NVIDIA-L40S" in doc["diff"]
        assert doc["prediction"][0].startswith(PREDICTION) and doc["timeToRestoreSeconds"] > 0
        assert note.with_suffix(".md").read_text().startswith(f"# Incident {doc['id']}")
        assert len(chat.received) == 1 and "remediated" in chat.received[0]["text"]

        before = deployment(rehearsal)
        assert responder.post(page)[0] == 200  # Alertmanager's repeat: same fingerprint, inside the cool-down
        responder.wait_log(r"\[c0ffee0001\] skipped: duplicate: alert c0ffee0001")
        again = payload([alert("VllmCudaOomRestart", "c0ffee0002", namespace=NS, deployment=NAME)])
        assert responder.post(again)[0] == 200  # another alert for the host: the host's cool-down
        responder.wait_log(r"\[c0ffee0002\] skipped: .* is in cool-down for another")
        assert len(list(responder.notes.glob("*.json"))) == 1 and len(_events(rehearsal)) == 2
        assert deployment(rehearsal)["metadata"]["generation"] == before["metadata"]["generation"]
        metrics = responder.get("/metrics")[1]
        assert 'vllm_remedy_respond_alerts_total{alertname="VllmCrashLoopBackOff",decision="skipped"} 1.0' in metrics
        assert 'vllm_remedy_respond_actions_total{deploy="restore",result="remediated"} 1.0' in metrics
    finally:
        responder.stop()
        chat.server.shutdown()


def test_dry_run_mode_writes_nothing_to_the_cluster(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    before = settled(rehearsal)
    sets = {rs["metadata"]["name"]: rs["metadata"]["resourceVersion"]
            for rs in rehearsal.client().list_replicasets(NS, "app=llama-8b")}
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "dry-run"))
    try:
        page = payload([alert("VllmCrashLoopBackOff", "d00d0001", namespace=NS, deployment=NAME)])
        assert responder.post(page)[0] == 200
        responder.wait_log(r"VllmCrashLoopBackOff on .* dry-run \(dry run, nothing written\)")
        (note,) = sorted(responder.notes.glob("*.json"))
        doc = json.loads(note.read_text())
        assert doc["result"] == "dry-run" and doc["mode"] == "dry-run"
        assert doc["changes"] == ["roll back deployment llm/llama-8b from revision 15 to revision 14 "
                                  "(llama-8b-6b765dc795) — chosen by rule: pinned in policy"]
        assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert {rs["metadata"]["name"]: rs["metadata"]["resourceVersion"]
                for rs in rehearsal.client().list_replicasets(NS, "app=llama-8b")} == sets
        assert _events(rehearsal) == []
    finally:
        responder.stop()


def test_bad_or_unauthenticated_webhooks_and_alerts_naming_no_host_change_nothing(rehearsal: Rehearsal) -> None:
    before = deployment(rehearsal)
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto"))
    try:
        good = payload([alert("VllmCrashLoopBackOff", "bad00001", namespace=NS, deployment=NAME)])
        wrong = {"error": "Authorization: expected the responder's bearer token"}
        assert responder.post(good, token=None) == (401, wrong)
        assert responder.post(good, token="guess") == (401, wrong)
        assert responder.post(b"{nope", token=TOKEN)[0] == 400
        assert responder.post(b'{"version": "3", "alerts": []}') == (
            400, {"error": "version: expected \"4\" (Alertmanager's webhook payload), got '3'"})
        assert responder.post(good, path="/other")[0] == 404
        unknown = payload([alert("VllmCrashLoopBackOff", "bad00002", namespace="other", deployment=NAME),
                           alert("VllmCrashLoopBackOff", "bad00003", "resolved", namespace=NS, deployment=NAME),
                           alert("VllmRemedyDriftDetected", "bad00004", host="@k8s/rehearsal/llm/llama-8b")])
        assert responder.post(unknown) == (200, {"status": "accepted", "alerts": 3})
        responder.wait_log(r"\[bad00002\] ignored: alert VllmCrashLoopBackOff: other/llama-8b names no inventory host")
        responder.wait_log(r"\[bad00003\] resolved: resolved: nothing to do")
        responder.wait_log(r"\[bad00004\] ignored: alert VllmRemedyDriftDetected: no deploy answers it")
        assert len(responder.wait_log(r"inventory \S+: 1 host\(s\) loaded")) == 1  # at start, not per notification
        assert responder.get("/healthz") == (200, "ok\n")
        assert "run:" not in responder.text() and not responder.notes.exists() and _events(rehearsal) == []
        assert deployment(rehearsal)["spec"] == before["spec"]
        responder.stop()  # SIGTERM, as the kubelet stops it
        assert responder.proc.returncode == 0, responder.text()
    finally:
        responder.stop()


def test_a_recent_action_stamped_on_the_deployment_keeps_the_cool_down_across_restarts(rehearsal: Rehearsal) -> None:
    """A fresh responder remembers nothing, but the Deployment does: the last writing deploy stamped when (in the
    cluster's clock, the API server's Date, as the deploys stamp it)."""
    rehearsal.cluster.clock.set_speed(60.0)  # the 10m cool-down lasts 10 s of the test's time
    now = datetime.fromtimestamp(rehearsal.client().server_time(), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rehearsal.change(lambda d: d["metadata"].setdefault("annotations", {}).update(
        {"vllm-remedy.io/last-action-at": now, "vllm-remedy.io/last-action": "restore"}))
    before = deployment(rehearsal)
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto"))
    try:
        assert responder.post(payload([alert("VllmCudaOomRestart", "5ea1", namespace=NS, deployment=NAME)]))[0] == 200
        responder.wait_log(rf"\[5ea1\] skipped: @k8s/rehearsal/llm/llama-8b: cool-down: last action at {now} "
                           r"by restore \(\d+s left\)")
        assert " run: " not in responder.text() and not responder.notes.exists() and _events(rehearsal) == []
        assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    finally:
        responder.stop()


def test_no_token_or_a_bad_inventory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    def respond(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "vllm_remedy", "respond", *args], capture_output=True,
                              text=True, timeout=60, env={"PATH": "/usr/bin:/bin", **(env or {})})

    inv = write_inventory(tmp_path, "auto")
    got = respond("-i", inv)
    assert (got.returncode, got.stderr.splitlines()[-1]) == (
        2, "vllm-remedy: error: no bearer token: pass --token-file or set VLLM_REMEDY_RESPOND_TOKEN")
    got = respond("-i", str(tmp_path / "missing.py"), env={"VLLM_REMEDY_RESPOND_TOKEN": "t"})
    assert (got.returncode, got.stderr.splitlines()[-1]) == (
        2, f"vllm-remedy: error: {tmp_path / 'missing.py'}: no such inventory file")
    got = respond("-i", inv, "--listen", "nowhere", env={"VLLM_REMEDY_RESPOND_TOKEN": "t"})
    assert got.returncode == 2 and got.stderr.splitlines()[-1].endswith("--listen nowhere: expected HOST:PORT, "
                                                                         "e.g. 127.0.0.1:9096")


def test_a_gitops_managed_deployment_is_refused_and_the_refusal_is_on_the_record(rehearsal: Rehearsal) -> None:
    """policy gitops: refuse (llama-8b's) on an Argo CD-tracked Deployment: the deploy writes nothing and says
    why; the responder ends the incident as refused, with a Warning Event carrying that line."""
    rehearsal.change(lambda d: d["metadata"].setdefault("annotations", {}).update(
        {"argocd.argoproj.io/tracking-id": "llm-app:apps/Deployment:llm/llama-8b"}))
    incident(rehearsal)
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto"))
    try:
        template = deployment(rehearsal)["spec"]["template"]
        assert responder.post(payload([alert("VllmCudaOomRestart", "a1901", namespace=NS, deployment=NAME)]))[0] == 200
        responder.wait_log(r"VllmCudaOomRestart on .* refused")
        assert deployment(rehearsal)["spec"]["template"] == template
        (refused,) = [e for e in _events(rehearsal) if e["reason"] == "RemediationRefused"]
        assert refused["type"] == "Warning" and "managed by Argo CD Application" in refused["message"], refused
        doc = json.loads(wait_for_note(responder.notes).read_text())
        assert doc["result"] == "refused" and "managed by Argo CD" in doc["failure"]
        assert doc["timeToRestoreSeconds"] is None
    finally:
        responder.stop()


def _l40s_pool_gone(rehearsal: Rehearsal) -> None:
    """The L40S pool is cordoned (the reservation ended): no revision pinned to it can be scheduled."""
    client = rehearsal.client()
    for node in client.list_nodes():
        if node["metadata"]["labels"].get("nvidia.com/gpu.product") == "NVIDIA-L40S":
            client.request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", content_type=
                           "application/json-patch+json", body=[{"op": "add", "path": "/spec/unschedulable",
                                                                  "value": True}])


def test_nothing_predicted_to_serve_stops_it_and_says_why(rehearsal: Rehearsal) -> None:
    """The deploy refuses when no revision and no budget change is predicted to serve on a schedulable GPU; the
    responder writes nothing to the template and puts the deploy's reason on the record."""
    _l40s_pool_gone(rehearsal)
    incident(rehearsal)
    template = deployment(rehearsal)["spec"]["template"]
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto"))
    try:
        assert responder.post(payload([alert("VllmCudaOomRestart", "f17", namespace=NS, deployment=NAME)]))[0] == 200
        responder.wait_log(r"VllmCudaOomRestart on .* refused")
        assert deployment(rehearsal)["spec"]["template"] == template
        (refused,) = [e for e in _events(rehearsal) if e["reason"] == "RemediationRefused"]
        doc = json.loads(wait_for_note(responder.notes).read_text())
        assert refused["type"] == "Warning" and "no earlier revision is predicted to serve" in doc["failure"]
        assert doc["failure"].startswith("refused: ")  # the deploy's own line; the Event says "refused" once
        assert refused["message"].startswith("VllmCudaOomRestart on @k8s/rehearsal/llm/llama-8b: deploys/restore.py "
                                             f"refused: {doc['failure'].removeprefix('refused: ')[:300]}")
        assert "budget: pin NVIDIA-L40S: no schedulable NVIDIA-L40S capacity" in doc["failure"]
    finally:
        responder.stop()


def test_kv_cache_pressure_runs_the_load_guard(rehearsal: Rehearsal) -> None:
    """Step 5's alert goes to deploys/load_guard.py for the pod's Deployment, through the same CLI path."""
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto"))
    try:
        page = payload([alert("VllmKvCacheUsageHigh", "4ee1", namespace=NS, pod=_crashing_pod(rehearsal),
                              model_name="meta-llama/Llama-3.1-8B-Instruct")])
        assert responder.post(page)[0] == 200
        line = responder.wait_log(r"VllmKvCacheUsageHigh on .*deploys/load_guard\.py (remediated|nothing-to-change)")
        doc = json.loads(wait_for_note(responder.notes).read_text())
        # the seed's revision already sits within llama-8b's load_shedding caps: the run succeeds, changing nothing
        assert (doc["deploy"], doc["result"]) == ("load_guard", "nothing-to-change") and "nothing-to-change" in line[0]
        assert sorted(e["reason"] for e in _events(rehearsal)) == ["NothingToChange", "RemediationStarted"]
    finally:
        responder.stop()


def test_mode_off_logs_the_page_and_does_nothing(rehearsal: Rehearsal) -> None:
    before = deployment(rehearsal)
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "off"))
    try:
        assert responder.post(payload([alert("VllmCrashLoopBackOff", "0ff1", namespace=NS, deployment=NAME)]))[0] == 200
        responder.wait_log(r"\[0ff1\] skipped: @k8s/rehearsal/llm/llama-8b: policy respond.mode is off")
        assert not responder.notes.exists() and _events(rehearsal) == []
        assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    finally:
        responder.stop()


def wait_for_note(folder: Path, timeout: float = 30.0) -> Path:
    """The incident note's JSON, once written: the responder logs its result line before it writes the note."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(folder.glob("*.json"))
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no incident note in {folder} after {timeout:.0f}s")
