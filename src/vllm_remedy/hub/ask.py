"""Asking the Hub for one config.json, within a time limit: what ``hub.fetch_config`` does when it may go online
(and ``hub.quant_file`` for ModelOpt's ``hf_quant_config.json``, the same way).

A config this cache does not hold is one GET: its answer carries the commit the revision names (``X-Repo-Commit``),
the blob's ``ETag`` and its size, which is checked before the body is read (and the body read to at most
:data:`MAX_CONFIG_BYTES`); ``hub.store`` then writes it in huggingface_hub's cache layout. ``hf_hub_download`` cannot
do this in one request: it always sends a HEAD before its GET, for a commit it does not hold too, so a first
resolution cost three requests (our HEAD for the commit and size, its HEAD, its GET).
vLLM (``HF_HUB_OFFLINE`` unset) revalidates a cached branch or tag against the Hub before it reads it
(``hf_hub_download``'s etag HEAD), so after a repository's ``main`` moves it serves the new config; this module does
the same with one HEAD, and a cached snapshot of the commit it names is read without a download. When the cache
cannot keep a download (a read-only volume), the bytes just fetched serve (:class:`Got` ``body``): the Hub answered,
so neither its answer is discarded nor a cached commit it has just superseded read instead.

Every way the Hub can fail is one :class:`Failed` naming what happened (an HTTP status, a redirect loop, a size no
config has, no answer within the limit), never a traceback or a wait of minutes: a 429's ``Retry-After`` beyond the
limit is reported, not waited for, and the whole resolution runs in a worker thread the caller stops waiting for at
the limit (``VLLM_REMEDY_HUB_TIMEOUT``).
"""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

from vllm_remedy.errors import UserError
from vllm_remedy.hub import store
from vllm_remedy.hub.names import revision_problem

CONFIG = store.CONFIG
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
COMMIT = store.COMMIT
#: What an ETag (the blob's file name in the cache) may be: a git or LFS hash on the Hub; never a path.
ETAG = re.compile(r"[0-9A-Za-z_-][0-9A-Za-z._-]{0,127}")
#: Redirects followed for one file (huggingface_hub's and httpx's bound).
MAX_REDIRECTS = 20
T = TypeVar("T")


class Failed(Exception):
    """The Hub did not give the file; ``why`` completes "the Hub (<endpoint>) ...". ``final``: the Hub said the
    revision or file does not exist, which a cached copy does not overrule (``hf_hub_download`` raises it too)."""

    def __init__(self, why: str, final: bool = False) -> None:
        super().__init__(why)
        self.why, self.final = why, final


class NotFound(Failed):
    """The Hub's own "no such repository / revision / file / access": the caller words it. ``said``: the Hub's own
    message (``X-Error-Message``), which tells a refused token from a repository it does not show."""

    def __init__(self, kind: str, final: bool = False, said: str | None = None) -> None:
        super().__init__(kind, final)
        self.kind, self.said = kind, said


#: What the Hub says, with a 401, for a token it refuses: huggingface_hub's ``hf_raise_for_status`` leaves it a plain
#: HTTP error (never RepositoryNotFoundError) on purpose.
BAD_TOKEN = "Invalid credentials in Authorization header"
#: What the public Hub says, with a 401 huggingface_hub reads as RepositoryNotFoundError, for a repository it does not
#: show to the caller: one that does not exist (a misspelled id) or a private one, asked without a token
#: (huggingface/datasets#4472: "401 instead of 404 for unauthenticated requests to non-existing repos"; public logs
#: for ids that never existed: vast-ai/base-image#128, tmylla/NER_ZH#1). Not a refused token: that is
#: :data:`BAD_TOKEN`.
HIDDEN = "Invalid username or password."


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
    of the commit the revision names now). ``unkept``: why the cache could not keep the download (read-only, say);
    then ``body`` holds its bytes, which serve this run, and ``path`` is where the file would have been."""

    path: str
    downloaded: bool
    body: bytes | None = None
    unkept: str | None = None

    def read(self) -> bytes:
        """The file's bytes: the download held in memory, else the cached file's."""
        if self.body is not None:
            return self.body
        with open(self.path, "rb") as fh:
            return fh.read(MAX_CONFIG_BYTES + 1)


#: Caches already said to be unwritable in this process: the warning is given once per cache.
_warned: set[str] = set()


def warn_unkept(got: Got, cache: str | None) -> None:
    """Say once per cache that it cannot keep what the Hub sent, naming the path that refused."""
    from huggingface_hub import constants

    where = cache or constants.HF_HUB_CACHE
    if got.unkept is None or where in _warned:
        return
    _warned.add(where)
    print(f"vllm-remedy: warning: the Hugging Face cache is not writable ({got.unkept}): files the Hub sends are "
          "used for this run without being cached", file=sys.stderr)


def ask(repo_id: str, revision: str, hub: str, cache: str | None, token: str | bool | None, deadline: float,
        filename: str = CONFIG) -> Got:
    """config.json (or ``filename``) of ``repo_id`` at ``revision`` as the Hub has it now (see the module);
    :class:`Failed` else — whatever the library or its HTTP stack raised, in one line."""
    try:
        return _ask(repo_id, revision, hub, cache, token, deadline, filename)
    except Exception as exc:
        raise _failure(exc) from None


def _ask(repo_id: str, revision: str, hub: str, cache: str | None, token: str | bool | None, deadline: float,
         filename: str) -> Got:
    import huggingface_hub as hf

    quiet_user_agent()

    if not COMMIT.fullmatch(revision) and revision_problem(revision):  # never sent, never joined onto refs/
        raise Failed(f"was not asked: revision {revision!r} is no ref name ({revision_problem(revision)})",
                     final=True)
    unreachable = _unreachable(hub)
    if unreachable:
        raise Failed(f"is unreachable ({unreachable})")
    url = hf.hf_hub_url(repo_id, filename, revision=revision, endpoint=hub)
    held = hf.try_to_load_from_cache(repo_id, filename, cache_dir=cache, revision=revision)
    named = None
    if isinstance(held, str):
        # a branch or tag this cache holds (a held commit never gets here): revalidated with one HEAD, as vLLM does
        meta = _retrying(lambda timeout: hf.get_hf_file_metadata(url, token=token, timeout=timeout, endpoint=hub),
                         deadline)
        named, _ = _checked(meta.commit_hash, meta.etag, meta.size)
        snapshot = hf.try_to_load_from_cache(repo_id, filename, cache_dir=cache, revision=named)
        if isinstance(snapshot, str):  # unchanged (or moved to a commit this cache already holds): no download
            store.point(cache, repo_id, revision, named)
            return Got(snapshot, False)
    try:
        commit, etag, body = _retrying(lambda timeout: _get(url, token, timeout), deadline)
    except Failed as exc:
        if named is None or isinstance(exc, NotFound):
            raise
        # the Hub has just named a newer commit: the cached one is superseded and must not stand in for it
        raise Failed(f"names commit {named} for {revision} (the cache holds {Path(held).parent.name}, superseded), "
                     f"then {exc.why}", final=True) from None
    try:
        return Got(store.save(cache, repo_id, revision, commit, etag, body, filename), True)
    except OSError as exc:  # the Hub answered; the local disk refused: its answer serves this run from memory
        where = store.snapshot(cache, repo_id, commit, filename)
        return Got(str(where), True, body, f"{exc.filename or where}: {exc.strerror or exc}")


def quiet_user_agent() -> None:
    """No agent detection in the User-Agent huggingface_hub builds for our requests: from 2.x it asks
    ``GET {HF_ENDPOINT}/api/agent-harnesses`` for it (utils/_detect_agent.py, up to 3 s) before the first request of
    each process, kept on disk only when the Hub answers, so a mirror's 404 costs one more request every run and a
    first resolution is no longer one request per file. huggingface_hub skips it (and the torch version) under
    ``HF_HUB_DISABLE_TELEMETRY`` (utils/_headers.py ``_http_user_agent``), its documented switch, which this sets for
    the process: the tool sends no telemetry and identifies itself by the library's own User-Agent."""
    from huggingface_hub import constants

    constants.HF_HUB_DISABLE_TELEMETRY = True


def _checked(commit: str | None, etag: str | None, size: int | None) -> tuple[str, str]:
    """(commit, etag) from a Hub's answer, refused when missing, when either is not a plain name (both name paths in
    the cache: nothing else may go there) or when the announced size is none a config has."""
    if not commit or not etag:
        raise Failed("answered without the X-Repo-Commit and ETag headers a Hub sends (is HF_ENDPOINT a Hub?)")
    if not COMMIT.fullmatch(commit):
        raise Failed(f"answered with an X-Repo-Commit that is not a commit id ({commit[:60]!r})")
    if not ETAG.fullmatch(etag):
        raise Failed(f"answered with an ETag that is not a blob id ({etag[:60]!r})")
    if size is not None and size > MAX_CONFIG_BYTES:
        raise Failed(f"announced a {CONFIG} of {size:,} bytes (refused: larger than "
                     f"{MAX_CONFIG_BYTES // 1024 // 1024} MiB)")
    return commit, etag


def _get(url: str, token: str | bool | None, timeout: float) -> tuple[str, str, bytes]:
    """(commit, etag, body) of one GET through huggingface_hub's own HTTP session, headers (token, user agent) and
    errors (``hf_raise_for_status``). Redirects are followed here, at most :data:`MAX_REDIRECTS`, as
    huggingface_hub's HEAD follows them: the commit, etag and size are those of the last answer that names a commit
    (a file stored outside git is a redirect carrying ``X-Linked-Etag`` / ``X-Linked-Size`` to a CDN), and the token
    is not sent past the Hub's host."""
    from huggingface_hub import get_session, hf_raise_for_status
    from huggingface_hub.utils import build_hf_headers

    headers = {**build_hf_headers(token=token), "Accept-Encoding": "identity"}  # the size announced is the file's
    hub_headers: Any = None
    for _ in range(MAX_REDIRECTS + 1):
        with get_session().stream("GET", url, headers=headers, timeout=timeout, follow_redirects=False) as response:
            if "X-Repo-Commit" in response.headers:
                hub_headers = response.headers
            if response.has_redirect_location:
                target = urljoin(url, response.headers["Location"])
                if _origin(target) != _origin(url):
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                url = target
                continue
            if response.status_code >= 400:
                hf_raise_for_status(_small(response))
            hub_headers = hub_headers if hub_headers is not None else response.headers
            size = _int(hub_headers.get("X-Linked-Size") or response.headers.get("Content-Length"))
            commit, etag = _checked(hub_headers.get("X-Repo-Commit"),
                                    (hub_headers.get("X-Linked-Etag") or hub_headers.get("ETag") or "")
                                    .removeprefix("W/").strip('"'), size)
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_CONFIG_BYTES:
                    raise Failed(f"sent a {CONFIG} larger than {MAX_CONFIG_BYTES // 1024 // 1024} MiB (refused)")
            if size is not None and len(body) != size:
                raise Failed(f"sent {len(body):,} bytes of a {CONFIG} it announced as {size:,}")
            return commit, etag, bytes(body)
    raise Failed(f"sent too many redirects (Exceeded {MAX_REDIRECTS} redirects while resolving {url!r}.)")


def _small(response: Any) -> Any:
    """An error answer with at most 64 KiB of its body read, for ``hf_raise_for_status`` (which reads the whole
    body of a streamed answer, whatever its size, for the Hub's error message)."""
    import httpx2

    body = b""
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) >= 65536:
            break
    kept = [(k, v) for k, v in response.headers.multi_items()
            if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")]
    return httpx2.Response(response.status_code, headers=kept, content=body[:65536], request=response.request)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _retrying(call: Callable[[float], T], deadline: float) -> T:
    """``call(timeout)``, asked again after a retryable status or network error while the limit allows (a
    ``Retry-After`` beyond it is reported, not waited for)."""
    pause = 1.0
    while True:
        remaining = deadline - time.monotonic()
        try:
            return call(max(0.1, min(TIMEOUT, remaining)))
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
    said = getattr(exc, "server_message", None) or None
    if isinstance(exc, errors.RepositoryNotFoundError):  # a 404, or the 401 of a repository the Hub does not show
        return NotFound("unauthorized" if said == BAD_TOKEN else "repository", said=said)
    if isinstance(exc, errors.RevisionNotFoundError):
        return NotFound("revision", final=True)
    if isinstance(exc, (errors.RemoteEntryNotFoundError, errors.EntryNotFoundError)):
        return NotFound("entry", final=True)
    status = _status(exc)
    if status == 401:  # neither gated nor "not found": the Hub refuses the token itself (invalid credentials)
        return NotFound("unauthorized", said=said)
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


def no_hub(exc: Failed) -> bool:
    """Whether ``exc`` is a Hub that could not be asked (huggingface_hub's hf_hub_download then raises
    LocalEntryNotFoundError): its host refused or did not answer, or it answered 5xx."""
    return exc.why.startswith(("is unreachable (", "did not answer", "answered HTTP 5"))


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
