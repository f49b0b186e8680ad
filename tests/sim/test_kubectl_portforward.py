"""Port-forward to a simulated vLLM pod, as real kubectl 1.32 (SPDY tunnelled in WebSocket) and the official
Python client (v4.channel.k8s.io) do it: an HTTP client on the forwarded port reaches vLLM's /health,
/v1/models and /metrics."""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from fixtures import sim_world
from vllm_remedy.sim.api import spdy

runbook_sim = sim_world.runbook_sim
V = "32"


def _serving_pod(sim: sim_world.Sim) -> str:
    return sorted(p["metadata"]["name"] for p in sim.clusters["a"].store.list("pods", "llm")[0])[0]


@contextmanager
def port_forward(sim: sim_world.Sim, *args: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """``kubectl port-forward ... :<remote>``: yields the local port kubectl announced, then stops it."""
    binary = sim_world.require_kubectl(V)
    cmd = [str(binary), "--kubeconfig", str(sim.kubeconfig), "--context", "a", "--cache-dir",
           str(sim.tmp / "kube-cache"), "-n", "llm", "port-forward", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HOME": str(sim.tmp)})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Forwarding from 127.0.0.1:PORT -> 8000", or EOF if kubectl failed
        found = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> \d+", line)
        if found is None:
            proc.kill()
            pytest.fail(f"kubectl port-forward did not start: {line!r} {proc.communicate(timeout=10)[1]}")
        yield int(found.group(1)), proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=20) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_dictionary_is_the_spdy3_one():
    """The zlib dictionary is byte-exact or every header block fails (Adler-32 of the SPDY/3 draft's)."""
    import zlib

    assert (len(spdy.DICTIONARY), zlib.adler32(spdy.DICTIONARY)) == (1423, 3821447106)


def test_kubectl_port_forward_reaches_vllm_health_models_and_metrics(runbook_sim):
    sim_world.require_kubectl(V)
    pod = _serving_pod(runbook_sim)
    with port_forward(runbook_sim, f"pod/{pod}", ":8000") as (port, proc):
        assert _get(port, "/health") == (200, "")
        status, models = _get(port, "/v1/models")
        assert status == 200
        assert [m["id"] for m in json.loads(models)["data"]] == ["meta-llama/Llama-3.1-8B-Instruct"]
        status, metrics = _get(port, "/metrics")
        assert status == 200 and "vllm:" in metrics
        assert proc.poll() is None  # still forwarding after three connections
        out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                              f"http://127.0.0.1:{port}/health"], capture_output=True, text=True, timeout=30)
        assert out.stdout == "200", out.stderr


def test_kubectl_port_forward_to_a_port_nothing_listens_on_reports_refused(runbook_sim):
    sim_world.require_kubectl(V)
    pod = _serving_pod(runbook_sim)
    with port_forward(runbook_sim, f"pod/{pod}", ":9999") as (port, proc):
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            _get(port, "/health")
        proc.kill()
        _, err = proc.communicate(timeout=10)
    assert "connect: connection refused" in err and "9999" in err


def test_python_client_port_forward_over_v4_channels(runbook_sim):
    from kubernetes import client, config
    from kubernetes.stream import portforward

    api = client.CoreV1Api(config.new_client_from_config(str(runbook_sim.kubeconfig), context="a"))
    forward = portforward(api.connect_get_namespaced_pod_portforward, _serving_pod(runbook_sim), "llm",
                          ports="8000")
    sock = forward.socket(8000)
    sock.settimeout(20)
    sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK"), data
    assert json.loads(body)["data"][0]["id"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert forward.error(8000) is None


def test_spdy_without_websocket_is_a_clear_error_not_a_hang(runbook_sim):
    """kubectl's SPDY fallback (and kubectl 1.20) get a 400 naming the limit, not a stalled upgrade."""
    status, _, body = sim_world.call(
        runbook_sim.url(), "POST", f"/api/v1/namespaces/llm/pods/{_serving_pod(runbook_sim)}/portforward",
        raw=b"")
    assert status == 400
    assert "port-forward needs a WebSocket upgrade (kubectl >= 1.31" in body["message"]


def test_port_forward_through_the_deployment_and_the_service(runbook_sim):
    """kubectl picks a pod of deploy/ or svc/ itself, and maps the Service port to its named targetPort."""
    import yaml

    sim_world.require_kubectl(V)
    with port_forward(runbook_sim, "deploy/llama-8b", ":8000") as (port, _):
        assert _get(port, "/health") == (200, "")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "llama-8b", "namespace": "llm"},
               "spec": {"selector": {"app": "llama-8b"}, "ports": [{"port": 80, "targetPort": "http"}]}}
    assert runbook_sim.kubectl(V, "apply", "-f", "-", stdin=yaml.safe_dump(service)).returncode == 0
    with port_forward(runbook_sim, "svc/llama-8b", ":80") as (port, _):
        status, body = _get(port, "/v1/models")
        assert status == 200 and "meta-llama/Llama-3.1-8B-Instruct" in body
