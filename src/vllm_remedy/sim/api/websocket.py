"""The ``channel.k8s.io`` WebSocket protocol of ``pods/exec`` and ``pods/attach``, over wsproto (sans-IO).

kubectl ≥ 1.30 streams exec/attach over a WebSocket whose binary messages start with a channel byte:
0 stdin, 1 stdout, 2 stderr, 3 error (a ``Status`` that ends the session, carrying the exit code),
4 resize; ``v5.channel.k8s.io`` adds 255, "this channel is closed" (how stdin's end reaches the server).
Framing, masking, fragments, ping/pong and the close handshake are wsproto's; this module maps messages to
channels and keeps what the client sent in an ``Inbox``. The server does the socket I/O. SPDY (kubectl
1.20, and the fallback kubectl tries when an upgrade fails) is answered with a 400 naming the limitation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage

from vllm_remedy.sim.store import ApiError

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
RAW = 256  # not a channel: the message goes out as is (SPDY tunnelled in WebSocket has no channel byte)
SPDY = ("exec/attach needs a WebSocket upgrade (kubectl >= 1.30); SPDY streams are not supported by the "
        "rehearsal cluster")


def negotiate(headers: dict[str, str], protocols: tuple[str, ...] = PROTOCOLS,
              spdy: str = SPDY) -> tuple[str, str]:
    """(Sec-WebSocket-Accept, chosen subprotocol) for an upgrade request, or a 400 Status."""
    if headers.get("upgrade", "").lower() != "websocket":
        raise ApiError(400, "BadRequest", spdy)
    key = headers.get("sec-websocket-key", "")
    offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
    chosen = next((p for p in protocols if p in offered), None)
    if not key or chosen is None:
        raise ApiError(400, "BadRequest", f"unsupported stream protocols {offered}; the rehearsal cluster speaks "
                                          f"{', '.join(protocols)}")
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    return accept, chosen


class Inbox:
    """What the client has sent so far: stdin bytes, whether stdin ended, whether the client left.

    ``pump(timeout)`` is installed by the server once the connection is upgraded: it waits up to
    ``timeout`` seconds for input and feeds it here, so a session reads stdin on its own thread.
    """

    def __init__(self) -> None:
        self.stdin = bytearray()
        self.stdin_closed = False
        self.gone = False
        self.pump: Callable[[float], None] = lambda timeout: None
        self._lock = threading.Lock()

    def read_to_end(self, stop: threading.Event, poll: float = 0.2) -> bytes:
        """All of stdin, once the client closed it (v5) or left; empty if the server stops first."""
        while not (self.stdin_closed or self.gone or stop.is_set()):
            self.pump(poll)
        with self._lock:
            return bytes(self.stdin)

    def take(self) -> bytes:
        """The stdin bytes received since the last call (an interactive session reads as it goes)."""
        with self._lock:
            data, self.stdin = bytes(self.stdin), bytearray()
            return data

    def message(self, data: bytes) -> None:
        """One whole WebSocket message: its first byte names the channel."""
        if data:
            self.receive(data[0], data[1:])

    def receive(self, channel: int, data: bytes) -> None:
        """One channel message from the client."""
        with self._lock:
            if channel == STDIN:
                self.stdin += data
            elif channel == CLOSE and data[:1] == bytes([STDIN]):
                self.stdin_closed = True


class Channels:
    """The server side of one upgraded connection: bytes in → Inbox, (channel, data) → bytes out."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox
        self._ws = Connection(ConnectionType.SERVER)
        self._partial = bytearray()

    def feed(self, data: bytes) -> bytes:
        """Take bytes read from the socket (b"" = EOF); returns bytes to write back (pong, close reply)."""
        self._ws.receive_data(data or None)
        reply = b""
        for event in self._ws.events():
            if isinstance(event, (BytesMessage, TextMessage)):
                chunk = event.data if isinstance(event.data, bytes) else event.data.encode()
                self._partial += chunk
                if event.message_finished:
                    message, self._partial = bytes(self._partial), bytearray()
                    self.inbox.message(message)
            elif isinstance(event, Ping):
                reply += self._ws.send(event.response())
            elif isinstance(event, CloseConnection):
                if self._ws.state == ConnectionState.REMOTE_CLOSING:
                    reply += self._ws.send(event.response())
                self.inbox.gone = True
        if not data:
            self.inbox.gone = True
        return reply

    def send(self, channel: int, data: bytes) -> bytes:
        """A binary message on a channel (stdout, stderr, error), or as is on RAW."""
        return self._ws.send(BytesMessage(data if channel == RAW else bytes([channel]) + data))

    def close(self) -> bytes:
        """The close frame ending the session, so kubectl ends cleanly rather than on a dropped socket."""
        if self._ws.state != ConnectionState.OPEN:
            return b""
        return self._ws.send(CloseConnection(code=1000))


def exit_status(code: int, command: list[str] | None = None) -> bytes:
    """The error-channel Status kubectl turns into its exit code."""
    status: dict[str, Any]
    if code == 0:
        status = {"metadata": {}, "status": "Success"}
    else:
        what = f"error executing command [{' '.join(command)}]" if command else "error executing command"
        status = {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                  "message": f"command terminated with non-zero exit code: {what}, exit code {code}",
                  "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
    return json.dumps(status).encode()
