"""An attached interactive shell: ``kubectl debug node/<n> -it --image=... [-- bash]``, ``kubectl attach -it``.

A container started with ``stdin: true`` and a bare shell (or its image's default command, a shell in the
CUDA and Ubuntu images) reads commands from the attached stdin. Each line runs as ``sh -c LINE`` in the
container (``Cluster.exec``); ``exit [N]``, or the end of stdin, ends the shell and so the container, whose
pod then completes. On a pty (the container's ``tty: true``, or ``exec -t``) the shell is interactive: it
prompts ``root@host:/# ``, and the line discipline echoes the input and ends lines in CR LF, whatever the
client's own stdin is; without one it runs the lines silently, as ``sh < script`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from vllm_remedy.sim.api.websocket import ERROR, STDOUT, Inbox, exit_status
from vllm_remedy.sim.shell import SHELLS

Obj = dict[str, Any]
Message = tuple[int, bytes]
Run = Callable[[list[str]], tuple[int, str, str]]
POLL = 0.2


def interactive(pod: Obj, container: str) -> bool:
    """Whether ``container`` is a shell reading stdin."""
    spec = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == container), {})
    argv = [*(spec.get("command") or []), *(spec.get("args") or [])]
    return bool(spec.get("stdin")) and (not argv or (argv[0] in SHELLS and "-c" not in argv))


def on_pty(pod: Obj, container: str) -> bool:
    """Whether the container's stdin is a terminal (``tty: true``: ``kubectl debug -it``, ``run -it``)."""
    spec = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == container), {})
    return bool(spec.get("tty"))


def _exit_code(line: str) -> int | None:
    words = line.split()
    if not words or words[0] not in ("exit", "logout"):
        return None
    return int(words[1]) if len(words) > 1 and words[1].lstrip("-").isdigit() else 0


def session(run: Run, end: Callable[[int], None], inbox: Inbox, stop: threading.Event, hostname: str,
            tty: bool) -> Iterator[Message]:
    """Prompt, read a line, run it, print its output; until ``exit`` or the end of stdin."""
    newline = b"\r\n" if tty else b"\n"
    prompt = f"root@{hostname}:/# ".encode() if tty else b""
    pending, code = b"", 0
    if prompt:
        yield STDOUT, prompt
    while not (stop.is_set() or inbox.gone):
        inbox.pump(POLL)
        data = inbox.take()
        if tty and data:
            typed = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            yield STDOUT, typed.replace(b"\n", b"\r\n")  # the pty echoes what is typed
        pending += data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        finished = inbox.stdin_closed and not data
        while b"\n" in pending or (finished and pending):
            line, _, pending = pending.partition(b"\n")
            text = line.decode("utf-8", "replace").strip()
            leave = _exit_code(text)
            if leave is not None:
                end(leave)
                yield ERROR, exit_status(leave)
                return
            if text:
                code, out, err = run(["sh", "-c", text])
                output = (out + err).encode("utf-8", "surrogateescape")
                if output:
                    yield STDOUT, output.replace(b"\n", newline) if tty else output
            if prompt:
                yield STDOUT, prompt
        if finished:
            end(code)
            yield ERROR, exit_status(code)
            return
        yield -1, b""
