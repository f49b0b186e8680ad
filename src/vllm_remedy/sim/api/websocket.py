"""WebSocket framing for ``pods/exec`` and ``pods/attach`` (the ``v5.channel.k8s.io`` protocol).

kubectl ≥ 1.30 streams exec/attach over a WebSocket whose binary messages start with a channel
byte: 0 stdin, 1 stdout, 2 stderr, 3 error (a ``Status`` that ends the session, carrying the exit
code), 4 resize. Only the server side of RFC 6455 that kubectl exercises is here; SPDY (kubectl
1.20) is answered with a 400 naming the limitation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from typing import Any

from vllm_remedy.sim.store import ApiError

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDOUT, STDERR, ERROR = 1, 2, 3


def negotiate(headers: dict[str, str]) -> tuple[str, str]:
    """(Sec-WebSocket-Accept, chosen subprotocol) for an upgrade request, or a 400 Status."""
    if headers.get("upgrade", "").lower() != "websocket":
        raise ApiError(400, "BadRequest", "exec/attach needs a WebSocket upgrade (kubectl >= 1.30); SPDY streams "
                                          "are not supported by the rehearsal cluster")
    key = headers.get("sec-websocket-key", "")
    offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
    chosen = next((p for p in PROTOCOLS if p in offered), None)
    if not key or chosen is None:
        raise ApiError(400, "BadRequest", f"unsupported stream protocols {offered}; the rehearsal cluster speaks "
                                          f"{', '.join(PROTOCOLS)}")
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    return accept, chosen


def frame(payload: bytes, opcode: int = 2) -> bytes:
    """One unmasked, final server frame (opcode 2 binary, 8 close)."""
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


def channel(number: int, data: bytes) -> bytes:
    """A binary frame on a channel.k8s.io stream (stdout, stderr, error by first byte)."""
    return frame(bytes([number]) + data)


def close_frame(code: int = 1000) -> bytes:
    """A close frame, so kubectl ends exec cleanly rather than on a dropped socket."""
    return frame(struct.pack(">H", code), opcode=8)


def exit_status(code: int) -> bytes:
    """The error-channel Status kubectl turns into its exit code."""
    status: dict[str, Any]
    if code == 0:
        status = {"metadata": {}, "status": "Success"}
    else:
        status = {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                  "message": f"command terminated with non-zero exit code: error executing command, exit status {code}",
                  "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
    return json.dumps(status).encode()
