"""Running a command inside a pod's container: ``kubectl exec``, and debug containers whose command ends.

``machine`` assembles what the command sees from the cluster (pure ``shell`` does the running): the GPUs
the container was given — all of the node's for a container that requests none, as NVIDIA's CUDA images
set ``NVIDIA_VISIBLE_DEVICES=all`` — with the memory every process holds, foreign ones included, and the
host's process table only for ``hostPID`` pods (``kubectl debug node/...``), as nvidia-smi in a container
sees no processes outside its PID namespace.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from vllm_remedy.sim.dcgm_exporter import GpuHost
from vllm_remedy.sim.files import Files, initial
from vllm_remedy.sim.gpu_view import node_cards
from vllm_remedy.sim.runtime import ContainerContext, ContainerRun, Exit, LogLine, exit_reason
from vllm_remedy.sim.shell import Machine, Result, run, runs_to_completion, start_error
from vllm_remedy.sim.vllm_pod.node_card import gpu_limit

Obj = dict[str, Any]
COMMAND_SECONDS = 1.0  # simulated seconds a finite command (nvidia-smi) runs before its container exits


def machine(host: GpuHost, pod: Obj, container: Obj, files: Files | None = None) -> Machine:
    """The view from inside ``container`` of ``pod`` now (``files``: its file store, kept by the caller)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    node = str(spec.get("nodeName") or "")
    cards = node_cards(host, node) if node else []
    if gpu_limit(container) > 0:
        mine = [c for c in cards if any((o[0], o[1], o[2]) == (meta.get("namespace"), meta.get("name"),
                                                              container.get("name")) for o in c.owners)]
        cards = [dataclasses.replace(c, index=i) for i, c in enumerate(mine)]
    hostname = node if spec.get("hostNetwork") else str(meta.get("name", ""))
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": hostname}
    env.update({str(e["name"]): str(e.get("value", "")) for e in container.get("env") or []
                if isinstance(e, dict) and "name" in e and "valueFrom" not in e})
    mounts = tuple(mount for mount, _ in _host_root(pod, str(container.get("name", ""))))
    node_view = Machine(node, {"PATH": env["PATH"], "HOSTNAME": node}, tuple(node_cards(host, node)) if node else (),
                        True, host.clock.now()) if mounts else None
    return Machine(hostname, env, tuple(cards), bool(spec.get("hostPID")), host.clock.now(),
                   initial(hostname, _host_root(pod, str(container.get("name", "")))) if files is None else files,
                   node_view, tuple("/" + m.strip("/") for m in mounts))


def container_spec(pod: Obj, name: str) -> Obj:
    """The named container of ``pod`` (regular, init or ephemeral)."""
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if c.get("name") == name:
                return dict(c)
    return {"name": name}


class ContainerFiles:
    """Each container's files, kept per pod uid and container name, so a copied file is there for the next exec
    (and gone with the pod)."""

    def __init__(self) -> None:
        self._files: dict[tuple[str, str], Files] = {}
        self._lock = threading.Lock()

    def of(self, pod: Obj, container: str, hostname: str) -> Files:
        key = (str((pod.get("metadata") or {}).get("uid", "")), container)
        with self._lock:
            if len(self._files) > 4096:  # bounded: drop the oldest containers' files
                for old in list(self._files)[:1024]:
                    del self._files[old]
            if key not in self._files:
                self._files[key] = initial(hostname, _host_root(pod, container))
            return self._files[key]

    def forget(self, uid: str) -> None:
        """Drop a deleted pod's files: a 300 MB `kubectl cp` stayed in the cluster's memory after the pod went."""
        with self._lock:
            for key in [k for k in self._files if k[0] == uid]:
                del self._files[key]

    def held(self) -> int:
        """How many containers' files are kept (for tests)."""
        with self._lock:
            return len(self._files)


def _host_root(pod: Obj, container: str) -> list[tuple[str, str]]:
    """(mount path, node name) for each hostPath ``/`` volume ``container`` mounts."""
    spec = pod.get("spec") or {}
    roots = {v.get("name") for v in spec.get("volumes") or []
             if isinstance(v, dict) and ((v.get("hostPath") or {}).get("path") or "").rstrip("/") == ""
             and (v.get("hostPath") or {}).get("path")}
    node = str(spec.get("nodeName") or "")
    return [(str(m.get("mountPath")), node) for c in spec.get("containers") or [] if c.get("name") == container
            for m in c.get("volumeMounts") or [] if m.get("name") in roots and m.get("mountPath")]


def exec_in(host: GpuHost, pod: Obj, container: str, command: list[str], stdin: str = "",
            store: ContainerFiles | None = None) -> Result:
    """``kubectl exec``: (exit code, stdout, stderr) of ``command`` in ``container`` now."""
    spec = container_spec(pod, container)
    view = machine(host, pod, spec)
    if store is not None:
        view = dataclasses.replace(view, files=store.of(pod, container, view.hostname))
    return run(command, view, stdin)


def is_finite_command(pod: Obj, container: Obj) -> bool:
    """The runtime rule: a container whose command the rehearsal cluster runs to its end (a debug pod's), or
    which fails to start because its image lacks the program."""
    return runs_to_completion([*(container.get("command") or []), *(container.get("args") or [])],
                              str(container.get("image", "")))


class CommandRuntime:
    """Runs such a container: its output is the log, then it exits with the command's code; a program the image
    lacks fails at once as containerd's ``StartError`` (exit 128)."""

    def __init__(self, host: GpuHost, files: ContainerFiles | None = None) -> None:
        self.host = host
        self.files = files  # the cluster's per-container files, so `kubectl cp` and /host are the ones exec sees

    def start(self, ctx: ContainerContext) -> ContainerRun:
        """Run the command as the container starts; it exits a simulated second later."""
        pod = {**ctx.pod, "spec": {**(ctx.pod.get("spec") or {}),
                                    "nodeName": (ctx.node.get("metadata") or {}).get("name", "")}}
        argv = [*(ctx.container.get("command") or []), *(ctx.container.get("args") or [])]
        failed = start_error(argv, str(ctx.container.get("image", "")))
        if failed is not None:
            return ContainerRun(log=[], ready_after=None, exit=Exit(0.0, 128, "StartError", message=failed))
        view = machine(self.host, pod, ctx.container)
        if self.files is not None:
            view = dataclasses.replace(view, files=self.files.of(pod, str(ctx.container.get("name", "")),
                                                                 view.hostname))
        code, out, err = run(argv, view)
        lines = [LogLine(0.0, line) for line in (out + err).splitlines()]
        return ContainerRun(log=lines, ready_after=0.0, exit=Exit(COMMAND_SECONDS, code, exit_reason(code)))
