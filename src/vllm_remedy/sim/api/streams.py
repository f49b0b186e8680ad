"""``pods/attach`` and ``pods/exec``: what a session sends on each channel.

Attach follows the container's output (``Cluster.read_log``) until that run of the container ends,
then reports its exit code — which is how ``kubectl debug node/<node> -it ... -- nvidia-smi`` shows
the command's output. Exec needs the cluster to offer ``exec(namespace, pod, container, command, stdin)
-> (exit code, stdout, stderr)``; without it the request is a 400 saying so. With ``stdin=true`` the command
runs once the client has closed stdin (``kubectl exec -i ... < file``), as a pipe-fed process would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from vllm_remedy.sim.api import shell_session
from vllm_remedy.sim.api.http import Request
from vllm_remedy.sim.api.reads import container_of
from vllm_remedy.sim.api.routing import Route
from vllm_remedy.sim.api.websocket import ERROR, STDERR, STDOUT, Inbox, exit_status
from vllm_remedy.sim.protocols import ClusterLike
from vllm_remedy.sim.shell import SHELLS
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
Message = tuple[int, bytes]  # (channel, data); channel -1 = idle tick (the server checks the client)
POLL = 0.2
# A real exec's first output comes after the container runtime has started the process (runc exec: tens of ms).
# client-go's WebSocket executor starts reading before it has created its stdout/stderr streams
# (remotecommand/websocket.go StreamWithContext: readDemuxLoop runs beside streamer.stream), so output that
# arrives sooner is discarded ("Unknown stream id 1") and the session fails with "closed all streams"; a runtime
# that answered in microseconds would make kubectl exec flaky under load, which real clusters are not.
EXEC_START_S = 0.15


def _status(pod: Obj, container: str) -> Obj:
    return next((cs for cs in pod.get("status", {}).get("containerStatuses") or [] if cs.get("name") == container),
                {})


def _running(pod: Obj, container: str) -> None:
    if "running" not in (_status(pod, container).get("state") or {}):
        raise ApiError(400, "BadRequest", f"unable to upgrade connection: container {container} not running in "
                                          f"pod {pod['metadata']['name']}")


def attach(cluster: ClusterLike, route: Route, req: Request, stop: threading.Event,
           inbox: Inbox) -> Iterator[Message]:
    """Validate now (errors become HTTP Status), then stream the container's output until it exits; a shell
    reading stdin takes commands from the attached stdin instead (``shell_session``)."""
    namespace, name = route.namespace or "", route.name or ""
    pod = cluster.store.get("pods", namespace, name)
    container = container_of(pod, req)
    _running(pod, container)
    run, end = getattr(cluster, "exec", None), getattr(cluster, "end_container", None)
    if req.query.get("stdin") in ("true", "1") and run is not None and end is not None \
            and shell_session.interactive(pod, container):
        spec = pod.get("spec") or {}
        hostname = str(spec.get("nodeName") or name) if spec.get("hostNetwork") else name
        return shell_session.session(lambda argv: run(namespace, name, container, argv),
                                     lambda code: end(namespace, name, container, code), inbox, stop, hostname,
                                     shell_session.on_pty(pod, container))
    restarts = _status(pod, container).get("restartCount", 0)

    def messages() -> Iterator[Message]:
        sent = ""
        while True:
            current = cluster.store.find("pods", namespace, name)
            try:
                text = cluster.read_log(namespace, name, container, False)
            except ApiError:
                text = sent
            if text.startswith(sent) and len(text) > len(sent):
                yield STDOUT, text[len(sent):].encode()
            sent = text
            state = _status(current, container) if current else {}
            terminated = (state.get("state") or {}).get("terminated") or (
                (state.get("lastState") or {}).get("terminated") if state.get("restartCount", 0) > restarts else None)
            if current is None or terminated:
                yield ERROR, exit_status(int((terminated or {}).get("exitCode", 0)))
                return
            if stop.wait(POLL):
                return
            yield -1, b""

    return messages()


def exec_(cluster: ClusterLike, route: Route, req: Request, command: list[str], inbox: Inbox,
          stop: threading.Event) -> Iterator[Message]:
    """pods/exec: validate before the stream opens so errors are HTTP statuses, then run once and stream."""
    namespace, name = route.namespace or "", route.name or ""
    pod = cluster.store.get("pods", namespace, name)
    container = container_of(pod, req)
    if not command:
        raise ApiError(400, "BadRequest", "you must specify at least 1 command")
    run = getattr(cluster, "exec", None)
    if run is None:
        raise ApiError(400, "BadRequest", "exec is not supported by this rehearsal cluster's container runtime")
    _running(pod, container)

    wants_stdin = req.query.get("stdin") in ("true", "1")
    tty = req.query.get("tty") in ("true", "1")
    if wants_stdin and command[0] in SHELLS and "-c" not in command:  # `kubectl exec -it POD -- bash`
        spec = pod.get("spec") or {}
        hostname = str(spec.get("nodeName") or name) if spec.get("hostNetwork") else name
        return shell_session.session(lambda argv: run(namespace, name, container, argv), lambda code: None,
                                     inbox, stop, hostname, tty)

    def messages() -> Iterator[Message]:
        # surrogateescape: binary stdin (kubectl cp's tar stream) reaches the command byte for byte
        stdin = inbox.read_to_end(stop).decode("utf-8", "surrogateescape") if wants_stdin else ""
        stop.wait(EXEC_START_S)  # the runtime starting the process
        code, out, err = run(namespace, name, container, command, stdin)  # only once the stream is open
        if tty:  # a terminal has one output stream
            out, err = out + err, ""
        if out:
            yield STDOUT, out.encode("utf-8", "surrogateescape")
        if err:
            yield STDERR, err.encode("utf-8", "surrogateescape")
        yield ERROR, exit_status(int(code), command)

    return messages()
