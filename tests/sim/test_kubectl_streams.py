"""Real kubectl 1.32 and the official Python client stream exec/attach/debug over WebSocket to the rehearsal cluster."""

from __future__ import annotations

import re
import subprocess

import pytest

from fixtures import pyinfra_run, sim_world
from vllm_remedy.sim.vllm_pod import keys

runbook_sim = sim_world.runbook_sim
live_sim = sim_world.live_sim
rehearsal = pyinfra_run.rehearsal
V = "32"
CUDA_IMAGE = "--image=nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def _serving_pod(sim: sim_world.Sim) -> str:
    return sorted(p["metadata"]["name"] for p in sim.clusters["a"].store.list("pods", "llm")[0])[0]


def _card_row(out: str) -> list[str]:
    """The Memory-Usage cell of each card: ["41925MiB /  46068MiB", ...]."""
    return re.findall(r"\|\s+(\d+MiB /\s+\d+MiB) \|", out)


def test_exec_nvidia_smi_in_a_vllm_container_shows_its_card(runbook_sim):
    pod = _serving_pod(runbook_sim)
    got = runbook_sim.kubectl(V, "-n", "llm", "exec", pod, "--", "nvidia-smi", timeout=30)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert re.fullmatch(r"\| NVIDIA-SMI [\d.]+ +Driver Version: [\d.]+ +CUDA Version: 12\.\d +\|", lines[2])
    assert re.search(r"\|\s+0  NVIDIA L40S\s+On  \|", got.stdout)  # the seed pins llama-8b to L40S
    (memory,) = _card_row(got.stdout)  # one GPU: the one the device plugin gave this container
    used, total = (int(n) for n in re.findall(r"\d+", memory))
    assert total == 46068 and 30000 < used < total  # vLLM holds ~90% of the card
    assert "No running processes found" in got.stdout  # a container sees no PIDs outside its namespace
    assert {len(line) for line in lines[1:]} == {91}


def test_exec_exit_codes_stdin_and_unknown_programs(runbook_sim):
    k, pod = runbook_sim.kubectl, _serving_pod(runbook_sim)
    failed = k(V, "-n", "llm", "exec", pod, "--", "sh", "-c", "echo before; exit 3", timeout=30)
    assert (failed.returncode, failed.stdout, failed.stderr.strip()) == (3, "before\n", "command terminated with "
                                                                                        "exit code 3")
    piped = k(V, "-n", "llm", "exec", "-i", pod, "--", "grep", "-i", "kv cache", stdin="a\nGPU KV cache size\nb\n",
              timeout=30)
    assert (piped.returncode, piped.stdout) == (0, "GPU KV cache size\n")
    script = k(V, "-n", "llm", "exec", "-i", pod, "--", "sh", stdin="nvidia-smi -L\n", timeout=30)
    assert re.fullmatch(r"GPU 0: NVIDIA L40S \(UUID: GPU-[0-9a-f-]{36}\)\n", script.stdout), script.stderr
    missing = k(V, "-n", "llm", "exec", pod, "--", "vim", "/etc/hostname", timeout=30)
    assert missing.returncode == 127
    assert 'exec: "vim": executable file not found in $PATH' in missing.stderr
    query = k(V, "-n", "llm", "exec", pod, "--", "nvidia-smi", "--query-gpu=name,memory.total",
              "--format=csv,noheader,nounits", timeout=30)
    assert query.stdout == "NVIDIA L40S, 46068\n"


def test_debug_node_runs_nvidia_smi_shows_foreign_memory_and_completes(live_sim):
    """Runbook step 3 on a node where a process outside Kubernetes holds 6 GiB of each GPU."""
    store = live_sim.clusters["a"].store
    node = store.get("nodes", "", "gpu-1")
    node["metadata"]["annotations"] = {keys.GPU_USED_GIB: "6"}
    store.update("nodes", node)
    got = live_sim.kubectl(V, "debug", "node/gpu-1", "-it", CUDA_IMAGE, "--", "nvidia-smi", timeout=60)
    assert got.returncode == 0, got.stderr
    assert _card_row(got.stdout) == ["6144MiB /  46068MiB"] * 4  # no pod holds a GPU: only the foreign 6 GiB
    rows = re.findall(r"\|\s+(\d)\s+N/A\s+N/A\s+(\d+)\s+C\s+(\S+)\s+(\d+)MiB \|", got.stdout)
    assert [(gpu, name, mib) for gpu, _, name, mib in rows] == [
        (str(i), "/opt/conda/bin/python3", "6144") for i in range(4)]  # hostPID: the node's processes
    assert len({pid for _, pid, _, _ in rows}) == 1  # one foreign process, on every card

    def debugger() -> dict:
        return next(p for p in store.list("pods", "default")[0] if p["metadata"]["name"].startswith("node-debugger"))

    assert live_sim.clusters["a"].wait_for(lambda: debugger()["status"].get("phase") == "Succeeded", 20)
    listed = live_sim.kubectl(V, "get", "pods", "-n", "default", timeout=30).stdout
    assert re.search(r"node-debugger-gpu-1-\w+\s+0/1\s+Completed\s+0", listed), listed


def test_official_python_client_streams_exec(runbook_sim):
    """kubernetes.stream over the v4.channel.k8s.io WebSocket the Python client speaks."""
    from kubernetes import client, config
    from kubernetes.stream import stream

    api = client.CoreV1Api(config.new_client_from_config(str(runbook_sim.kubeconfig), context="a"))
    out = stream(api.connect_get_namespaced_pod_exec, _serving_pod(runbook_sim), "llm",
                 command=["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out.strip() == "46068 MiB"


def test_runbook_step_3_on_the_gpu_memory_held_world(rehearsal):
    """The runbook's step-3 commands, unchanged, name the foreign process holding the L4 the pod crashed on."""
    from fixtures.gpu_world import FREE_NODE, HELD_GIB, HELD_NODE, in_back_off, memory_held
    from fixtures.pyinfra_run import CLUSTER

    memory_held(rehearsal, restarts=1)
    in_back_off(rehearsal)

    def kubectl(*args: str) -> str:
        binary = sim_world.require_kubectl(V)
        got = subprocess.run([str(binary), "--kubeconfig", str(rehearsal.kubeconfig), "--context", CLUSTER,
                              "--cache-dir", str(rehearsal.tmp / "kube-cache"), *args], capture_output=True,
                             text=True, timeout=60)
        assert got.returncode == 0, got.stderr
        return got.stdout

    wide = kubectl("-n", "llm", "get", "pod", "-l", "app=llama-8b", "-o", "wide")
    assert HELD_NODE in wide and FREE_NODE in wide
    held = kubectl("debug", f"node/{HELD_NODE}", "-it", CUDA_IMAGE, "--", "nvidia-smi")
    assert re.search(r"\|\s+0  NVIDIA L4\s+On  \|", held)
    procs = re.findall(r"\|\s+0\s+N/A\s+N/A\s+\d+\s+C\s+(\S+)\s+(\d+)MiB \|", held)
    assert procs[0] == ("/opt/conda/bin/python3", str(HELD_GIB * 1024))  # the process outside Kubernetes
    assert {name for name, _ in procs[1:]} <= {"/usr/bin/python3"}  # the crash-looping vLLM, if it is starting
    assert _card_row(held) == [f"{sum(int(mib) for _, mib in procs)}MiB /  23034MiB"]
    serving = kubectl("debug", f"node/{FREE_NODE}", "-it", CUDA_IMAGE, "--", "nvidia-smi")
    (row,) = re.findall(r"\|\s+0\s+N/A\s+N/A\s+\d+\s+C\s+/usr/bin/python3\s+(\d+)MiB \|", serving)
    assert int(row) > 18000 and "/opt/conda" not in serving  # vLLM's own ~90% of the card, nobody else


def test_cp_into_and_out_of_a_container_round_trips_bytes(runbook_sim, tmp_path):
    k, pod = runbook_sim.kubectl, _serving_pod(runbook_sim)
    blob = bytes(range(256)) * 40  # binary: every byte value, through tar over the exec stream
    (tmp_path / "blob").write_bytes(blob)
    (tmp_path / "cfg.yaml").write_text("max-model-len: 8192\n")
    for name in ("blob", "cfg.yaml"):
        got = k(V, "-n", "llm", "cp", str(tmp_path / name), f"{pod}:/tmp/{name}", timeout=30)
        assert got.returncode == 0, got.stderr
    assert k(V, "-n", "llm", "exec", pod, "--", "ls", "/tmp", timeout=30).stdout == "blob\ncfg.yaml\n"
    assert k(V, "-n", "llm", "exec", pod, "--", "cat", "/tmp/cfg.yaml", timeout=30).stdout == "max-model-len: 8192\n"
    back = k(V, "-n", "llm", "cp", f"{pod}:/tmp/blob", str(tmp_path / "back"), timeout=30)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "back").read_bytes() == blob
    other = sorted(p["metadata"]["name"] for p in runbook_sim.clusters["a"].store.list("pods", "llm")[0])[1]
    assert k(V, "-n", "llm", "exec", other, "--", "ls", "/tmp", timeout=30).stdout == ""  # files are per container
    missing = k(V, "-n", "llm", "cp", f"{pod}:/nope", str(tmp_path / "x"), timeout=30)
    assert missing.returncode != 0
    assert "tar: /nope: Cannot stat: No such file or directory" in missing.stdout + missing.stderr


def test_debug_node_with_an_interactive_shell_runs_typed_commands_and_ends_the_pod(live_sim):
    store = live_sim.clusters["a"].store
    got = live_sim.kubectl(V, "debug", "node/gpu-1", "-it", "--image=ubuntu:22.04",
                           stdin="nvidia-smi -L | head -n 1\nhostname\nexit\n", timeout=60)
    assert got.returncode == 0, got.stderr
    # the debug container has a pty (tty: true): an interactive shell that prompts and echoes what it is sent
    lines = got.stdout.splitlines()
    assert "root@gpu-1:/# nvidia-smi -L | head -n 1" in lines and "hostname" in lines, lines
    assert [line for line in lines if line.startswith("GPU ")] == [
        next(line for line in lines if re.fullmatch(r"GPU 0: NVIDIA L40S \(UUID: GPU-[0-9a-f-]{36}\)", line))]
    assert "root@gpu-1:/# gpu-1" in lines  # hostNetwork: the node's host name

    def debugger() -> dict:
        return next(p for p in store.list("pods", "default")[0] if p["metadata"]["name"].startswith("node-debugger"))

    assert live_sim.clusters["a"].wait_for(lambda: debugger()["status"].get("phase") == "Succeeded", 20)


def test_debug_node_sees_the_node_root_at_host(live_sim):
    """kubectl debug node/… mounts the node's root at /host: a runbook's `cat /host/etc/hostname` reads the node's."""
    got = live_sim.kubectl(V, "debug", "node/gpu-1", "-it", "--image=busybox",
                           stdin="ls /host\ncat /host/etc/hostname\nexit\n", timeout=60)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert "cannot access" not in got.stdout, lines
    assert "etc" in lines, lines  # ls /host
    assert "root@gpu-1:/# gpu-1" in lines, lines  # cat /host/etc/hostname (the shell echoes typed input at once)


def test_exec_and_cp_over_https_with_a_token(tmp_path):
    """`sim up --auth` serves TLS: the WebSocket session reads and writes one SSL socket on one thread."""
    from vllm_remedy.sim.api.auth import load

    roles = load({"tokens": {"t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]}}})
    s = sim_world.make_sim(tmp_path, auth=roles, users={"admin": "t-admin"}, start=True)
    try:
        store = s.clusters["a"].store
        store.create("nodes", sim_world.gpu_node("gpu-1"))
        store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "box", "namespace": "llm"},
                              "spec": {"containers": [{"name": "box", "image": "ubuntu:22.04"}]}})
        assert s.clusters["a"].wait_for(lambda: "running" in (
            (store.get("pods", "llm", "box").get("status", {}).get("containerStatuses") or [{}])[0].get("state")
            or {}), 20)
        got = s.kubectl(V, "-n", "llm", "exec", "-i", "box", "--", "sh", stdin="hostname\nexit\n", timeout=30)
        assert got.stdout == "box\n", got.stderr  # no pty: the shell reads its stdin silently, as sh < script
        blob = bytes(range(256)) * 400  # 100 KiB: many WebSocket frames each way
        (tmp_path / "blob").write_bytes(blob)
        assert s.kubectl(V, "-n", "llm", "cp", str(tmp_path / "blob"), "box:/tmp/blob", timeout=60).returncode == 0
        assert s.kubectl(V, "-n", "llm", "cp", "box:/tmp/blob", str(tmp_path / "back"), timeout=60).returncode == 0
        assert (tmp_path / "back").read_bytes() == blob
    finally:
        for c in s.clusters.values():
            c.stop()
        s.server.stop()
