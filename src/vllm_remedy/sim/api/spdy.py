"""SPDY/3.1 frames, as much as ``kubectl port-forward`` tunnels through its WebSocket (no I/O here).

kubectl ≥ 1.31 opens port-forward as a WebSocket with subprotocol ``SPDY/3.1+portforward.k8s.io`` and
runs an ordinary SPDY/3.1 session inside its binary messages. The client opens streams (SYN_STREAM)
whose headers say ``streamType`` (error or data), ``port`` and ``requestID``; the server confirms each with
SYN_REPLY and then moves bytes in DATA frames. Header blocks are one zlib stream per direction, primed
with the dictionary of the SPDY/3 draft (§2.6.10.1), which must match byte for byte.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FIN = 0x01
VERSION = 3

_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
    "allow authorization cache-control connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status|200 OK|version|HTTP/1.1|url public set-cookie "
    "keep-alive origin"
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)


def _words() -> list[str]:
    out: list[str] = []
    for i, chunk in enumerate(_WORDS.split("|")):
        out.extend([chunk] if i % 2 else chunk.split())  # odd chunks hold a space inside one word ("200 OK")
    return out


DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _words()) + _TAIL.encode()


@dataclass
class Frame:
    """One frame: ``kind`` 0 is DATA (``stream`` its stream), else a control frame type."""

    kind: int
    flags: int
    stream: int = 0
    data: bytes = b""  # DATA payload
    headers: dict[str, str] = field(default_factory=dict)  # SYN_STREAM / SYN_REPLY / HEADERS
    value: int = 0  # PING id, RST_STREAM / GOAWAY status


class Codec:
    """One side of a SPDY session: feed received bytes, get frames; build frames to send."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> Iterator[Frame]:
        """Every complete frame in what has arrived so far (a frame may span WebSocket messages)."""
        self._buf += data
        while len(self._buf) >= 8:
            length = int.from_bytes(self._buf[5:8], "big")
            if len(self._buf) < 8 + length:
                return
            head, body = bytes(self._buf[:8]), bytes(self._buf[8:8 + length])
            del self._buf[:8 + length]
            flags = head[4]
            if not head[0] & 0x80:
                yield Frame(0, flags, int.from_bytes(head[:4], "big") & 0x7FFFFFFF, body)
                continue
            kind = int.from_bytes(head[2:4], "big")
            stream = int.from_bytes(body[:4], "big") & 0x7FFFFFFF if len(body) >= 4 else 0
            if kind == SYN_STREAM:
                yield Frame(kind, flags, stream, headers=self._headers(body[10:]))
            elif kind in (SYN_REPLY, HEADERS):
                yield Frame(kind, flags, stream, headers=self._headers(body[4:]))
            elif kind in (RST_STREAM, GOAWAY):
                yield Frame(kind, flags, stream, value=int.from_bytes(body[4:8], "big"))
            elif kind == PING:
                yield Frame(kind, flags, value=stream)
            else:  # SETTINGS, WINDOW_UPDATE: nothing the server acts on
                yield Frame(kind, flags, stream)

    def _headers(self, block: bytes) -> dict[str, str]:
        raw = self._inflate.decompress(block)
        count, pos, out = int.from_bytes(raw[:4], "big"), 4, {}
        for _ in range(count):
            size = int.from_bytes(raw[pos:pos + 4], "big")
            name = raw[pos + 4:pos + 4 + size].decode()
            pos += 4 + size
            size = int.from_bytes(raw[pos:pos + 4], "big")
            out[name.lower()] = raw[pos + 4:pos + 4 + size].decode().split("\x00")[0]
            pos += 4 + size
        return out

    def _control(self, kind: int, flags: int, body: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, kind, flags << 24 | len(body)) + body

    def syn_reply(self, stream: int, headers: dict[str, str] | None = None) -> bytes:
        """Accept a stream the client opened."""
        pairs = sorted((headers or {}).items())
        raw = struct.pack(">I", len(pairs)) + b"".join(
            struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode() for k, v in pairs)
        block = self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        return self._control(SYN_REPLY, 0, struct.pack(">I", stream) + block)

    def data(self, stream: int, payload: bytes, fin: bool = False) -> bytes:
        """DATA frames for ``payload`` (split below SPDY's 24-bit length); ``fin`` half-closes the stream."""
        out, step = bytearray(), 1 << 16
        chunks = [payload[i:i + step] for i in range(0, len(payload), step)] or [b""]
        for i, chunk in enumerate(chunks):
            flags = FIN if fin and i == len(chunks) - 1 else 0
            out += struct.pack(">II", stream & 0x7FFFFFFF, flags << 24 | len(chunk)) + chunk
        return bytes(out)

    def ping(self, ping_id: int) -> bytes:
        """The PING reply: the same id back."""
        return self._control(PING, 0, struct.pack(">I", ping_id))

    def rst(self, stream: int, status: int = 5) -> bytes:
        """Reset a stream (5 = CANCEL)."""
        return self._control(RST_STREAM, 0, struct.pack(">II", stream, status))

    def goaway(self, last_stream: int) -> bytes:
        """The session is over: the last stream this side accepted."""
        return self._control(GOAWAY, 0, struct.pack(">II", last_stream, 0))
