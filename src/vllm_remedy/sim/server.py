"""The rehearsal cluster's HTTP server: several simulated clusters behind one 127.0.0.1 port.

Each cluster answers under ``/clusters/<name>`` (kubectl and the Python client both keep a path in
the kubeconfig ``server:``), so a fleet of clusters costs one port and one process. Streams (watch,
log follow) use chunked transfer on their own thread; everything else is one JSON body. With a
``state_dir``, a write is acknowledged only once it is on disk (``persist.StateKeeper``: write-ahead
log + snapshots), so neither a restart nor ``kill -9`` loses an answered write.
"""

from __future__ import annotations

import logging
import select
import selectors
import socket
import ssl
import threading
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from vllm_remedy.sim import kube_state_metrics, kubeconfig
from vllm_remedy.sim.api import reader_clock, websocket
from vllm_remedy.sim.api.auth import Authorizer
from vllm_remedy.sim.api.dispatch import ApiContext, handle
from vllm_remedy.sim.api.faults import Faults
from vllm_remedy.sim.api.http import MAX_BODY, Request, Response, error_response, json_response
from vllm_remedy.sim.persist import StateKeeper, load_state
from vllm_remedy.sim.protocols import ClusterLike
from vllm_remedy.sim.store import ApiError
from vllm_remedy.sim.tls import server_context

log = logging.getLogger(__name__)
DRAIN_LIMIT = 64 * 1024 * 1024  # oversize bodies up to this are read and dropped before the 413
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})  # answered only once durable
BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    sim: SimServer

    def server_activate(self) -> None:
        super().server_activate()
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = threading.Event()

    def serve(self) -> None:
        """``serve_forever`` woken by ``wake`` at once: polling for the stop every 0.2 s made each ``stop()`` wait
        ~0.2 s (every test's rehearsal cluster paid it), and a longer poll only costs idle wake-ups."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self and not self._stopping.is_set():
                        self._handle_request_noblock()

    def wake(self) -> None:
        """End ``serve`` (after the request it is accepting, if any)."""
        self._stopping.set()
        with suppress(OSError):  # stopped before (the socket is closed)
            self._wake_w.send(b"x")

    def server_close(self) -> None:
        super().server_close()
        self._wake_r.close()
        self._wake_w.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        """TLS handshake on the request's own thread so one slow client cannot stall the accept loop."""
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()  # here, on the request's thread, not in the accept loop
        super().setup()
        # Headers and body go out as separate writes; without NODELAY, Nagle + the client's delayed ACK
        # add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.kept: dict[str, Any] = {}  # per-connection state handed to every request (``reader_clock``'s shift)

    def log_message(self, format: str, *args: Any) -> None:
        """http.server's per-request lines go to debug logging, keeping ``sim up`` and test output quiet."""
        log.debug("%s " + format, self.address_string(), *args)

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The ``Date`` header in the addressed cluster's simulated time; a person's tool gets the wall clock.

        Clients measure the runbook's durations ("Ready for 30 minutes", toggle expiry) on the cluster's
        clock; this header is how a client outside the process learns it (``KubeClient.server_time``).
        kubectl is served every time on the wall clock (``reader_clock``), so its ``Date`` is the wall clock too.
        """
        headers = getattr(self, "headers", None)
        if timestamp is None and not reader_clock.is_reader(headers.get("User-Agent") if headers else None):
            contexts = self.server.sim.contexts
            name = self.path.split("/")[2] if self.path.startswith("/clusters/") else None
            ctx = contexts.get(name) if name else None
            if name is None and len(contexts) == 1:  # served without the prefix (`get --raw`, /healthz)
                ctx = next(iter(contexts.values()))
            if ctx is not None:
                timestamp = ctx.cluster.clock.now()
        return super().date_time_string(timestamp)

    def do_GET(self) -> None:
        """Every verb shares this entry (aliases below): routing by method and path happens in the API layer."""
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _read_body(self) -> bytes | None:
        """The body, or None when it exceeds MAX_BODY (the caller answers 413)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                if len(data) + size > MAX_BODY:
                    return None
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            if length <= DRAIN_LIMIT:  # read and drop it, so the client sees the 413 instead of a broken pipe
                while length > 0:
                    length -= len(self.rfile.read(min(length, 1 << 16)) or b"x" * length)
            return None
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        try:
            body = self._read_body()
        except ValueError:
            self.close_connection = True
            self._send(error_response(ApiError(400, "BadRequest", "malformed request body framing")))
            return
        if body is None:
            self.close_connection = True  # the unread body cannot be skipped on this connection
            self._send(error_response(ApiError(413, "RequestEntityTooLarge",
                                               f"Request entity too large: limit is {MAX_BODY}")))
            return
        url = urlsplit(self.path)
        pairs = parse_qsl(url.query, keep_blank_values=True)
        multi: dict[str, list[str]] = {}
        for key, value in pairs:
            multi.setdefault(key, []).append(value)
        req = Request(self.command, url.path, dict(pairs), {k.lower(): v for k, v in self.headers.items()}, body,
                      multi=multi, connection=self.kept)
        self._send(self.server.sim.dispatch(req))

    def _send(self, resp: Response) -> None:
        if resp.upgrade is not None:
            self._websocket(resp)
            return
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Cache-Control", "no-cache, private")
        for name, value in resp.headers.items():
            self.send_header(name, value)
        if resp.stream is None:
            self.send_header("Content-Length", str(len(resp.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(resp.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in resp.stream:
                if not chunk:
                    if self._client_gone():
                        break
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            close = getattr(resp.stream, "close", None)
            if close:
                close()

    def _websocket(self, resp: Response) -> None:
        """Switch to WebSocket and send the session's (channel, data) messages; then close.

        One thread does both directions: the session's idle ticks, and its reads of stdin, pump the socket's
        input into the inbox (``_pump``), so an SSL socket is never read and written at once.
        """
        assert resp.upgrade is not None and resp.stream is not None
        accept, protocol = resp.upgrade
        inbox = resp.inbox or websocket.Inbox()
        channels = websocket.Channels(inbox)
        inbox.pump = lambda timeout: self._pump(channels, timeout)
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", protocol)
        self.end_headers()
        self.close_connection = True
        try:
            for number, data in resp.stream:
                if number < 0:
                    self._pump(channels, 0)
                    if inbox.gone:
                        break
                    continue
                self.wfile.write(channels.send(number, data))
            self.wfile.write(channels.close())
            self.connection.settimeout(2.0)  # let the client's close reply arrive before the socket goes
            while not inbox.gone:
                self._pump(channels, 2.0)
        except (BrokenPipeError, ConnectionResetError, TimeoutError, OSError):
            pass
        finally:
            close = getattr(resp.stream, "close", None)
            if close:
                close()

    def _pump(self, channels: websocket.Channels, timeout: float) -> None:
        """Feed what the client sent within ``timeout`` seconds to the session; answer pings and closes."""
        conn = self.connection
        pending = conn.pending() if isinstance(conn, ssl.SSLSocket) else 0
        if not pending and not select.select([conn], [], [], timeout)[0]:
            return
        try:
            data = conn.recv(65536)
        except ssl.SSLWantReadError:
            return
        except OSError:
            data = b""
        reply = channels.feed(data)
        if reply:
            self.wfile.write(reply)

    def _client_gone(self) -> bool:
        """An idle stream checks whether the client hung up (readable with no data = closed)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            if isinstance(self.connection, ssl.SSLSocket):
                # No client sends on an open watch; what arrives is its close_notify or EOF.
                return True
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


#: Path prefix of each cluster's kube-state-metrics endpoint (``/kube-state-metrics/<cluster>/metrics``).
KSM_PREFIX = "kube-state-metrics"


class SimServer:
    """Serve ``clusters`` on ``host:port`` (0 = a free port). Call ``start()``/``stop()``."""

    def __init__(self, clusters: list[ClusterLike], *, host: str = "127.0.0.1", port: int = 0,
                 state_dir: Path | None = None, auth: Authorizer | None = None,
                 faults: dict[str, Any] | None = None, tls: tuple[Path, Path] | None = None,
                 durable: bool = True) -> None:
        self.auth = auth or Authorizer()
        self.stop_event = threading.Event()
        self.contexts: dict[str, ApiContext] = {}
        self.state_dir = state_dir
        self.state = StateKeeper(state_dir, durable=durable) if state_dir is not None else None
        self._httpd = _HTTPServer((host, port), _Handler)
        self.tls = tls
        self.scheme = "http"
        if tls is not None:
            self.scheme = "https"
            self._httpd.socket = server_context(*tls).wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False)
        self._httpd.sim = self
        self._threads: list[threading.Thread] = []
        for cluster in clusters:
            self.add_cluster(cluster)
        for name, rules in (faults or {}).items():
            if name in self.contexts:
                self.contexts[name].faults.set(rules)

    @property
    def url(self) -> str:
        """Scheme, host and bound port; known only after binding, since port 0 picks a free one."""
        host, port = self._httpd.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def cluster_url(self, name: str) -> str:
        """One cluster's API root: the ``server:`` a kubeconfig for that cluster needs."""
        return f"{self.url}/clusters/{name}"

    def write_kubeconfig(self, path: Path, users: dict[str, str] | None = None,
                         default_user: str | None = None) -> Path:
        """A kubeconfig with one context per served cluster (and per extra token user), CA included."""
        return kubeconfig.write(path, self.url, list(self.contexts), users, default_user,
                                ca_pem=self.tls[0].read_bytes() if self.tls else None)

    def add_cluster(self, cluster: ClusterLike) -> None:
        """Serve ``cluster`` under /clusters/<name>; creates the namespaces kube-apiserver bootstraps."""
        for ns in BOOTSTRAP_NAMESPACES:
            if cluster.store.find("namespaces", "", ns) is None:
                cluster.store.create("namespaces", {
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        self.contexts[cluster.name] = ApiContext(cluster, f"/clusters/{cluster.name}", self.auth, Faults(),
                                                 self.stop_event)
        if self.state is not None:
            self.state.add(cluster)

    def dispatch(self, req: Request) -> Response:
        """Route a raw request: ``/clusters/<name>/...`` to that cluster, ``/admin/...`` to the admin API."""
        parts = req.path.split("/", 3)  # ['', 'clusters', name, rest]
        if len(parts) >= 3 and parts[1] == "clusters":
            ctx = self.contexts.get(parts[2])
            if ctx is None:
                return error_response(ApiError(404, "NotFound", f'cluster "{parts[2]}" is not served here'))
            req.path = "/" + (parts[3] if len(parts) > 3 else "")
            return self._handle(ctx, req)
        if parts[1:2] == ["admin"]:
            return self._admin(req)
        if parts[1:2] == [KSM_PREFIX] and req.method == "GET":
            return self._kube_state_metrics(req.path)
        if req.path in ("/healthz", "/livez", "/readyz"):
            return Response(200, b"ok", "text/plain")
        if len(self.contexts) == 1:
            # `kubectl get --raw` drops the kubeconfig server path; with one cluster the answer is unambiguous.
            return self._handle(next(iter(self.contexts.values())), req)
        return error_response(ApiError(404, "NotFound", f"no cluster in path {req.path}; use /clusters/<name>/..."))

    def _handle(self, ctx: ApiContext, req: Request) -> Response:
        """Answer through the API layer; a write's answer waits until the cluster's changes are durable. A
        person's tool (kubectl) reads and writes times on its wall clock (``reader_clock``)."""
        by = reader_clock.held_shift(req, ctx.cluster.name, ctx.cluster.clock)
        if by is not None:
            reader_clock.received(req, by, ctx.cluster.clock)
        resp = handle(ctx, req)
        if by is not None:
            resp = reader_clock.present(resp, req, ctx.cluster.clock, by)
        if self.state is not None and req.method in WRITES:
            try:
                self.state.sync(ctx.cluster.name)
            except OSError as exc:  # not durable, so not acknowledged
                log.exception("write-ahead log sync failed")
                return error_response(ApiError(500, "InternalError", f"state not saved: {exc}"))
        return resp

    def _kube_state_metrics(self, path: str) -> Response:
        """``GET /kube-state-metrics/<cluster>/metrics``: what kube-state-metrics would serve for that cluster
        (unauthenticated, as kube-state-metrics is scraped in-cluster)."""
        parts = path.split("?", 1)[0].strip("/").split("/")
        ctx = self.contexts.get(parts[1]) if len(parts) == 3 and parts[2] == "metrics" else None
        if ctx is None:
            return error_response(ApiError(404, "NotFound", f"no kube-state-metrics at {path}; "
                                           f"use /{KSM_PREFIX}/<cluster>/metrics"))
        store = ctx.cluster.store
        text = kube_state_metrics.exposition(store.list("deployments.apps")[0], store.list("pods")[0])
        return Response(200, text.encode(), kube_state_metrics.CONTENT_TYPE)

    def _admin(self, req: Request) -> Response:
        """``GET /admin/clusters``; ``GET|PUT|DELETE /admin/clusters/<name>/faults``."""
        try:
            identity = self.auth.authenticate(req.headers.get("authorization"))
            self.auth.authorize(identity, "*", "update" if req.method != "GET" else "get", "admin", None, None)
            parts = [p for p in req.path.split("/") if p]
            if parts == ["admin", "clusters"]:
                return json_response({"clusters": sorted(self.contexts)})
            if len(parts) == 4 and parts[:2] == ["admin", "clusters"] and parts[3] == "faults":
                ctx = self.contexts.get(parts[2])
                if ctx is None:
                    raise ApiError(404, "NotFound", f'cluster "{parts[2]}" is not served here')
                if req.method == "PUT":
                    ctx.faults.set(req.json_body())
                elif req.method == "DELETE":
                    ctx.faults.clear()
                return json_response({"rules": ctx.faults.describe()})
            raise ApiError(404, "NotFound", f"unknown admin path {req.path}")
        except ApiError as err:
            return error_response(err)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """With ``state_dir``, open the write-ahead logs and snapshot first; then serve on a background thread."""
        if self.state is not None:
            self.state.start()
        serve = threading.Thread(target=self._httpd.serve, name="sim-http", daemon=True)
        serve.start()
        self._threads.append(serve)

    def stop(self) -> None:
        """Stop serving (open watches end), then write every cluster's state one last time."""
        self.stop_event.set()
        self._httpd.wake()
        for thread in self._threads:
            thread.join(timeout=5)
        self._httpd.server_close()
        if self.state is not None:
            self.state.stop()


__all__ = ["SimServer", "load_state"]
