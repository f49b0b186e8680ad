"""``pods/portforward``: a TCP connection to a container port, carried over the API server's WebSocket.

Two framings reach the same simulated container: kubectl ≥ 1.31 tunnels a SPDY/3.1 session in the
WebSocket (``SPDY/3.1+portforward.k8s.io``, one stream pair per local connection, ``spdy``); the official
Python client speaks ``v4.channel.k8s.io`` (data on channel 2i, errors on 2i+1 for the i-th port, each
channel opened by the port number). What flows is HTTP/1.x, because the simulated containers are HTTP
servers (``Cluster.proxy``): each complete request gets the container's answer. SPDY without WebSocket
(kubectl 1.20, or kubectl's fallback) is a 400 naming the limit, so it fails at once instead of hanging.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http import HTTPStatus

from vllm_remedy.sim.api import spdy
from vllm_remedy.sim.api.http import Request
from vllm_remedy.sim.api.routing import Route
from vllm_remedy.sim.api.websocket import RAW, Inbox, negotiate
from vllm_remedy.sim.protocols import ClusterLike
from vllm_remedy.sim.store import ApiError

Message = tuple[int, bytes]
Answer = Callable[[str], tuple[int, str, bytes]]  # path -> (status, content type, body)
TUNNEL = "SPDY/3.1+portforward.k8s.io"
CHANNELS = "v4.channel.k8s.io"
PROTOCOLS = (TUNNEL, CHANNELS)
POLL = 0.2
SPDY_ONLY = ("port-forward needs a WebSocket upgrade (kubectl >= 1.31, or 1.30 with "
             "KUBECTL_PORT_FORWARD_WEBSOCKETS=true); SPDY streams are not supported by the rehearsal cluster; read "
             "a container's HTTP port with: kubectl get --raw /api/v1/namespaces/NAMESPACE/pods/POD:PORT/proxy/PATH")


class TunnelInbox(Inbox):
    """The tunnelled SPDY session: every WebSocket message is the next bytes of one stream."""

    def message(self, data: bytes) -> None:
        """Append the whole message (no channel byte)."""
        self.receive(0, data)


class PortInbox(Inbox):
    """v4 channels: what the client wrote to each port's data channel."""

    def __init__(self) -> None:
        super().__init__()
        self.channels: dict[int, bytearray] = {}

    def receive(self, channel: int, data: bytes) -> None:
        """Keep data per channel; the error channels are the server's to write."""
        self.channels.setdefault(channel, bytearray()).extend(data)

    def take_channel(self, channel: int) -> bytes:
        """What arrived on ``channel`` since the last call."""
        data = bytes(self.channels.get(channel, b""))
        self.channels[channel] = bytearray()
        return data


class Exchange:
    """One connection to a container port carrying HTTP/1.x: whole requests in, the container's answers out."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._buf = bytearray()
        self.closed = False  # the server side closed (the client asked for Connection: close, or HTTP/1.0)

    def feed(self, data: bytes) -> bytes:
        """Responses to every complete request in what has arrived so far."""
        self._buf += data
        out = bytearray()
        while not self.closed and b"\r\n\r\n" in self._buf:
            head, _, rest = bytes(self._buf).partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(headers.get("content-length", "0") or 0)
            if len(rest) < length:
                return bytes(out)
            del self._buf[:len(head) + 4 + length]
            method, path, version = [*lines[0].split(" "), "", "", ""][:3]
            self.closed = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
            out += self._respond(method, path, version)
        return bytes(out)

    def _respond(self, method: str, path: str, version: str) -> bytes:
        if not path.startswith("/") or not version.startswith("HTTP/1."):
            status, kind, body = 400, "text/plain; charset=utf-8", b"400 Bad Request"
            self.closed = True
        else:
            status, kind, body = self._answer(path)
        reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        head = [f"HTTP/1.1 {status} {reason}", f"content-type: {kind}", f"content-length: {len(body)}",
                "server: uvicorn"]  # vLLM's OpenAI server runs on uvicorn
        if self.closed:
            head.append("connection: close")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + (b"" if method == "HEAD" else body)


def _refused(cluster: ClusterLike, namespace: str, pod: str, port: int) -> str | None:
    """The error the kubelet reports when nothing listens on ``port`` in the pod, else None."""
    obj = cluster.store.get("pods", namespace, pod)
    declared = {int(p["containerPort"]) for c in obj.get("spec", {}).get("containers") or []
                for p in c.get("ports") or [] if str(p.get("containerPort", "")).isdigit()}
    status, _, body = cluster.proxy(namespace, pod, port, "/")
    if port in declared and not (status == 503 and b"connection refused" in body):
        return None
    uid = obj["metadata"].get("uid", "")
    return (f"error forwarding port {port} to pod {uid}, uid : failed to connect to localhost:{port} inside "
            f"namespace {pod}: dial tcp4 127.0.0.1:{port}: connect: connection refused")


def _ports(req: Request) -> list[int]:
    texts = [p for value in req.multi.get("ports", []) for p in value.split(",") if p.strip()]
    if not texts or not all(t.strip().isdigit() and 0 < int(t) < 65536 for t in texts):
        raise ApiError(400, "BadRequest", "invalid port(s) in query parameter ports: "
                                          f"{','.join(texts) or '(none)'}; want 1-65535")
    return [int(t) for t in texts]


def open_session(cluster: ClusterLike, route: Route, req: Request,
                 stop: threading.Event) -> tuple[str, str, Iterator[Message], Inbox]:
    """Validate (errors are plain Statuses), then (accept, protocol, messages, inbox) for the upgrade."""
    namespace, name = route.namespace or "", route.name or ""
    pod = cluster.store.get("pods", namespace, name)
    if (pod.get("status") or {}).get("phase") != "Running":
        raise ApiError(400, "BadRequest", f"unable to upgrade connection: pod {name} is not running")
    accept, protocol = negotiate(req.headers, PROTOCOLS, SPDY_ONLY)
    refused = lambda port: _refused(cluster, namespace, name, port)  # noqa: E731
    answer_on = lambda port: lambda path: cluster.proxy(namespace, name, port, path)  # noqa: E731
    if protocol == TUNNEL:
        tunnel_inbox = TunnelInbox()
        return accept, protocol, tunnel(answer_on, refused, tunnel_inbox, stop), tunnel_inbox
    ports = _ports(req)
    port_inbox = PortInbox()
    return accept, protocol, channels(ports, answer_on, refused, port_inbox, stop), port_inbox


def tunnel(answer_on: Callable[[int], Answer], refused: Callable[[int], str | None], inbox: Inbox,
           stop: threading.Event) -> Iterator[Message]:
    """The SPDY session: each (error, data) stream pair with one requestID is one connection."""
    codec = spdy.Codec()
    kinds: dict[int, tuple[str, str]] = {}  # stream id -> (streamType, requestID)
    errors: dict[str, int] = {}  # requestID -> its error stream
    conns: dict[int, Exchange] = {}  # data stream id -> its connection
    last = 0
    while not (stop.is_set() or inbox.gone):
        inbox.pump(POLL)
        out = bytearray()
        for frame in codec.feed(inbox.take()):
            if frame.kind == spdy.SYN_STREAM:
                last = max(last, frame.stream)
                kind, request = frame.headers.get("streamtype", ""), frame.headers.get("requestid", "")
                kinds[frame.stream] = (kind, request)
                out += codec.syn_reply(frame.stream)
                if kind == "error":
                    errors[request] = frame.stream
                elif kind == "data":
                    port = int(frame.headers.get("port", "0") or 0)
                    problem = refused(port)
                    if problem is None:
                        conns[frame.stream] = Exchange(answer_on(port))
                    else:  # the kubelet reports the failed dial on the error stream, then both end
                        out += codec.data(errors.get(request, frame.stream), problem.encode(), fin=True)
                        out += codec.data(frame.stream, b"", fin=True)
            elif frame.kind == 0 and frame.stream in conns:
                conn = conns[frame.stream]
                reply = conn.feed(frame.data)
                if reply:
                    out += codec.data(frame.stream, reply)
                if conn.closed or frame.flags & spdy.FIN:  # either side ended the connection
                    del conns[frame.stream]
                    out += codec.data(frame.stream, b"", fin=True)
                    error = errors.pop(kinds[frame.stream][1], None)
                    if error is not None:
                        out += codec.data(error, b"", fin=True)  # no error: kubectl reads it to EOF
            elif frame.kind == spdy.PING:
                out += codec.ping(frame.value)
            elif frame.kind == spdy.RST_STREAM:
                conns.pop(frame.stream, None)
            elif frame.kind == spdy.GOAWAY:
                return
        yield (RAW, bytes(out)) if out else (-1, b"")
    if last:
        yield RAW, codec.goaway(last)


def channels(ports: list[int], answer_on: Callable[[int], Answer], refused: Callable[[int], str | None],
             inbox: PortInbox, stop: threading.Event) -> Iterator[Message]:
    """v4 channels: announce each port on its two channels, then answer what arrives on the data channels."""
    conns: dict[int, Exchange] = {}
    for i, port in enumerate(ports):
        number = port.to_bytes(2, "little")
        yield 2 * i, number
        yield 2 * i + 1, number
        problem = refused(port)
        if problem is None:
            conns[2 * i] = Exchange(answer_on(port))
        else:
            yield 2 * i + 1, problem.encode()
    while conns and not (stop.is_set() or inbox.gone):
        inbox.pump(POLL)
        sent = False
        for channel, conn in list(conns.items()):
            reply = conn.feed(inbox.take_channel(channel))
            if reply:
                sent = True
                yield channel, reply
            if conn.closed:
                del conns[channel]
        if not sent:
            yield -1, b""
