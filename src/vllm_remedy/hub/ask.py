"""Asking the Hub for one config.json, within a time limit: what ``hub.fetch_config`` does when it may go online.

vLLM (``HF_HUB_OFFLINE`` unset) revalidates a branch or tag against the Hub before it reads a cached config
(``hf_hub_download``'s etag HEAD), so after a repository's ``main`` moves it serves the new config. This module does
the same with one HEAD: the commit the revision names now, the file's size, or the Hub's answer. A cached snapshot of
that commit is read without a download; otherwise ``hf_hub_download`` fetches it (its own HEAD, then the GET).

Every way the Hub can fail is one :class:`Failed` naming what happened (an HTTP status, a redirect loop, a size no
config has, no answer within the limit), never a traceback or a wait of minutes: huggingface_hub retries a 429 after
its ``Retry-After`` (an hour, from a rate-limiting mirror) and a stalled HEAD for half a minute each, so the whole
resolution runs in a worker thread the caller stops waiting for at the limit (``VLLM_REMEDY_HUB_TIMEOUT``).
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from vllm_remedy.errors import UserError

CONFIG = "config.json"
#: Larger than any real config.json by far (DeepSeek-V3's is 1.7 kB); bounds what a hostile mirror can send.
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: Seconds one resolution may take online, all requests and retries included. The Hub answers a config.json HEAD
#: in well under a second; huggingface_hub (and so vLLM) waits 10 s for one HEAD, so 20 s lets that slowest answer
#: and the download through, while a stalled or rate-limiting Hub costs a deploy at most this much per run.
LIMIT = 20.0
#: Seconds to wait for one request's answer, and for the Hub's host to accept a connection.
TIMEOUT = 10.0
CONNECT_TIMEOUT = 5.0
#: Statuses worth asking again within the limit (huggingface_hub's own retry list).
RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
COMMIT = re.compile(r"[0-9a-f]{40}")
T = TypeVar("T")


class Failed(Exception):
    """The Hub did not give the file; ``why`` completes "the Hub (<endpoint>) ...". ``final``: the Hub said the
    revision or file does not exist, which a cached copy does not overrule (``hf_hub_download`` raises it too)."""

    def __init__(self, why: str, final: bool = False) -> None:
        super().__init__(why)
        self.why, self.final = why, final


class NotFound(Failed):
    """The Hub's own "no such repository / revision / file / access": the caller words it."""

    def __init__(self, kind: str, final: bool = False) -> None:
        super().__init__(kind, final)
        self.kind = kind


def limit() -> float:
    """``VLLM_REMEDY_HUB_TIMEOUT`` seconds, :data:`LIMIT` when unset; anything but a positive finite number is bad
    input (a typo must not silently become the default, nor 0 a resolution that never asks)."""
    text = os.environ.get("VLLM_REMEDY_HUB_TIMEOUT", "").strip()
    if not text:
        return LIMIT
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise UserError(f"VLLM_REMEDY_HUB_TIMEOUT: {text!r} is not a positive number of seconds")
    return seconds


def within(seconds: float, work: Callable[[], T]) -> T:
    """``work()``'s result or exception, or :class:`Failed` when it has not ended after ``seconds``. The worker is a
    daemon thread left behind on expiry (Python cannot stop one); it dies with the process and only ever writes a
    complete file into the Hugging Face cache."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="vllm-remedy-hub", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise Failed(f"did not answer within {seconds:g} s (VLLM_REMEDY_HUB_TIMEOUT)")
    if "error" in box:
        raise box["error"]
    return box["value"]


@dataclass(frozen=True)
class Got:
    """The file the Hub gave: its path in the cache, and whether a download was needed (False: the cached snapshot
    of the commit the revision names now)."""

    path: str
    downloaded: bool


def ask(repo_id: str, revision: str, hub: str, cache: str | None, token: str | None, deadline: float) -> Got:
    """config.json of ``repo_id`` at ``revision`` as the Hub has it now (see the module); :class:`Failed` else —
    whatever the library or its HTTP stack raised, in one line."""
    try:
        return _ask(repo_id, revision, hub, cache, token, deadline)
    except Exception as exc:
        raise _failure(exc) from None


def _ask(repo_id: str, revision: str, hub: str, cache: str | None, token: str | None, deadline: float) -> Got:
    import huggingface_hub as hf

    unreachable = _unreachable(hub)
    if unreachable:
        raise Failed(f"is unreachable ({unreachable})")
    meta = _head(hf.hf_hub_url(repo_id, CONFIG, revision=revision, endpoint=hub), hub, token, deadline)
    if not meta.commit_hash or not meta.etag:
        raise Failed("answered without the X-Repo-Commit and ETag headers a Hub sends (is HF_ENDPOINT a Hub?)")
    if not COMMIT.fullmatch(meta.commit_hash):  # it names a path in the cache: nothing else may go there
        raise Failed(f"answered with an X-Repo-Commit that is not a commit id ({meta.commit_hash[:60]!r})")
    if meta.size is not None and meta.size > MAX_CONFIG_BYTES:
        raise Failed(f"announced a {CONFIG} of {meta.size:,} bytes (refused: larger than "
                     f"{MAX_CONFIG_BYTES // 1024 // 1024} MiB)")
    snapshot = hf.try_to_load_from_cache(repo_id, CONFIG, cache_dir=cache, revision=meta.commit_hash)
    if isinstance(snapshot, str):  # unchanged (or moved to a commit this cache already holds): no download
        _point(snapshot, revision, meta.commit_hash)
        return Got(snapshot, False)
    path = hf.hf_hub_download(repo_id, CONFIG, revision=revision, cache_dir=cache, endpoint=hub, token=token,
                              etag_timeout=max(0.1, min(TIMEOUT, deadline - time.monotonic())))
    return Got(path, True)  # its errors, as any other, are one line through ``ask``'s ``_failure``


def _head(url: str, hub: str, token: str | None, deadline: float) -> Any:
    """The file's metadata from one HEAD, asked again after a retryable status or network error while the limit
    allows (a ``Retry-After`` beyond it is reported, not waited for)."""
    from huggingface_hub import get_hf_file_metadata

    pause = 1.0
    while True:
        remaining = deadline - time.monotonic()
        try:
            return get_hf_file_metadata(url, token=token, timeout=max(0.1, min(TIMEOUT, remaining)), endpoint=hub)
        except Exception as exc:
            failure = _failure(exc)
            status = _status(exc)
            retryable = status in RETRY_STATUSES if status is not None else _network(exc)
            wait = _retry_after(exc) or pause
            if not retryable or time.monotonic() + wait >= deadline:
                raise failure from None
            time.sleep(wait)
            pause *= 2


def _failure(exc: BaseException) -> Failed:
    """One line for what the Hub (or the way to it) did."""
    from huggingface_hub import errors

    if isinstance(exc, Failed):
        return exc
    if isinstance(exc, errors.GatedRepoError):
        return NotFound("gated")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return NotFound("repository")
    if isinstance(exc, errors.RevisionNotFoundError):
        return NotFound("revision", final=True)
    if isinstance(exc, (errors.RemoteEntryNotFoundError, errors.EntryNotFoundError)):
        return NotFound("entry", final=True)
    status = _status(exc)
    if status is not None:
        after = _retry_after(exc)
        reason = getattr(getattr(exc, "response", None), "reason_phrase", "") or ""
        return Failed(f"answered HTTP {status}{f' {reason}' if reason else ''}"
                      f"{f' (Retry-After {after:g} s)' if after else ''}")
    name = type(exc).__name__
    if name == "TooManyRedirects":
        return Failed(f"sent too many redirects ({_first_line(exc)})")
    if _network(exc):
        return Failed(f"did not answer ({name}: {_first_line(exc)})")
    return Failed(f"could not be read ({name}: {_first_line(exc)})")


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        return float(headers.get("Retry-After", ""))
    except (TypeError, ValueError):
        return None


def _network(exc: BaseException) -> bool:
    """A timeout or a broken connection (httpx's TimeoutException / NetworkError / RemoteProtocolError)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TimeoutException", "NetworkError", "RemoteProtocolError"}) or isinstance(exc, TimeoutError)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _point(snapshot: str, revision: str, commit: str) -> None:
    """Point the cache's ``refs/<revision>`` at ``commit``, as ``hf_hub_download`` does after its HEAD, so an
    offline run later reads the config the Hub named last. Best effort: a read-only cache is still read."""
    if COMMIT.fullmatch(revision) or ".." in Path(revision).parts:
        return
    refs = Path(snapshot).parents[2] / "refs" / revision  # <repo folder>/snapshots/<commit>/config.json
    try:
        if not refs.is_file() or refs.read_text() != commit:
            refs.parent.mkdir(parents=True, exist_ok=True)
            refs.write_text(commit)
    except OSError:
        pass


def _unreachable(url: str) -> str | None:
    """Why the Hub's host cannot be reached at all (a TCP connect, no request), else None: a refused connection is
    said at once. Behind a proxy the direct connect proves nothing, so it is skipped."""
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                                              "all_proxy")):
        return None
    parts = urlsplit(url)
    if not parts.hostname:
        return f"HF_ENDPOINT {url!r} names no host"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT).close()
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or type(exc).__name__
    return None
