"""The real Alertmanager (Debian's, unpacked by scripts/get_tools.py) posts to `vllm-remedy respond`, configured
with the receiver snippet manifests/responder.yaml ships; amtool checks that snippet."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.responder import TOKEN, start, write_inventory
from fixtures.restore_world import NAME, NS, deployment, incident, replicaset
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
BIN = ROOT / ".tools/prometheus-alertmanager/usr/bin"


def _tool(name: str) -> Path:
    path = BIN / name
    if not path.is_file():
        pytest.skip(f"{name} not at {path}: run scripts/get_tools.py (needs apt-get download)")
    return path


def shipped_config(url: str, token_file: Path) -> dict[str, Any]:
    """alertmanager.yml around the snippet in manifests/responder.yaml's header, pointed at ``url``."""
    text = (ROOT / "manifests" / "responder.yaml").read_text().split("# Alertmanager (alertmanager.yml)", 1)[1]
    lines = []
    for line in text.splitlines()[1:]:
        if not line.startswith("#   ") and line != "#":
            break
        lines.append(line[4:])
    snippet = yaml.safe_load("\n".join(lines))
    (hook,) = snippet["receivers"][0]["webhook_configs"]
    assert hook["url"] == "http://vllm-remedy-responder.llm.svc:9096/alertmanager"
    hook["url"] = url
    hook["http_config"]["authorization"]["credentials_file"] = str(token_file)
    route = {"receiver": "people", "group_wait": "0s", "group_interval": "1s", "repeat_interval": "1h",
             **snippet["route"]}
    return {"route": route, "receivers": [{"name": "people"}, *snippet["receivers"]]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _with_templates(tmp: Path) -> list[str]:
    """The command prefix that shows Alertmanager Debian's templates where Debian's build reads them
    (/usr/share/prometheus/alertmanager, a fixed path) without installing anything: an overlay of /usr/share in a
    mount namespace of its own, seen by that process alone."""
    upper, work = tmp / "usr-share" / "upper", tmp / "usr-share" / "work"
    (upper / "prometheus").mkdir(parents=True)
    work.mkdir()
    shutil.copytree(ROOT / ".tools/prometheus-alertmanager/usr/share/prometheus/alertmanager",
                    upper / "prometheus" / "alertmanager")
    prefix = ["unshare", "-m", "--propagation", "private", "sh", "-c",
              f"mount -t overlay overlay -o lowerdir=/usr/share,upperdir={upper},workdir={work} /usr/share"
              ' && exec "$0" "$@"']
    probe = subprocess.run([*prefix, "test", "-f", "/usr/share/prometheus/alertmanager/default.tmpl"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot give Alertmanager its templates (needs a mount namespace): {probe.stderr.strip()}")
    return prefix


def alertmanager(tmp: Path, config: dict[str, Any]) -> Iterator[str]:
    path = tmp / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    port = _free_port()
    binary = _tool("prometheus-alertmanager")
    if shutil.which("unshare") is None:
        pytest.skip("unshare not found: Alertmanager cannot be shown its templates")
    proc = subprocess.Popen([*_with_templates(tmp), str(binary), f"--config.file={path}",
                             f"--storage.path={tmp / 'am-data'}", f"--web.listen-address=127.0.0.1:{port}",
                             "--cluster.listen-address="], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    pytest.fail(f"alertmanager did not start: {err[-800:]}")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_amtool_accepts_the_shipped_receiver(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    config = tmp_path / "alertmanager.yml"
    config.write_text(yaml.safe_dump(shipped_config("http://127.0.0.1:9096/alertmanager", token)))
    got = subprocess.run([str(_tool("amtool")), "check-config", str(config)], capture_output=True, text=True,
                         timeout=60)
    assert got.returncode == 0 and "SUCCESS" in got.stdout, got.stdout + got.stderr
    broken = tmp_path / "broken.yml"  # control: amtool does refuse a receiver the route does not define
    broken.write_text(config.read_text().replace("name: vllm-remedy", "name: vllm-remedy-typo"))
    assert subprocess.run([str(_tool("amtool")), "check-config", str(broken)], capture_output=True,
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
        assert "401" not in responder.text() and "webhook refused" not in responder.text()
    finally:
        am.close()
        responder.stop()
