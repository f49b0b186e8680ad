"""Where a model's config.json comes from: the catalog, the local Hugging Face cache, the Hub, a policy's copy.

The order is the issue's and vLLM's own: the packaged catalog (reviewed numbers, no I/O) for exactly the repository
ids it holds at main or a commit it lists — never a name's look-alike, since vLLM serves whatever config.json that
repository has at that revision (``catalog.repo_model``); a local path is not a repository id; then the local Hugging
Face cache (``HF_HOME`` / ``HF_HUB_CACHE``, what vLLM itself downloaded or a previous run fetched) and the Hub
through ``huggingface_hub`` (which of the two answers first: below), so ``HF_ENDPOINT`` (a mirror), ``HF_TOKEN``
(gated repositories) and ``HF_HUB_OFFLINE`` mean what they mean to vLLM; and last a config the policy names (a
file, or a ConfigMap the caller reads), for clusters that reach no Hub.
A Deployment's ``--revision`` pins the config's revision.

A file fetched once lands in the Hugging Face cache. As in vLLM, a branch or tag (``main``) is revalidated with one
HEAD per resolution — after the repository's ``main`` moves the new config is read — and the cached copy serves,
with a warning, only when the Hub errs or does not answer; a commit's snapshot is read without a request. A process
resolves each (model, revision) once, failures included, so a fleet run asks the Hub once per model; one resolution
online lasts at most ``VLLM_REMEDY_HUB_TIMEOUT`` seconds (``hub.ask``), and a Hub that let it run out is not waited
for again in that run.
Environment variables are read at each resolution, not at import, because the rehearsal cluster runs
in-process beside tests that point ``HF_ENDPOINT`` at their own server.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.hub import ask as hub_ask
from vllm_remedy.vllm import catalog, hf_overrides, resolved
from vllm_remedy.vllm.catalog import ModelSpec

CONFIG = hub_ask.CONFIG
MAX_CONFIG_BYTES = hub_ask.MAX_CONFIG_BYTES
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
        huge = _huge_numbers(config)
        what = f"{', '.join(huge)}: beyond any model's size" if huge else exc
        raise UserError(f"{where}: not a usable model config ({what})") from None


def _huge_numbers(config: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``key = value`` for each number (nested configs included) past 2**53, the largest integer a float holds
    exactly: no size of a real model comes near it, and such a value is what overflows the arithmetic."""
    found: list[str] = []
    for key, value in config.items():
        if isinstance(value, Mapping):
            found += _huge_numbers(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > 2 ** 53:
            found.append(f"{prefix}{key} = {value:g}" if isinstance(value, float) else f"{prefix}{key} = {value}")
    return found


def fetch_config(repo_id: str, revision: str | None = None) -> tuple[str, str]:
    """(the config.json text, where it came from) as vLLM would get it; :class:`Unresolved` (one line) else.

    A commit's snapshot in the local cache is read without a request (a commit never changes); a branch or tag is
    revalidated against the Hub (``hub.ask``), and its cached copy is read, with a warning, only when the Hub does not
    answer; ``HF_HUB_OFFLINE`` reads the cache alone."""
    # Imported here: huggingface_hub pulls in an HTTP stack that catalog models and `--help` never need.
    import huggingface_hub as hf
    from huggingface_hub import errors
    from huggingface_hub.utils import logging as hf_logging

    at = f" at revision {revision}" if revision else ""
    try:
        cached = hf.try_to_load_from_cache(repo_id, CONFIG, cache_dir=cache_dir(), revision=revision)
    except (ValueError, errors.HFValidationError):
        raise Unresolved(f"model {repo_id}: not a Hugging Face repository id") from None
    cached = cached if isinstance(cached, str) else None
    if cached is not None and (offline() or hub_ask.COMMIT.fullmatch(revision or "")):
        return _read(cached), f"the local Hugging Face cache ({cached})"
    if offline():
        raise Unresolved(f"model {repo_id}{at}: not in the catalog nor the local Hugging Face cache, and "
                         "HF_HUB_OFFLINE is set")
    hub = endpoint()
    hf_logging.set_verbosity_error()  # its retry warnings are not ours to print: the one line below is
    # huggingface_hub reads HF_HUB_OFFLINE once, at import; we read it at each call (the rehearsal cluster resolves
    # in the same process as the deploy it serves, and the environment may have changed since). Offline was ruled
    # out above, so the library must not refuse on a reading taken before.
    hf.constants.HF_HUB_OFFLINE = False
    seconds = hub_ask.limit()
    token = os.environ.get("HF_TOKEN") or None
    try:
        silent = _memo.get(_silent(hub))
        if isinstance(silent, str):  # it did not answer earlier in this run: a fleet does not wait on it once per model
            raise hub_ask.Failed(f"{silent} (earlier in this run)")
        deadline = time.monotonic() + seconds
        got = hub_ask.within(seconds, lambda: hub_ask.ask(repo_id, revision or "main", hub, cache_dir(), token,
                                                          deadline))
    except hub_ask.Failed as exc:
        if exc.why.startswith("did not answer within"):
            _memo.setdefault(_silent(hub), exc.why)
        reason = _unresolved(repo_id, revision, hub, exc, cached is not None)
        if cached is None or exc.final:
            raise Unresolved(reason) from None
        note = f"not revalidated: {reason.removeprefix(f'model {repo_id}: ')}"
        print(f"vllm-remedy: warning: model {repo_id}{at}: {CONFIG} from the local Hugging Face cache ({cached}), "
              f"{note}", file=sys.stderr)
        return _read(cached), f"the local Hugging Face cache ({cached}), {note}"
    if got.downloaded:
        return _read(got.path), f"the Hub ({hub})"
    return _read(got.path), f"the local Hugging Face cache ({got.path}), revalidated with the Hub ({hub})"


def _unresolved(repo_id: str, revision: str | None, hub: str, exc: hub_ask.Failed, cached: bool) -> str:
    """The one line for a Hub that did not give the file (``cached``: the cache has the revision's older copy)."""
    if isinstance(exc, hub_ask.NotFound) and cached and exc.kind in ("gated", "repository"):
        said = "gated repository" if exc.kind == "gated" else "not found"
        return f"model {repo_id}: the Hub ({hub}) refused it ({said})"
    if isinstance(exc, hub_ask.NotFound):
        return {
            "gated": f"model {repo_id}: gated repository on the Hub ({hub}); set HF_TOKEN to a token with access to it",
            "repository": f"model {repo_id}: not found on the Hub ({hub}) nor in the local Hugging Face cache",
            "revision": f"model {repo_id}: revision {revision or 'main'} not found on the Hub ({hub})",
            "entry": f"model {repo_id}{f' at revision {revision}' if revision else ''}: the repository has no "
                     f"{CONFIG}",
        }[exc.kind]
    empty = "" if cached else f" and the local Hugging Face cache has no {CONFIG}"
    line = f"model {repo_id}: the Hub ({hub}) {exc.why}{empty}"
    return f"{line}; set HF_HUB_OFFLINE=1 where no Hub is reachable" if exc.why.startswith("is unreachable") else line


def _read(path: str) -> str:
    return read_file(path, path).decode("utf-8", errors="replace")


def read_file(path: str | Path, where: str) -> bytes:
    """A config file's bytes (at most one past :data:`MAX_CONFIG_BYTES`); one line naming ``where`` for anything
    that is not a regular file — a FIFO or a device would block the read forever or never end."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise Unresolved(f"{where}: not a regular file (a config.json is read from a file)")
        with open(path, "rb") as fh:
            return fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise Unresolved(f"{where}: cannot read ({exc.strerror or exc})") from None


def _silent(hub: str) -> tuple[str, None, tuple[str]]:
    """The memo's key for "the Hub at ``hub`` did not answer within the limit" this run (later models are not
    waited on); kept beside the models' answers so that whatever ends a run's memo ends it too."""
    return hub, None, ("did not answer",)


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
