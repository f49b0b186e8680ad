"""The responder's HTTP side: ``POST /alertmanager`` (bearer token), ``GET /healthz``, ``GET /metrics``.

Alertmanager waits for the answer and retries on a timeout, so the handler only authenticates, parses and
queues; the deploys run after the reply (responder.py), and the threaded server keeps answering meanwhile.
The token is checked before the body is read, an idle connection is dropped after :data:`IDLE` seconds, and at
most :data:`CONNECTIONS` are served at once (more are closed unanswered), so no client can hold threads.
"""

from __future__ import annotations

import hmac
import json
import logging
import queue
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .responder import Responder
from .webhook import MAX_BODY, PayloadError, parse, printable

log = logging.getLogger("vllm_remedy.respond")
PATH = "/alertmanager"
#: Seconds a connection may sit silent (headers, body, keep-alive) before it is closed.
IDLE = 10.0
#: Connections served at once; Alertmanager opens a few.
CONNECTIONS = 64


class Handler(BaseHTTPRequestHandler):
    """One request; ``server`` is a :class:`Server`."""

    server: Server
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.timeout = self.server.idle  # StreamRequestHandler puts it on the socket: a longer wait ends the connection
        super().setup()

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), printable(format % args))

    def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, doc: dict[str, object]) -> None:
        self._answer(status, json.dumps(doc).encode() + b"\n")

    def _route(self) -> str:
        return self.path.partition("?")[0]

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._json(405, {"error": f"{self.command} {printable(self._route())}: not allowed (POST {PATH}, GET /healthz, "
                                  "GET /metrics)"})

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _not_allowed

    def do_GET(self) -> None:
        path = self._route()
        if path == "/healthz":
            self._answer(200, b"ok\n", "text/plain; charset=utf-8")
        elif path == "/metrics":
            self._answer(200, generate_latest(self.server.responder.metrics.registry), CONTENT_TYPE_LATEST)
        else:
            self._json(404, {"error": f"{printable(path)}: not found (POST {PATH}, GET /healthz, GET /metrics)"})

    def do_POST(self) -> None:
        if self._route() != PATH:
            self.close_connection = True  # the body is left unread
            self._json(404, {"error": f"{printable(self._route())}: not found (POST {PATH})"})
            return
        if not self._authorized():  # before the body: an unauthenticated client gets nothing read for it
            self.close_connection = True
            self._json(401, {"error": "Authorization: expected the responder's bearer token"})
            log.warning("%s: webhook refused: no or wrong bearer token", self.address_string())
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > MAX_BODY:
            self.close_connection = True
            self._json(400, {"error": f"Content-Length: expected a length up to {MAX_BODY} bytes"})
            return
        body = self.rfile.read(int(length))
        try:
            notification = parse(body)
        except PayloadError as exc:
            self._json(400, {"error": str(exc)})
            log.warning("%s: webhook refused: %s", self.address_string(), printable(str(exc)))
            return
        try:
            self.server.responder.submit(notification)
        except queue.Full:
            self._json(503, {"error": "busy: too many alerts waiting; retry later"})
            log.warning("%s: webhook refused: the queue is full", self.address_string())
            return
        self._json(200, {"status": "accepted", "alerts": len(notification.alerts)})

    def _authorized(self) -> bool:
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.server.token)


class Server(ThreadingHTTPServer):
    """The HTTP server holding the responder and the expected token."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], responder: Responder, token: str,
                 connections: int = CONNECTIONS, idle: float = IDLE) -> None:
        super().__init__(address, Handler)
        self.idle = idle
        self.responder = responder
        self.token = token.encode()
        self._slots = threading.BoundedSemaphore(connections)
        self._thread: threading.Thread | None = None

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        if not self._slots.acquire(blocking=False):
            log.warning("%s: connection closed: %d connections already open", client_address, CONNECTIONS)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def finish_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        try:
            super().finish_request(request, client_address)
        finally:  # before the socket closes: a client that sees the close may connect again at once
            self._slots.release()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        """Serve in a background thread (tests); the command calls serve_forever itself. ``stop`` waits for the
        loop's next poll: 0.05 s here, not socketserver's 0.5 s, which every test's stop paid."""
        self.responder.start()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="respond-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.responder.stop()
