"""Where a model's config.json comes from: the catalog, the local Hugging Face cache, the Hub, a policy's copy.

The order is the issue's and vLLM's own: the packaged catalog (reviewed numbers, no I/O) for exactly the repository
ids it holds at main or a commit it lists — never a name's look-alike, since vLLM serves whatever config.json that
repository has at that revision (``catalog.repo_model``); a local path is not a repository id; then the local Hugging
Face cache (``HF_HOME`` / ``HF_HUB_CACHE``, what vLLM itself downloaded or a previous run fetched); the Hub through
``huggingface_hub``, so ``HF_ENDPOINT`` (a mirror), ``HF_TOKEN`` (gated repositories) and ``HF_HUB_OFFLINE`` mean
what they mean to vLLM; and last a config the policy names (a file, or a ConfigMap the caller reads), for
clusters that reach no Hub. A Deployment's ``--revision`` pins the config's revision.

A file fetched once lands in the Hugging Face cache and is read from there afterwards without a request; a
process resolves each (model, revision) once, failures included, so a fleet run asks the Hub once per model.
Environment variables are read at each resolution, not at import, because the rehearsal cluster runs
in-process beside tests that point ``HF_ENDPOINT`` at their own server.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog, hf_overrides, resolved
from vllm_remedy.vllm.catalog import ModelSpec

CONFIG = "config.json"
#: Larger than any real config.json by far (DeepSeek-V3's is 1.7 kB); bounds what a hostile mirror can send.
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: Seconds to wait for the Hub's answer to one request, and for its host to accept a connection.
TIMEOUT = 10.0
CONNECT_TIMEOUT = 5.0
_TRUE = ("1", "on", "yes", "true")

#: A caller's fallback: (where it is, a function returning the config.json mapping), e.g. the policy's file.
Fallback = tuple[str, Callable[[], Mapping[str, Any]]]


class Unresolved(UserError):
    """A model whose config could be found nowhere; ``str()`` is one line saying why."""


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def cache_dir() -> str | None:
    """The Hugging Face hub cache as huggingface_hub would pick it, read now (None: the library's default)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return None


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def spec_from_json(text: str | bytes, name: str, where: str) -> ModelSpec:
    """A model spec from config.json text; anything that is not a usable config is one line naming ``where``."""
    return spec_from_config(config_from_json(text, where), name, where)


def config_from_json(text: str | bytes, where: str) -> Any:
    """config.json text as JSON; anything too large or not JSON is one line naming ``where``."""
    if len(text) > MAX_CONFIG_BYTES:
        raise UserError(f"{where}: refused: larger than {MAX_CONFIG_BYTES // 1024 // 1024} MiB")
    try:
        config = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{where}: not valid JSON ({exc})") from None
    except (RecursionError, ValueError) as exc:  # nested past Python's stack, or an integer of thousands of digits
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise UserError(f"{where}: refused: {why}") from None
    return config


def spec_from_config(config: Any, name: str, where: str) -> ModelSpec:
    if not isinstance(config, Mapping):
        raise UserError(f"{where}: not a model config (expected a JSON object, as in a Hugging Face config.json)")
    try:
        return ModelSpec.from_hf_config(config, name=name)
    except (OverflowError, ValueError, TypeError) as exc:  # e.g. 1e400 read as infinity where a size belongs
        raise UserError(f"{where}: not a usable model config ({exc})") from None


def fetch_config(repo_id: str, revision: str | None = None) -> tuple[str, str]:
    """(the config.json text, where it came from) from the local cache, else the Hub; :class:`Unresolved` else."""
    # Imported here: huggingface_hub pulls in an HTTP stack that catalog models and `--help` never need.
    import huggingface_hub as hf
    from huggingface_hub import errors
    from huggingface_hub.utils import logging as hf_logging

    at = f" at revision {revision}" if revision else ""
    try:
        cached = hf.try_to_load_from_cache(repo_id, CONFIG, cache_dir=cache_dir(), revision=revision)
    except (ValueError, errors.HFValidationError):
        raise Unresolved(f"model {repo_id}: not a Hugging Face repository id") from None
    if isinstance(cached, str):
        return _read(cached), f"the local Hugging Face cache ({cached})"
    if offline():
        raise Unresolved(f"model {repo_id}{at}: not in the catalog nor the local Hugging Face cache, and "
                         "HF_HUB_OFFLINE is set")
    hub = endpoint()
    unreachable = _unreachable(hub)
    if unreachable:
        raise Unresolved(f"model {repo_id}: the Hub ({hub}) is unreachable ({unreachable}) and the local Hugging Face "
                         f"cache has no {CONFIG}; set HF_HUB_OFFLINE=1 where no Hub is reachable")
    hf_logging.set_verbosity_error()  # its retry warnings are not ours to print: the one line below is
    # huggingface_hub reads HF_HUB_OFFLINE once, at import; we read it at each call (the rehearsal cluster resolves
    # in the same process as the deploy it serves, and the environment may have changed since). Offline was ruled
    # out above, so the library must not refuse on a reading taken before.
    hf.constants.HF_HUB_OFFLINE = False
    try:
        path = hf.hf_hub_download(repo_id, CONFIG, revision=revision, cache_dir=cache_dir(), endpoint=hub,
                                  token=os.environ.get("HF_TOKEN") or None, etag_timeout=TIMEOUT)
    except errors.GatedRepoError:
        raise Unresolved(f"model {repo_id}: gated repository on the Hub ({hub}); set HF_TOKEN to a token with "
                         "access to it") from None
    except errors.RepositoryNotFoundError:
        raise Unresolved(f"model {repo_id}: not found on the Hub ({hub}) nor in the local Hugging Face cache"
                         ) from None
    except errors.RevisionNotFoundError:
        raise Unresolved(f"model {repo_id}: revision {revision} not found on the Hub ({hub})") from None
    except errors.LocalEntryNotFoundError as exc:  # the Hub did not answer, nothing cached
        raise Unresolved(f"model {repo_id}: the Hub ({hub}) did not answer and the local Hugging Face cache has no "
                         f"{CONFIG} ({type(exc.__cause__ or exc).__name__})") from None
    except errors.EntryNotFoundError:
        raise Unresolved(f"model {repo_id}{at}: the repository has no {CONFIG}") from None
    except errors.HFValidationError:
        raise Unresolved(f"model {repo_id}: not a Hugging Face repository id") from None
    except (OSError, errors.HfHubHTTPError) as exc:  # 5xx after retries, a broken download, the cache unwritable
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Unresolved(f"model {repo_id}: could not fetch {CONFIG} from the Hub ({hub}) into the Hugging Face "
                         f"cache ({first})") from None
    return _read(path), f"the Hub ({hub})"


def _unreachable(url: str) -> str | None:
    """Why the Hub's host cannot be reached at all (a TCP connect, no request), else None.

    huggingface_hub retries a HEAD that gets no answer five times with backoff (half a minute, more on a
    black-holed network) before it gives up; an on-call deploy should not wait that long to learn there is no
    Hub. Behind a proxy the direct connect proves nothing, so it is skipped.
    """
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                                              "all_proxy")):
        return None
    parts = urlsplit(url)
    if not parts.hostname:
        return f"HF_ENDPOINT {url!r} names no host"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise Unresolved(f"{path}: cannot read ({exc.strerror or exc})") from None
    return data.decode("utf-8", errors="replace")


#: (model, revision, the environment that decides the answer) → what resolving it gave, failures included.
_memo: dict[tuple[str, str | None, tuple[Any, ...]], tuple[ModelSpec, str] | str] = {}
#: One resolution at a time: the rehearsal cluster starts pods on several threads, and each model is asked once.
_lock = threading.Lock()


def resolve(model_id: str, revision: str | None = None, fallback: Fallback | None = None, *,
            in_pod: bool = False) -> tuple[ModelSpec, str]:
    """(spec, source) for a server's ``--model`` and ``--revision``; :class:`Unresolved` (one line) when nothing
    has its config. The result — or the failure — is remembered for this process and told to
    :mod:`vllm_remedy.vllm.resolved`, where every prediction looks models up. ``in_pod``: the model is a pod's (a
    manifest's, a Deployment's), so a local path names the pod's volume, which this machine's same path is not."""
    spec = catalog.repo_model(model_id, revision)
    if spec is not None:  # exactly a repository the catalog holds, at a revision it describes
        return spec, "catalog"
    key = (model_id, revision, (endpoint(), offline(), cache_dir(), bool(os.environ.get("HF_TOKEN")), fallback and
                                fallback[0], in_pod))
    with _lock:
        if key not in _memo:
            _memo[key] = _resolve(model_id, revision, fallback, in_pod)
        found = _memo[key]
        # Told on every call, not only the first: resolved is keyed without the environment, so after a resolution
        # under another environment it would otherwise keep that one's answer while this call says otherwise.
        resolved.learn(model_id, revision, found[0] if isinstance(found, tuple) else found)
    if isinstance(found, str):
        raise Unresolved(found)
    return found


def _resolve(model_id: str, revision: str | None, fallback: Fallback | None,
             in_pod: bool) -> tuple[ModelSpec, str] | str:
    local = Path(model_id)
    try:
        # vLLM looks for a local path first (``Path(model).exists()`` in ``file_or_path_exists``,
        # transformers_utils/config.py@0.8.5, @0.11.0; repo_utils.py@0.19.0, @0.34.0), so a bare relative directory
        # typed here (``cfg``, ``configs/llama``) is one when it exists; a pod's is not this machine's.
        if local.is_absolute() or model_id.startswith(".") or (not in_pod and local.exists()):
            if in_pod:
                raise Unresolved(f"model {model_id}: a local path in the pod (its volume), not a repository id, which "
                                 "this tool cannot read; name its config in the policy (model_config)")
            if not (local / CONFIG).is_file():
                raise Unresolved(f"model {model_id}: a local path, not a repository id (and no {local / CONFIG} "
                                 "here); name its config in the policy (model_config)")
            text, source = _read(str(local / CONFIG)), str(local / CONFIG)
        else:
            text, source = fetch_config(model_id, revision)
        config = config_from_json(text, f"{model_id}: {CONFIG} from {source}")
        spec = spec_from_config(config, model_id, f"{model_id}: {CONFIG} from {source}")
    except UserError as first:
        if fallback is None:
            return str(first)
        where, read = fallback
        try:
            config = read()
            spec, source = spec_from_config(config, model_id, where), where
        except UserError as exc:
            return f"{first}; {exc}"
    hf_overrides.remember(model_id, revision, config)  # the base a pod's --hf-overrides is applied to
    return spec, source


def learn(model_id: str, revision: str | None = None, fallback: Fallback | None = None) -> str | None:
    """Resolve a pod's model (a Deployment's, a manifest's) for the predictions to come; None when the model is known,
    else why not (one line)."""
    try:
        resolve(model_id, revision, fallback, in_pod=True)
    except UserError as exc:
        return str(exc)
    return None
