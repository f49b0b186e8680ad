"""Fixtures for rehearsal-cluster tests: a served SimServer, its kubeconfig, and real kubectl binaries.

kubectl is looked for at $VLLM_REMEDY_KUBECTL, the Cloud SDK's kubectl.1.32 and Debian's 1.20 unpacked
under .tools/ by scripts/get_tools.py, and identified by asking it for its version; tests
that need a given minor skip with the reason when it is absent.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from vllm_remedy.sim.api.auth import Authorizer
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.tls import ensure_cert

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = (os.environ.get("VLLM_REMEDY_KUBECTL"), "/usr/lib/google-cloud-sdk/bin/kubectl.1.32",
              str(ROOT / ".tools/kubernetes-client/usr/bin/kubectl"), shutil.which("kubectl"))


@functools.cache
def kubectls() -> dict[str, Path]:
    """Minor version ("32", "20") → a kubectl binary of that version found on this machine."""
    found: dict[str, Path] = {}
    for cand in CANDIDATES:
        if not cand or not os.access(cand, os.X_OK):
            continue
        try:
            out = subprocess.run([cand, "version", "--client", "-o", "json"], capture_output=True, text=True,
                                 timeout=30, env={**os.environ, "KUBECONFIG": "/dev/null"})
            minor = json.loads(out.stdout)["clientVersion"]["minor"].rstrip("+")
        except (OSError, ValueError, KeyError, subprocess.TimeoutExpired):
            continue
        found.setdefault(minor, Path(cand))
    return found


def require_kubectl(minor: str) -> Path:
    path = kubectls().get(minor)
    if path is None:
        pytest.skip(f"no kubectl 1.{minor} on this machine (looked at: {', '.join(c for c in CANDIDATES if c)}); "
                    "run scripts/get_tools.py")
    return path


@dataclass
class Sim:
    """A running SimServer with its clusters and a kubeconfig naming one context per cluster."""

    server: SimServer
    clusters: dict[str, Cluster]
    kubeconfig: Path
    tmp: Path
    env: dict[str, str] = field(default_factory=dict)

    def url(self, cluster: str = "a") -> str:
        return self.server.cluster_url(cluster)

    def kubectl(self, minor: str, *args: str, context: str = "a", stdin: str | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run real kubectl 1.<minor> against this server with a per-test discovery cache."""
        binary = require_kubectl(minor)
        cmd = [str(binary), "--kubeconfig", str(self.kubeconfig), "--context", context,
               "--cache-dir", str(self.tmp / f"kube-cache-{minor}"), *args]
        return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "HOME": str(self.tmp), "KUBECONFIG": str(self.kubeconfig)})


def make_sim(tmp: Path, names: tuple[str, ...] = ("a",), *, speed: float = 60.0, start: bool = False,
             auth: Authorizer | None = None, users: dict[str, str] | None = None,
             state_dir: Path | None = None) -> Sim:
    """Serve fresh clusters; with ``auth`` over HTTPS, as ``sim up`` does (kubectl sends tokens only over TLS)."""
    clusters = {n: Cluster(n, speed=speed) for n in names}
    for c in clusters.values():
        c.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"},
                                      "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        if start:
            c.start()
    tls = ensure_cert(tmp / "tls") if auth is not None else None
    server = SimServer(list(clusters.values()), auth=auth, state_dir=state_dir, tls=tls)
    server.start()
    path = server.write_kubeconfig(tmp / "kubeconfig", users, "admin" if users and "admin" in users else None)
    return Sim(server, clusters, path, tmp)


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    """One cluster "a" with namespace llm; controllers NOT running (the API alone is under test)."""
    s = make_sim(tmp_path)
    yield s
    s.server.stop()


@pytest.fixture
def live_sim(tmp_path: Path) -> Iterator[Sim]:
    """One cluster "a" with its controllers running at 60x and one L40S node."""
    s = make_sim(tmp_path, start=True)
    s.clusters["a"].store.create("nodes", gpu_node("gpu-1"))
    yield s
    for c in s.clusters.values():
        c.stop()
    s.server.stop()


def gpu_node(name: str, product: str = "NVIDIA-L40S", gpus: int = 4, ip: str = "10.0.0.5") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": product, "kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"capacity": {"nvidia.com/gpu": str(gpus), "cpu": "32", "memory": "128Gi", "pods": "110"},
                       "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "32", "memory": "128Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "addresses": [{"type": "InternalIP", "address": ip}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Ubuntu 22.04.4 LTS",
                                    "kernelVersion": "5.15.0-1057", "containerRuntimeVersion": "containerd://1.7.13"}}}


def deployment(name: str = "llama-8b", image: str = "vllm/vllm-openai:v0.8.5", replicas: int = 2) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "llm", "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{
                                      "name": "vllm", "image": image,
                                      "args": ["--model", "meta-llama/Llama-3.1-8B-Instruct",
                                               "--max-model-len", "16384"],
                                      "ports": [{"containerPort": 8000}],
                                      "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}



def nginx(name: str = "gateway") -> dict[str, Any]:
    """A Deployment that is not vLLM (a gateway beside the model servers): host expansion must skip it."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "llm", "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                                           "args": ["nginx", "-g", "daemon off;"]}]}}}}


#: The runbook's step-2 filter (``kubectl logs ... | grep -Ei "..."``).
RUNBOOK_GREP = re.compile(r"model loading took|gpu blocks|kv cache|maximum concurrency|out of memory|max seq len", re.I)
_STAMP = re.compile(r"^(\w+) \d\d-\d\d \d\d:\d\d:\d\d ")
#: What that filter shows for a healthy start of the runbook seed's good revision (vLLM 0.8.5, L40S, 16k).
HEALTHY_STEP2 = ["INFO [gpu_model_runner.py:151] Model loading took 15.0570 GiB and 72.228162 seconds",
                 "INFO [kv_cache_utils.py:133] GPU KV cache size: 197,840 tokens",
                 "INFO [kv_cache_utils.py:157] Maximum concurrency for 16,384 tokens per request: 12.08x"]


def runbook_grep(log: str) -> list[str]:
    """The lines the runbook's step-2 grep keeps, without vLLM's date-time stamp (it follows the cluster clock)."""
    return [_STAMP.sub(r"\1 ", line) for line in log.splitlines() if RUNBOOK_GREP.search(line)]

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def call(base: str, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
         accept: str = "application/json", token: str | None = None, raw: bytes | None = None,
         timeout: float = 30) -> tuple[int, str, Any]:
    """One HTTP request; returns (status, content type, decoded JSON or text)."""
    import http.client
    import ssl
    from urllib.parse import urlsplit

    url = urlsplit(base + path)
    if url.scheme == "https":  # the sim's self-signed serving cert; kubectl/client tests verify it via kubeconfig
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            url.hostname, url.port, timeout=timeout, context=ssl._create_unverified_context())
    else:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    headers = {"Accept": accept, "Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, url.path + (f"?{url.query}" if url.query else ""), body=data, headers=headers)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    kind = resp.getheader("Content-Type", "")
    try:
        return resp.status, kind, json.loads(payload)
    except ValueError:
        return resp.status, kind, payload.decode(errors="replace")


@pytest.fixture
def runbook_sim(tmp_path: Path) -> Iterator[Sim]:
    """Cluster "a" seeded with the runbook's world (llm/llama-8b with three revisions), controllers at 600x."""
    cluster = Cluster("a", speed=600)
    cluster.start()
    cluster.apply_seed("runbook", wait=True, timeout=60)
    server = SimServer([cluster])
    server.start()
    s = Sim(server, {"a": cluster}, server.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)
    yield s
    cluster.stop()
    server.stop()


def revisions(cluster: Cluster, namespace: str = "llm", app: str = "llama-8b") -> list[int]:
    """The deployment's ReplicaSet revisions, ascending, as the seed and controllers wrote them."""
    items = cluster.store.list("replicasets.apps", namespace)[0]
    return sorted(int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]) for rs in items
                  if (rs["metadata"].get("labels") or {}).get("app") == app)
