"""What a person's tools see: the cluster's times moved onto the reader's wall clock.

Why: the rehearsal cluster's clock runs ``speed`` times faster than the wall clock, so at 60x a pod
created one real minute ago is stamped an hour ahead of the machine kubectl compares against. kubectl
computes many ages client-side (``--server-print=false``, ``describe node``'s pod list, Events) and
prints ``<invalid>`` for a time in its future; ``describe``'s Start Time and the ``Date`` header would
lie an hour ahead.

So a client that shows times to a person (kubectl, k9s: known by User-Agent) gets every time the API
serves shifted by ``wall_now - sim_now``: its "now" is the wall clock and every age it computes is the
cluster's own age, the one the server-side tables print. The shift is taken once per connection and held
for ``HOLD`` real seconds (one kubectl command): an unchanged object must read the same in the GET and the
PATCH answer, or kubectl says ``patched`` for ``patched (no change)`` and ``diff`` shows every timestamp.
Times newer than the held shift allows are capped at the wall clock, so nothing is ever in the reader's
future. Watch and log streams take a fresh shift per line. Inbound times from a reader (``sinceTime``,
times in a written body) are moved back by the same shift. ``sinceSeconds`` needs no mapping: it is an
age, and ages are the cluster's.

Automation (this project's client, the official Python client) keeps the cluster clock: it measures the
runbook's durations from the ``Date`` header and weighs Event times against marks it stored earlier; a
shift that moves between reads would lie to it about order. The shift moves by ``speed - 1`` seconds per
real second, so a stamp copied from one answer and sent back later (``--since-time``) names a later
cluster moment; at speed 1 the shift is constant.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from vllm_remedy.sim.api.http import Request, Response
from vllm_remedy.sim.clock import Clock

HOLD = 2.0  # real seconds a connection keeps its shift: about one kubectl command
READERS = ("kubectl", "k9s")  # User-Agent products whose users read times off a screen
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d+))?Z")
TIME_KEY = re.compile(r"(?:Time|Timestamp|At)$|^time$")
OPAQUE = frozenset({"annotations", "labels", "data", "binaryData", "stringData"})  # free-form: never moved


def is_reader(user_agent: str | None) -> bool:
    """Whether the client shows times to a person (and so is served on the wall clock)."""
    return bool(user_agent) and str(user_agent).startswith(READERS)


def shift(clock: Clock) -> float:
    """Seconds to add to a cluster time to put it on the wall clock, as of this instant."""
    return time.time() - clock.now()


def held_shift(req: Request, key: str, clock: Clock) -> float | None:
    """The shift for a reader's request to cluster ``key`` (held per connection), None for anyone else."""
    if not is_reader(req.headers.get("user-agent")):
        return None
    now = time.monotonic()
    held = req.connection.setdefault("reader_clock", {})
    if key not in held or now - held[key][1] > HOLD:
        held[key] = (shift(clock), now)
    return float(held[key][0])


def _moved(value: str, by: float, cap: float | None = None) -> str:
    found = STAMP.fullmatch(value)
    if found is None:
        return value
    digits = len(found.group(1) or "")
    at = datetime.fromisoformat(value[:19] + "+00:00").timestamp() + float("0." + (found.group(1) or "0")) + by
    if cap is not None and at > cap:
        at = cap
    moment = datetime.fromtimestamp(at, tz=timezone.utc)
    if digits == 0:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if digits <= 6:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    whole = int(at // 1)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{round((at - whole) * 1e9) % 10**9:09d}Z"


def move(value: Any, by: float, cap: float | None = None) -> Any:
    """``value`` (a decoded API document) with every time field moved by ``by`` seconds (none past ``cap``),
    precision kept.

    Time fields are the keys Kubernetes names ``*Time``, ``*Timestamp``, ``*At`` and managedFields' ``time``,
    plus Table cells that are a bare timestamp (``Created At``); annotations, labels and data are left alone."""
    if isinstance(value, list):
        return [move(item, by, cap) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in OPAQUE:
            out[key] = item
        elif isinstance(item, str) and TIME_KEY.search(key):
            out[key] = _moved(item, by, cap)
        elif key == "cells" and isinstance(item, list):
            out[key] = [_moved(c, by, cap) if isinstance(c, str) else c for c in item]
        else:
            out[key] = move(item, by, cap)
    return out


def _log_line(line: str, by: float, cap: float) -> str:
    stamp, sep, rest = line.partition(" ")
    return _moved(stamp, by, cap) + sep + rest if sep else line


def _logs(text: str, by: float) -> str:
    cap = time.time()
    return "".join(_log_line(line, by, cap) for line in text.splitlines(keepends=True))


def received(req: Request, shifted: float) -> None:
    """Move a reader's inbound times onto the cluster clock: ``sinceTime`` and times in a JSON body."""
    by = -shifted
    since = req.query.get("sinceTime")
    if since and STAMP.fullmatch(since):
        req.query["sinceTime"] = _moved(since.replace("Z", ".000000Z") if "." not in since else since, by)
    if req.body and req.method in ("POST", "PUT", "PATCH") and "json" in req.content_type:
        try:
            body = json.loads(req.body)
        except ValueError:
            return  # the handler answers the 400
        req.body = json.dumps(move(body, by), separators=(",", ":")).encode()


def present(resp: Response, req: Request, clock: Clock, by: float) -> Response:
    """``resp`` as a reader sees it: JSON documents and stamped log lines moved onto the wall clock by ``by``
    (streams: by the shift of the moment each line is sent)."""
    if resp.upgrade is not None:
        return resp
    if "json" in resp.content_type:
        if resp.stream is not None:
            resp.stream = _json_lines(resp.stream, clock)
        elif resp.body:
            try:
                doc = json.loads(resp.body)
            except ValueError:
                return resp
            resp.body = json.dumps(move(doc, by, time.time()), separators=(",", ":")).encode()
    elif resp.content_type == "text/plain" and req.query.get("timestamps") in ("true", "1"):
        if resp.stream is not None:
            resp.stream = (_logs(chunk.decode(), shift(clock)).encode() for chunk in resp.stream)
        else:
            resp.body = _logs(resp.body.decode(), by).encode()
    return resp


def _json_lines(stream: Iterator[Any], clock: Clock) -> Iterator[bytes]:
    """A watch stream's lines, each moved by the shift of the moment it is sent."""
    for chunk in stream:
        if not chunk.strip():
            yield chunk
            continue
        by, cap = shift(clock), time.time()
        yield b"".join(json.dumps(move(json.loads(line), by, cap), separators=(",", ":")).encode() + b"\n"
                       for line in chunk.splitlines() if line.strip())
