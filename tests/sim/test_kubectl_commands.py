"""Real kubectl 1.32 runs finite commands in pods: `sh -c` scripts, programs the image lacks, `chroot /host`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures import sim_world

V = "32"
NODE = "gpu-1"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_world.Sim]:
    """One cluster at 120x with one 4-GPU L40S node, shared by the module (each test names its own pods)."""
    sim_world.require_kubectl(V)
    s = sim_world.make_sim(tmp_path_factory.mktemp("commands"), speed=120, start=True)
    s.clusters["a"].store.create("nodes", sim_world.gpu_node(NODE))
    yield s
    for c in s.clusters.values():
        c.stop()
    s.server.stop()


def _pod(world: sim_world.Sim, name: str, namespace: str = "default") -> dict[str, Any]:
    return world.clusters["a"].store.find("pods", namespace, name) or {}


def _phase(world: sim_world.Sim, name: str, namespace: str = "default") -> str:
    return str((_pod(world, name, namespace).get("status") or {}).get("phase", ""))


def _debugger(world: sim_world.Sim, before: set[str]) -> str:
    names = {p["metadata"]["name"] for p in world.clusters["a"].store.list("pods", "default")[0]}
    (new,) = {n for n in names - before if n.startswith("node-debugger")}
    return new


def _pods(world: sim_world.Sim) -> set[str]:
    return {p["metadata"]["name"] for p in world.clusters["a"].store.list("pods", "default")[0]}


def test_run_sh_c_completes_and_logs(world):
    got = world.kubectl(V, "run", "hi", "--image=busybox", "--restart=Never", "--", "sh", "-c", "echo hi", timeout=30)
    assert got.returncode == 0, got.stderr
    assert world.clusters["a"].wait_for(lambda: _phase(world, "hi") == "Succeeded", 20), _pod(world, "hi")
    assert world.kubectl(V, "logs", "hi", timeout=30).stdout == "hi\n"


def test_debug_node_sh_c_with_a_profile_runs_and_ends(world):
    got = world.kubectl(V, "debug", f"node/{NODE}", "-it", "--image=busybox", "--profile=general", "--",
                        "sh", "-c", "ls /", timeout=60)
    assert got.returncode == 0, got.stderr
    assert "etc" in got.stdout.split()


def test_debug_node_sees_a_node_root_at_host(world):
    got = world.kubectl(V, "debug", f"node/{NODE}", "-it", "--image=busybox", "--", "ls", "/host", timeout=60)
    assert got.returncode == 0, got.stderr
    assert {"bin", "etc", "proc", "usr", "var"} <= set(got.stdout.split()), (got.stdout, got.stderr)


def test_debug_node_chroot_host_runs_nvidia_smi_as_on_the_node(world):
    got = world.kubectl(V, "debug", f"node/{NODE}", "-it", "--image=busybox", "--", "chroot", "/host",
                        "nvidia-smi", "-L", timeout=60)
    assert got.returncode == 0, got.stderr
    gpus = [line for line in got.stdout.splitlines() if line.startswith("GPU ")]
    assert len(gpus) == 4 and all(re.fullmatch(r"GPU \d: NVIDIA L40S \(UUID: GPU-[0-9a-f-]{36}\)", g) for g in gpus)
    host = world.kubectl(V, "debug", f"node/{NODE}", "-it", "--image=busybox", "--", "chroot", "/host",
                         "cat", "/etc/hostname", timeout=60)
    assert host.stdout.strip().endswith(NODE), host.stdout


def test_a_program_the_image_lacks_fails_the_container(world):
    before = _pods(world)
    got = world.kubectl(V, "debug", f"node/{NODE}", "-it", "--image=busybox", "--", "foo", timeout=60)
    pod = _debugger(world, before)
    assert world.clusters["a"].wait_for(lambda: _phase(world, pod) == "Failed", 20), _pod(world, pod)
    (status,) = _pod(world, pod)["status"]["containerStatuses"]
    term = status["state"]["terminated"]
    assert (term["reason"], term["exitCode"]) == ("StartError", 128), term
    assert 'exec: "foo": executable file not found in $PATH' in term["message"]
    assert term["startedAt"] == "1970-01-01T00:00:00Z", term  # its process never ran
    # It never showed as running, so kubectl went to its logs without trying to attach (1.32's handleAttachPod).
    assert got.returncode == 0 and "couldn't attach" not in got.stderr, got.stderr
    events = world.kubectl(V, "get", "events", "--field-selector", f"involvedObject.name={pod}", timeout=30).stdout
    assert "Failed" in events and "Started" not in events, events
    listed = world.kubectl(V, "get", "pod", pod, timeout=30).stdout
    assert re.search(rf"{pod}\s+0/1\s+StartError\s+0", listed), listed


def test_a_script_calling_a_missing_program_exits_127(world):
    got = world.kubectl(V, "run", "nf", "--image=busybox", "--restart=Never", "--", "sh", "-c", "foo", timeout=30)
    assert got.returncode == 0, got.stderr
    assert world.clusters["a"].wait_for(lambda: _phase(world, "nf") == "Failed", 20), _pod(world, "nf")
    (status,) = _pod(world, "nf")["status"]["containerStatuses"]
    assert status["state"]["terminated"]["exitCode"] == 127
    assert "foo: not found" in world.kubectl(V, "logs", "nf", timeout=30).stdout


def test_vllm_with_an_sh_c_sidecar_and_init_container_rolls_out(world):
    dep = sim_world.deployment("sidecar", replicas=1)
    spec = dep["spec"]["template"]["spec"]
    spec["containers"].append({"name": "tail", "image": "busybox",
                               "command": ["sh", "-c", "while true; do sleep 30; done"]})
    spec["initContainers"] = [{"name": "prep", "image": "busybox", "command": ["sh", "-c", "echo prepared"]}]
    world.clusters["a"].store.create("deployments.apps", dep)
    got = world.kubectl(V, "-n", "llm", "rollout", "status", "deployment/sidecar", "--timeout=50s", timeout=60)
    assert got.returncode == 0, got.stdout + got.stderr
    listed = world.kubectl(V, "-n", "llm", "get", "pods", "-l", "app=sidecar", timeout=30).stdout
    assert re.search(r"sidecar-\S+\s+2/2\s+Running", listed), listed


def test_debug_node_nvidia_smi_i_and_q_d_memory(world):
    cuda = "--image=nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
    one = world.kubectl(V, "debug", f"node/{NODE}", "-it", cuda, "--", "nvidia-smi", "-i", "0", timeout=60)
    assert one.returncode == 0, one.stderr
    assert re.findall(r"\|\s+(\d)  NVIDIA L40S", one.stdout) == ["0"]
    mem = world.kubectl(V, "debug", f"node/{NODE}", "-it", cuda, "--", "nvidia-smi", "-q", "-d", "MEMORY",
                        timeout=60)
    assert mem.returncode == 0, mem.stderr
    assert mem.stdout.count("FB Memory Usage") == 4 and "Invalid combination" not in mem.stdout
    assert re.search(r"^ {8}Total {29}: 46068 MiB\r?$", mem.stdout, re.M), mem.stdout


def test_interactive_debug_shell_can_chroot_into_the_node(world):
    got = world.kubectl(V, "debug", f"node/{NODE}", "-it", "--image=busybox",
                        stdin="chroot /host nvidia-smi -L | head -n 1\nls /\nchroot /host ls /\nexit\n", timeout=60)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert any(re.fullmatch(r"GPU 0: NVIDIA L40S \(UUID: GPU-[0-9a-f-]{36}\)", line) for line in lines), lines
    assert lines.count("boot") == 1, lines  # the node's root has /boot; the busybox container's does not
