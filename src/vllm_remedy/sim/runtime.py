"""The container-runtime seam: what a simulated container does once the kubelet starts it.

The kubelet owns Kubernetes semantics (restarts, back-off, readiness, status); a runtime only answers
"what happens when this container runs on this node": which log lines appear when, whether and when
it becomes ready, whether it exits (and how), whether load makes it crash, and what its HTTP port
serves. The vLLM simulator implements the same Protocol, so swapping it in changes no controller code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Obj = dict[str, Any]

# Test hooks read by PlainRuntime from the pod's annotations (copied from the pod template).
HOOK_PREFIX = "sim.vllm-remedy.io/"
EXIT_CODE = HOOK_PREFIX + "exit-code"        # exit with this code on every run
EXIT_AFTER = HOOK_PREFIX + "exit-after"      # ... after this many simulated seconds (default 5)
READY_AFTER = HOOK_PREFIX + "ready-after"    # seconds until the readiness probe passes (default 3)
LOG_LINES = HOOK_PREFIX + "log"              # extra log text, one line per line


@dataclass(frozen=True)
class LogLine:
    """One line of container output, visible once ``offset`` simulated seconds have run."""

    offset: float
    text: str


@dataclass(frozen=True)
class Exit:
    """How a container run ends: kubelet records it in ``lastState.terminated``."""

    after: float
    code: int
    reason: str = "Error"  # "Error", "OOMKilled" (137, host memory), "Completed" (0)
    log: tuple[str, ...] = ()  # lines written at the moment of exit (the traceback)
    message: str = ""  # terminated.message: why the container could not start (StartError)


HttpReply = tuple[int, str, bytes]  # status, content-type, body


@dataclass
class ContainerRun:
    """One run of one container, decided when the kubelet starts it.

    ``ready_after`` is when the readiness (and startup) probe first passes; ``None`` = never.
    ``load_check`` is polled every ``load_check_every`` seconds while ready and may return an Exit
    that happens now (OOM under load); ``http`` serves pods/proxy requests (``/health``, ``/metrics``);
    ``gpu_gib`` is the device memory the run holds while it runs (the DCGM exporter reports it).
    """

    log: Sequence[LogLine] = ()
    ready_after: float | None = 0.0
    exit: Exit | None = None
    load_check: Callable[[float], Exit | None] | None = None
    load_check_every: float = 15.0
    http: Callable[[str], HttpReply] | None = None
    gpu_gib: float = 0.0  # GPU memory this run holds on each of its GPUs while it runs (what nvidia-smi/DCGM see)


@dataclass
class ContainerContext:
    """Everything a runtime may look at: the pod, its container spec, the node it landed on, and the
    cluster-level facts a real container would feel (GPU memory held by other processes, traffic).

    ``load()`` returns the current offered load (concurrent requests) for the pod's workload.
    """

    pod: Obj
    container: Obj
    node: Obj
    restart_count: int
    gpu_memory_used_by_others_mib: int = 0
    load: Callable[[], float] = field(default=lambda: 0.0)
    extras: Obj = field(default_factory=dict)
    started: float | None = None  # the kubelet's clock at the start; a runtime's log begins here, not later


class Runtime(Protocol):
    """Decides what a container run does; called by the kubelet on every (re)start."""

    def start(self, ctx: ContainerContext) -> ContainerRun: ...


def _float(annotations: Obj, key: str, default: float) -> float:
    try:
        return float(annotations.get(key, default))
    except (TypeError, ValueError):
        return default


def exit_reason(code: int) -> str:
    """The ``terminated.reason`` kubelet reports for an exit code it did not cause itself."""
    if code == 0:
        return "Completed"
    if code == 137:
        return "OOMKilled"
    return "Error"


class PlainRuntime:
    """Any container: logs a start line, is ready after a short delay, serves /health and /metrics.

    Pod annotations (``sim.vllm-remedy.io/exit-code`` …) turn it into a crashing container, so the
    kubelet's crash-loop behaviour is testable without the vLLM simulator.
    """

    def start(self, ctx: ContainerContext) -> ContainerRun:
        """A run from the pod's test-hook annotations: ready after a short delay by default, or exiting with
        the given code (never ready if it exits first) to drive kubelet's crash loop."""
        notes = ctx.pod.get("metadata", {}).get("annotations") or {}
        name = ctx.container.get("name", "")
        lines = [LogLine(0.0, f"starting container {name} (image {ctx.container.get('image', '')})")]
        extra = str(notes.get(LOG_LINES, "")).splitlines()
        lines += [LogLine(0.0, text) for text in extra]
        ready = _float(notes, READY_AFTER, 3.0)
        run = ContainerRun(log=lines, ready_after=ready, http=_plain_http)
        if EXIT_CODE in notes:
            code = int(_float(notes, EXIT_CODE, 1))
            after = _float(notes, EXIT_AFTER, 5.0)
            run.exit = Exit(after=after, code=code, reason=exit_reason(code), log=(f"exiting with code {code}",))
            if after <= ready:
                run.ready_after = None
        else:
            lines.append(LogLine(ready, "ready"))
        return run


def _plain_http(path: str) -> HttpReply:
    route = path.split("?", 1)[0]
    if route in ("/health", "/healthz", "/ready"):
        return 200, "text/plain; charset=utf-8", b""
    if route == "/metrics":
        return 200, "text/plain; version=0.0.4; charset=utf-8", b"# plain simulated container\nup 1\n"
    return 404, "application/json", b'{"detail":"Not Found"}'


@dataclass
class RuntimeChooser:
    """Picks a runtime per container: the first rule whose predicate accepts (pod, container) wins.

    A cluster takes any Runtime; this lets one cluster run vLLM containers with the vLLM simulator
    and everything else with PlainRuntime.
    """

    rules: list[tuple[Callable[[Obj, Obj], bool], Runtime]] = field(default_factory=list)
    default: Runtime = field(default_factory=PlainRuntime)

    def start(self, ctx: ContainerContext) -> ContainerRun:
        """First accepting rule wins, so specific rules (vLLM argv) go before catch-alls; ``default`` otherwise."""
        for accepts, runtime in self.rules:
            if accepts(ctx.pod, ctx.container):
                return runtime.start(ctx)
        return self.default.start(ctx)
