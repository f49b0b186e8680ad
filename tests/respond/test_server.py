"""The HTTP side in process: what it answers before any inventory is read, and that no client can hold it.

The responder is not started here, so nothing leaves its queue: what is queued, refused or read is exactly what
the request did."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.responder import TOKEN, alert, payload, write_inventory
from fixtures.serving import serve_in_thread
from vllm_remedy.respond.responder import Responder, Settings
from vllm_remedy.respond.server import Server


def _serve(tmp_path: Path, connections: int) -> Iterator[Server]:
    responder = Responder(Settings(write_inventory(tmp_path, "auto")), queue_size=1)
    srv = Server(("127.0.0.1", 0), responder, TOKEN, connections=connections, idle=1.0)
    serve_in_thread(srv)
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    yield from _serve(tmp_path, 64)


@pytest.fixture
def two(tmp_path: Path) -> Iterator[Server]:
    """At most two connections at once."""
    yield from _serve(tmp_path, 2)


def _send(srv: Server, raw: bytes) -> bytes:
    """``raw`` on a fresh connection; everything the server sends until it closes (or 15 s pass)."""
    with socket.create_connection(srv.server_address[:2], timeout=15) as conn:
        conn.sendall(raw)
        got = b""
        while chunk := conn.recv(65536):
            got += chunk
        return got


def _post(srv: Server, body: bytes, path: str = "/alertmanager", token: str = TOKEN, method: str = "POST",
          length: int | None = None) -> tuple[int, dict]:
    head = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\n\r\n").encode()
    got = _send(srv, head + body)
    status, _, rest = got.partition(b"\r\n\r\n")
    return int(status.split()[1]), json.loads(rest)


def test_junk_is_settled_without_the_inventory_and_a_full_queue_is_503(server: Server) -> None:
    responder = server.responder
    junk = payload([alert(f"Made-up {i}", f"{i:04x}") for i in range(10)]
                   + [alert("VllmCrashLoopBackOff", "0bad", "resolved", namespace="llm", deployment="x")])
    assert _post(server, junk) == (200, {"status": "accepted", "alerts": 11})
    assert responder.inventory.loads == 0 and responder._queue.qsize() == 0
    page = payload([alert("VllmCrashLoopBackOff", "c0de", namespace="llm", deployment="llama-8b")])
    assert _post(server, page, path="/alertmanager?source=am")[0] == 200  # a query string is no other path
    assert responder._queue.qsize() == 1 and responder.inventory.loads == 0
    two = payload([alert("VllmCudaOomRestart", "c0d1", namespace="llm", deployment="llama-8b"),
                   alert("VllmCrashLoopBackOff", "c0d2", namespace="llm", deployment="llama-8b")])
    assert _post(server, two) == (503, {"error": "busy: too many alerts waiting; retry later"})
    assert responder._queue.qsize() == 1  # none of the refused notification was queued
    metrics = _send(server, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").decode()
    assert 'alertname="other",decision="ignored"} 10.0' in metrics  # not one series per name a sender makes up


def test_bad_requests_are_one_line(server: Server) -> None:
    assert _post(server, b"[" * 5000 + b"]" * 5000) == (400, {"error": "body: JSON nested too deeply"})
    assert _post(server, b"{}", method="PUT") == (
        405, {"error": "PUT /alertmanager: not allowed (POST /alertmanager, GET /healthz, GET /metrics)"})
    assert _post(server, b"", path="/metrics", method="DELETE")[0] == 405
    # the token is checked before the body is read: a client announcing 1 MB and sending none is answered at once
    assert _post(server, b"", token="guess", length=1 << 20) == (
        401, {"error": "Authorization: expected the responder's bearer token"})


def test_idle_and_surplus_connections_are_closed(two: Server) -> None:
    """A silent client is dropped after the idle timeout; past the connection cap, a new one is closed unanswered."""
    first = socket.create_connection(two.server_address[:2], timeout=15)
    second = socket.create_connection(two.server_address[:2], timeout=15)
    try:
        assert _send(two, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") == b""  # cap of 2: closed at once
        assert first.recv(100) == b"" and second.recv(100) == b""  # idle 1 s: the server hangs up, no answer
        assert _send(two, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").endswith(b"ok\n")
    finally:
        first.close()
        second.close()
