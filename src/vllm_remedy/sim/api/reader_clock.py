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
future. Watch and log streams take a fresh shift per line. vLLM's own stamp at the head of a log line
(``INFO 12-04 20:52:24 [core.py:…]``) is moved too, so it reads on the same clock as ``--timestamps``'
prefix. Inbound times from a reader (times in a written body) are moved back by the same shift.
``sinceSeconds`` needs no mapping: it is an age, and ages are the cluster's.

Automation (this project's client, the official Python client) keeps the cluster clock: it measures the
runbook's durations from the ``Date`` header and weighs Event times against marks it stored earlier; a
shift that moves between reads would lie to it about order. The shift moves by ``speed - 1`` seconds per
real second, so a stamp copied from one answer and sent back later (``--since-time``) would name a later
cluster moment under the later request's shift, skipping lines. So each cluster remembers the shift it served
every log-stamp second to a reader (the newest :data:`SERVED` seconds); a ``sinceTime`` on a remembered
second is moved back by that shift — the lines from that stamp on, as that answer showed them — and any
other ``sinceTime`` by the request's own shift.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from vllm_remedy.sim.api.http import Request, Response
from vllm_remedy.sim.clock import Clock

HOLD = 2.0  # real seconds a connection keeps its shift: about one kubectl command
READERS = ("kubectl", "k9s")  # User-Agent products whose users read times off a screen
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d+))?Z")
LOG_PATH = re.compile(r"/api/v1/namespaces/[^/]+/pods/[^/]+/log")
TIME_KEY = re.compile(r"(?:Time|Timestamp|At)$|^time$")
OPAQUE = frozenset({"annotations", "labels", "data", "binaryData", "stringData"})  # free-form: never moved
#: vLLM's log prefix: an optional process tag (``(APIServer pid=1)``, colours allowed), the level, then its stamp.
VLLM_STAMP = re.compile(r"^((?:\x1b\[[0-9;]*m)?(?:\([^)\n]*\)(?:\x1b\[[0-9;]*m)? )?(?:\x1b\[[0-9;]*m)?"
                        r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?:\x1b\[[0-9;]*m)? )(\d\d-\d\d \d\d:\d\d:\d\d)(?=\s|$)")
SERVED = 20_000  # log-stamp seconds (wall) remembered per cluster with the shift they were served at
_served: weakref.WeakKeyDictionary[Clock, OrderedDict[int, float]] = weakref.WeakKeyDictionary()
_served_lock = threading.Lock()  # the server answers each connection on its own thread


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


def _vllm_stamp(text: str, by: float, cap: float) -> str:
    """``text`` with vLLM's leading ``LEVEL MM-DD HH:MM:SS`` moved by ``by`` (none past ``cap``). The stamp has
    no year: it is the year of the cluster's now (``cap - by``), or the one before when that is in its future."""
    found = VLLM_STAMP.match(text)
    if found is None:
        return text
    now = cap - by
    year = time.gmtime(now).tm_year
    for y in (year, year - 1):
        try:
            at = datetime.strptime(f"{y}-{found.group(2)}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
        except ValueError:  # 02-29 outside a leap year
            continue
        if at.timestamp() <= now + 86400:
            moved = datetime.fromtimestamp(min(at.timestamp() + by, cap), tz=timezone.utc)
            return found.group(1) + moved.strftime("%m-%d %H:%M:%S") + text[found.end():]
    return text


def _log_line(line: str, by: float, cap: float, stamped: bool, seen: OrderedDict[int, float] | None) -> str:
    if not stamped:
        return _vllm_stamp(line, by, cap)
    stamp, sep, rest = line.partition(" ")
    if not sep:
        return line
    shown = _moved(stamp, by, cap)
    if seen is not None and shown != stamp:
        second = math.floor(datetime.fromisoformat(shown[:19] + "+00:00").timestamp())
        seen[second] = by
        seen.move_to_end(second)
    return shown + sep + _vllm_stamp(rest, by, cap)


def _logs(text: str, by: float, stamped: bool, clock: Clock | None = None) -> str:
    cap = time.time()
    seen: OrderedDict[int, float] | None = OrderedDict() if clock is not None and stamped else None
    out = "".join(_log_line(line, by, cap, stamped, seen) for line in text.splitlines(keepends=True))
    if seen and clock is not None:
        with _served_lock:
            kept = _served.setdefault(clock, OrderedDict())
            for second, at in seen.items():
                kept[second] = at
                kept.move_to_end(second)
            while len(kept) > SERVED:
                kept.popitem(last=False)
    return out


def _since_shift(since: str, shifted: float, clock: Clock | None) -> float:
    """The shift a reader's ``sinceTime`` was served at: the remembered one for a log stamp's second, else now's."""
    if clock is None:
        return shifted
    at = datetime.fromisoformat(since[:19] + "+00:00").timestamp()
    with _served_lock:
        return _served.get(clock, {}).get(math.floor(at), shifted)


def received(req: Request, shifted: float, clock: Clock | None = None) -> None:
    """Move a reader's inbound times onto the cluster clock: ``sinceTime`` (by the shift its stamp was served
    at, when ``clock``'s cluster served it) and times in a JSON body."""
    by = -shifted
    since = req.query.get("sinceTime")
    if since and STAMP.fullmatch(since):
        req.query["sinceTime"] = _moved(since.replace("Z", ".000000Z") if "." not in since else since,
                                        -_since_shift(since, shifted, clock))
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
    elif resp.content_type == "text/plain" and req.method == "GET" and LOG_PATH.fullmatch(req.path):
        stamped = req.query.get("timestamps") in ("true", "1")
        if resp.stream is not None:
            resp.stream = (_logs(chunk.decode(), shift(clock), stamped, clock).encode() for chunk in resp.stream)
        else:
            resp.body = _logs(resp.body.decode(), by, stamped, clock).encode()
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
