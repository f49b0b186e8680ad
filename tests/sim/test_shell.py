"""The rehearsal container's commands: which ones run to their end, and what they print (no cluster needed)."""

from __future__ import annotations

import pytest

from vllm_remedy.sim import files as fs
from vllm_remedy.sim.container_exec import is_finite_command
from vllm_remedy.sim.gpu_view import GpuCard
from vllm_remedy.sim.image_path import lacks, programs
from vllm_remedy.sim.shell import Machine, run, runs_to_completion, start_error


@pytest.mark.parametrize(("argv", "image", "finite"), [
    (["sh", "-c", "echo hi"], "busybox", True),  # one command: the zip(strict=True) of the first words raised
    (["sh", "-c", "ls /"], "", True),
    (["sh", "-c", "nvidia-smi; echo done"], "", True),
    (["sh", "-c", "nvidia-smi -L | head -n 1 && hostname"], "", True),
    (["/bin/bash", "-c", "echo a || echo b"], "ubuntu:22.04", True),
    (["nvidia-smi"], "", True),
    (["sh", "-c", "while true; do sleep 30; done"], "busybox", False),  # a sidecar loop: long-running
    (["sh", "-c", "python serve.py"], "myorg/app:1", False),  # an unknown image may well have python
    (["sh", "-c", "foo"], "busybox", True),  # busybox has no foo: the shell says not found and exits
    (["foo"], "busybox", True),  # ... and without a shell the container fails to start
    (["foo"], "myorg/app:1", False),
    (["sleep", "3600"], "busybox", False),
    (["chroot", "/host", "nvidia-smi", "-L"], "busybox", True),
    (["chroot", "/host", "foo"], "busybox", True),  # not on the node either: chroot fails
    (["chroot", "/host"], "busybox", False),  # an interactive shell on the node
    (["exit"], "", False),
    (["sh"], "", False),
    ([], "", False),
    (["sh", "-c", "echo 'unbalanced"], "", False),
])
def test_runs_to_completion(argv, image, finite):
    assert runs_to_completion(argv, image) is finite
    assert is_finite_command({}, {"command": argv[:1], "args": argv[1:], "image": image}) is finite


def test_start_error_names_the_missing_executable_only_for_a_known_image():
    message = start_error(["foo", "--bar"], "docker.io/library/busybox:1.36")
    assert message is not None and 'exec: "foo": executable file not found in $PATH: unknown' in message
    assert start_error(["foo"], "myorg/app:1") is None
    assert start_error(["sh", "-c", "foo"], "busybox") is None  # the shell starts; it is the one that fails
    assert start_error(["nvidia-smi"], "busybox") is None


def test_image_catalogue():
    assert programs("nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04") is not None
    assert not lacks("nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "/usr/bin/nvidia-smi")
    assert lacks("ubuntu:22.04", "wget") and not lacks("busybox@sha256:" + "0" * 64, "wget")
    assert programs("registry.local:5000/tools/busybox") is None


def _debugger() -> Machine:
    node = Machine("gpu-1", {"PATH": "/usr/bin"}, (), True)
    files = fs.initial("node-debugger", [("/host", "gpu-1")])
    return Machine("node-debugger", {}, (), True, files=files, host=node, host_mounts=("/host",))


def test_chroot_runs_as_on_the_node_and_writes_into_the_mount():
    m = _debugger()
    assert run(["chroot", "/host", "cat", "/etc/hostname"], m) == (0, "gpu-1\n", "")
    assert run(["chroot", "/host", "hostname"], m) == (0, "gpu-1\n", "")
    assert run(["sh", "-c", "chroot /host mkdir /tmp/x && ls /host/tmp"], m)[1] == "x\n"
    code, _, err = run(["chroot", "/host", "foo"], m)
    assert (code, err) == (127, "chroot: failed to run command 'foo': No such file or directory\n")
    code, _, err = run(["chroot", "/nope", "ls"], m)
    assert (code, err) == (125, "chroot: cannot change root directory to '/nope': No such file or directory\n")
    assert run(["ls", "/host"], m)[1].split()[:4] == ["bin", "boot", "dev", "etc"]


def test_script_with_a_missing_program_says_not_found():
    assert run(["sh", "-c", "foo; echo after"], Machine("p")) == (0, "after\n", "sh: 1: foo: not found\n")


def _gpus() -> Machine:
    cards = tuple(GpuCard(i, "NVIDIA L40S", f"GPU-{i}aaaaaaa-0000-0000-0000-000000000000", f"00000000:0{i + 1}:00.0",
                          46068, 1000 * i, (), ()) for i in range(4))
    return Machine("gpu-1", cards=cards, host_pids=True, now=0.0)


def test_nvidia_smi_i_picks_cards_and_keeps_their_index():
    code, out, _ = run(["nvidia-smi", "-i", "2"], _gpus())
    assert code == 0 and "|   2  NVIDIA L40S" in out and "|   0  NVIDIA L40S" not in out
    assert run(["nvidia-smi", "--id=1,3", "-L"], _gpus())[1].splitlines() == [
        "GPU 1: NVIDIA L40S (UUID: GPU-1aaaaaaa-0000-0000-0000-000000000000)",
        "GPU 3: NVIDIA L40S (UUID: GPU-3aaaaaaa-0000-0000-0000-000000000000)"]
    assert run(["nvidia-smi", "-i", "00000000:02:00.0", "--query-gpu=index", "--format=csv,noheader"],
               _gpus())[1] == "1\n"
    assert run(["nvidia-smi", "-i", "7"], _gpus())[:2] == (6, "No devices were found\n")


def test_nvidia_smi_q_d_memory_in_the_driver_layout():
    code, out, _ = run(["nvidia-smi", "-q", "-d", "MEMORY", "-i", "1"], _gpus())
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "==============NVSMI LOG=============="
    assert "Attached GPUs                             : 4" in lines
    block = lines[lines.index("GPU 00000000:02:00.0"):]
    assert block[1:6] == ["    FB Memory Usage",
                          "        Total                             : 46068 MiB",
                          "        Reserved                          : 512 MiB",
                          "        Used                              : 1000 MiB",
                          "        Free                              : 44556 MiB"]
    assert block[6] == "    BAR1 Memory Usage" and "GPU 00000000:01:00.0" not in lines
    assert run(["nvidia-smi", "--query", "--display=memory"], _gpus())[1].count("FB Memory Usage") == 4
    code, out, _ = run(["nvidia-smi", "-q", "-d", "CLOCK"], _gpus())
    assert code == 2 and "-d MEMORY" in out
