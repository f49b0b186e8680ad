"""deploys/diagnose.py's GPU report through the real pyinfra CLI: memory held outside the vLLM pod, from the DCGM
exporter (read through pods/proxy) and from vLLM's own free-memory line, on the rehearsal cluster."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.gpu_world import (
    FREE_NODE,
    HELD_GIB,
    HELD_NODE,
    drop_exporters,
    exporter_on,
    in_back_off,
    memory_held,
    pod_on,
)
from fixtures.manifests import DRIFT_USER, REMEDIATE_USER, all_docs, sim_rules
from fixtures.pyinfra_run import CLUSTER, Rehearsal, detected_changes
from fixtures.restore_world import DIAGNOSE, LOCAL, NS, host_out, quiet, settled
from fixtures.sim_world import require_kubectl
from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.api.auth import load as load_auth
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.tls import ensure_cert

rehearsal = pyinfra_run.rehearsal



#: A serving pod's line: the exporter reports the whole device, so beside a running vLLM nothing is "none".
BESIDE_RUNNING = ("other GPU consumers: no other pod requests a GPU here; memory beside vLLM's own on GPU 0: "
                  "unknown while vLLM runs there")

def gpu_section(lines: list[str]) -> list[str]:
    return lines[lines.index("step 3 — GPUs:") + 1:]


def pod_line(lines: list[str], pod: str) -> str:
    found = [line for line in lines if line.startswith(f"pod {pod} ")]
    assert len(found) == 1, lines
    return found[0]


def test_held_memory_is_named_from_both_sources_in_y_and_dry_runs(rehearsal: Rehearsal) -> None:
    memory_held(rehearsal)
    held = pod_on(rehearsal, HELD_NODE)
    twin = pod_on(rehearsal, FREE_NODE)
    assert held is not None and twin is not None
    before = settled(rehearsal)  # past the progress deadline: the crash loop no longer moves its status
    in_back_off(rehearsal)
    for args in (["-y"], ["--dry"]):
        got = rehearsal.pyinfra(LOCAL, DIAGNOSE, *args)
        assert got.returncode == 0, got.stderr
        lines = gpu_section(host_out(got.stderr))
        held_line = pod_line(lines, held["metadata"]["name"])
        # The exporter: the foreign GiB, the GPU (index, UUID, model), and that no process of the pod holds it.
        m = re.search(r"other GPU consumers: (\d+\.\d\d) GiB on GPU 0 \((GPU-[0-9a-f-]+), NVIDIA L4\), mapped to "
                      rf"{NS}/{held['metadata']['name']}/vllm whose vLLM container is not running", held_line)
        assert m, held_line
        assert float(m.group(1)) == HELD_GIB
        exporter_gpu = [line for line in lines if line.startswith(f"GPU 0 {m.group(2)} (NVIDIA L4): used 6,144 / ")]
        assert len(exporter_gpu) == 1, lines
        # vLLM's own line: what its ValueError said was free, and what was in use before it loaded.
        own = [line for line in lines if line.startswith(f"vLLM's own line ({held['metadata']['name']}/vllm, "
                                                         "previous log): ")]
        assert len(own) == 1, lines
        v = re.search(r"had (\d+\.\d\d) of (\d+\.\d\d) GiB free at startup: (\d+\.\d\d) GiB in use", own[0])
        assert v and float(v.group(2)) == 21.96
        in_use = float(v.group(3))
        assert HELD_GIB <= in_use <= HELD_GIB + 0.5  # the held GiB plus vLLM's own CUDA context
        # The twin on the other L4 serves; nothing is held there.
        assert BESIDE_RUNNING in pod_line(lines, twin["metadata"]["name"])  # serving: its GPU cannot be split
        if args == ["--dry"]:
            # the -y run before recorded the crash on its ReplicaSet: nothing left to record, nothing to change
            assert detected_changes(got.stderr) == {"Record crash-looping revisions on their ReplicaSets": ("-", "-"),
                                                    "Read the startup log and what changed": ("-", "-")}
    assert quiet(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_world_without_foreign_memory_says_none(rehearsal: Rehearsal) -> None:
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "-y")
    assert got.returncode == 0, got.stderr
    lines = gpu_section(host_out(got.stderr))
    pods = [line for line in lines if line.startswith("pod ")]
    assert len(pods) == 2 and all(BESIDE_RUNNING in line for line in pods), lines
    tables = [line for line in lines if line.startswith("GPU 0 ")]
    assert len(tables) == 2 and all("(NVIDIA L40S): used " in t and f"mapped to {NS}/llama-8b-" in t
                                    for t in tables), lines


def test_a_world_without_an_exporter_says_it_is_unknown_and_why(rehearsal: Rehearsal) -> None:
    drop_exporters(rehearsal)
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "-y")
    assert got.returncode == 0, got.stderr
    lines = gpu_section(host_out(got.stderr))
    pods = [line for line in lines if line.startswith("pod ")]
    assert len(pods) == 2, lines
    for line in pods:
        node = re.search(r"node (\S+),", line).group(1)  # type: ignore[union-attr]
        assert line.endswith(f"other GPU consumers: no other pod requests a GPU here; memory held outside the pod: "
                             f"unknown — no DCGM exporter on node {node} (no pod labelled app=nvidia-dcgm-exporter "
                             "there)"), line
    assert "none" not in " ".join(pods)


@pytest.fixture
def rbac_rehearsal(tmp_path: Path) -> Iterator[tuple[Rehearsal, Path, Path]]:
    """The runbook world served over HTTPS with the RBAC of manifests/ as its tokens: (rehearsal, kubeconfig of
    the drift account, kubeconfig of the remediate account), each as the ``rehearsal`` context."""
    docs = all_docs()
    auth = load_auth({"tokens": {
        "t-drift": {"user": DRIFT_USER, "rules": sim_rules(docs, "llm", "vllm-remedy-drift")},
        "t-remediate": {"user": REMEDIATE_USER, "rules": sim_rules(docs, "llm", "vllm-remedy-remediate")}}})
    cluster = Cluster(CLUSTER, speed=600)
    cluster.start()
    cluster.apply_seed("runbook", wait=True, timeout=120)
    tls = ensure_cert(tmp_path / "tls")
    server = SimServer([cluster], auth=auth, tls=tls)
    server.start()
    configs = [sim_kubeconfig.write(tmp_path / f"{user}.kubeconfig", server.url, [CLUSTER], {user: token}, user,
                                    ca_pem=tls[0].read_bytes())
               for user, token in (("drift", "t-drift"), ("remediate", "t-remediate"))]
    sim = Rehearsal(server, {CLUSTER: cluster}, configs[1], tmp_path)
    yield sim, configs[0], configs[1]
    sim.stop()


def test_rbac_of_manifests_decides_whether_the_exporter_is_read(rbac_rehearsal) -> None:
    """The drift account (read-only, no pods/proxy in gpu-operator) gets an "unknown: forbidden" line naming the
    refusal; the remediate account, whose Role in gpu-operator grants get on pods/proxy, reads the exporter."""
    sim, drift, remediate = rbac_rehearsal
    got = sim.pyinfra(LOCAL, DIAGNOSE, "-y", env={"KUBECONFIG": str(drift)})
    assert got.returncode == 0, got.stderr
    pods = [line for line in gpu_section(host_out(got.stderr)) if line.startswith("pod ")]
    assert len(pods) == 2, got.stderr
    for line in pods:
        assert "memory held outside the pod: unknown — reading DCGM exporter gpu-operator/nvidia-dcgm-exporter-" in line
        assert "through pods/proxy is forbidden" in line and "HTTP 403" in line, line
    got = sim.pyinfra(LOCAL, DIAGNOSE, "-y", env={"KUBECONFIG": str(remediate)})
    assert got.returncode == 0, got.stderr
    pods = [line for line in gpu_section(host_out(got.stderr)) if line.startswith("pod ")]
    assert len(pods) == 2 and all(BESIDE_RUNNING in line for line in pods), got.stderr


def test_real_kubectl_reads_the_exporter_through_the_pod_proxy(rehearsal: Rehearsal) -> None:
    """``kubectl get --raw /api/v1/namespaces/<ns>/pods/<pod>:9400/proxy/metrics``, as an operator would."""
    memory_held(rehearsal, restarts=1)
    exporter = exporter_on(rehearsal, HELD_NODE)["metadata"]["name"]
    binary = require_kubectl("32")
    got = subprocess.run([str(binary), "--kubeconfig", str(rehearsal.kubeconfig), "--context", CLUSTER, "get",
                          "--raw", f"/api/v1/namespaces/gpu-operator/pods/{exporter}:9400/proxy/metrics"],
                         capture_output=True, text=True, timeout=60, env=rehearsal.env())
    assert got.returncode == 0, got.stderr
    used = [line for line in got.stdout.splitlines() if line.startswith("DCGM_FI_DEV_FB_USED{")]
    assert len(used) == 1 and 'modelName="NVIDIA L4"' in used[0] and f'Hostname="{exporter}"' in used[0]
    assert f'namespace="{NS}"' in used[0] and 'container="vllm"' in used[0]
    assert "# TYPE DCGM_FI_DEV_FB_FREE gauge" in got.stdout
    value = float(used[0].rsplit(" ", 1)[1])
    assert HELD_GIB * 1024 <= value <= HELD_GIB * 1024 + 512  # held memory (+ vLLM's context if it is starting)
    status = subprocess.run([str(binary), "--kubeconfig", str(rehearsal.kubeconfig), "--context", CLUSTER, "-n",
                             "gpu-operator", "get", "pods", "-l", "app=nvidia-dcgm-exporter", "-o", "wide"],
                            capture_output=True, text=True, timeout=60, env=rehearsal.env())
    rows = status.stdout.splitlines()[1:]
    assert len(rows) == 6 and all(" 1/1 " in row and " Running " in row for row in rows), status.stdout
