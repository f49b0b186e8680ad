"""The real Alertmanager (Debian's, unpacked by scripts/get_tools.py; tests/fixtures/alertmanager.py) posts to
`vllm-remedy respond`, configured with the receiver snippet manifests/responder.yaml ships; amtool checks that
snippet."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import yaml

from fixtures import pyinfra_run
from fixtures.alertmanager import alertmanager, shipped_config, tool
from fixtures.pyinfra_run import Rehearsal
from fixtures.responder import TOKEN, start, write_inventory
from fixtures.restore_world import NAME, NS, deployment, incident, replicaset
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal


def test_amtool_accepts_the_shipped_receiver(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    config = tmp_path / "alertmanager.yml"
    config.write_text(yaml.safe_dump(shipped_config("http://127.0.0.1:9096/alertmanager", token)))
    got = subprocess.run([str(tool("amtool")), "check-config", str(config)], capture_output=True, text=True,
                         timeout=60)
    assert got.returncode == 0 and "SUCCESS" in got.stdout, got.stdout + got.stderr
    broken = tmp_path / "broken.yml"  # control: amtool does refuse a receiver the route does not define
    broken.write_text(config.read_text().replace("name: vllm-remedy", "name: vllm-remedy-typo"))
    assert subprocess.run([str(tool("amtool")), "check-config", str(broken)], capture_output=True,
                          timeout=60).returncode != 0


def test_alertmanager_pages_the_responder_which_restores_the_crash_loop(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    token = rehearsal.tmp / "token"
    token.write_text(TOKEN + "\n")
    responder = start(rehearsal, write_inventory(rehearsal.tmp, "auto"))
    am = alertmanager(rehearsal.tmp, shipped_config(responder.url + "/alertmanager", token))
    try:
        url = next(am)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        page = [{"labels": {"alertname": "VllmCrashLoopBackOff", "namespace": NS, "deployment": NAME,
                            "severity": "critical"}, "annotations": {"summary": "crash loop"}, "startsAt": now}]
        request = urllib.request.Request(url + "/api/v2/alerts", data=json.dumps(page).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        assert urllib.request.urlopen(request, timeout=10).status == 200
        line = responder.wait_log(r"VllmCrashLoopBackOff \[[0-9a-f]{16}\] run: ")[0]  # Alertmanager's fingerprint
        responder.wait_log(r"VllmCrashLoopBackOff on @k8s/rehearsal/llm/llama-8b: deploys/restore.py remediated")
        assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])
        (note,) = responder.notes.glob("*.json")
        doc = json.loads(note.read_text())
        assert doc["alert"]["fingerprint"] in line and doc["alert"]["labels"]["deployment"] == NAME
        # a 401 as a status, not the digits inside a note's timestamped file name (20261204T214012Z)
        assert not re.search(r"(?<![0-9A-Za-z])401(?![0-9])", responder.text()), responder.text()
        assert "webhook refused" not in responder.text()
    finally:
        am.close()
        responder.stop()
