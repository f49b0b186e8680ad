"""Models resolved this run, beside the packaged catalog: what a server's ``--model`` turned out to be.

Resolving a model outside the catalog is I/O (the Hugging Face cache, the Hub, a policy's ConfigMap) and
belongs to the layers that may do it (``hub``, the connector, the rehearsal cluster); the memory model and
every prediction are pure and only *look up*. So the I/O layer resolves once per model, revision and environment
and records the spec here — or why there is none, which every prediction then prints ("no prediction: ...").

The answer hangs on the environment it was asked with (the pod's token, mirror, offline switch: ``hub.pod.key``,
plus the policy copy that may stand in), so it is kept under that key: two workloads on one model with different
tokens get each their own answer. A prediction looks up under the key of the workload it predicts — set by
:func:`scope` around it (``check``), or given by a registered reader of the current pyinfra host (the connector,
for the deploys and ``drift``, whose hosts run in greenlets); with none, the model's latest answer (one command
line's own model).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import ModelSpec

#: What decided an answer (``hub.answer_key``); :data:`ANY` for one that holds in every environment (a world's
#: shipped config).
Key = tuple[Any, ...]
ANY: Key = ()

#: (model, revision) → {environment key: answer}, the latest answer last (each update is a new dict, so a copy of
#: this mapping keeps what it held)
_learned: dict[tuple[str, str | None], dict[Key, ModelSpec | str]] = {}
_scope: ContextVar[Key | None] = ContextVar("vllm_remedy_resolved_scope", default=None)
#: Readers of the workload being predicted where no :func:`scope` is set (the pyinfra connector's current host).
_readers: list[Callable[[], Key | None]] = []


def learn(model_id: str, revision: str | None, found: ModelSpec | str, key: Key = ANY) -> None:
    """Record a resolved spec, or the one-line reason a model could not be resolved, under the environment ``key``
    that decided it."""
    answers = {k: v for k, v in _learned.get((model_id, revision), {}).items() if k != key}
    answers[key] = found
    _learned[(model_id, revision)] = answers


@contextlib.contextmanager
def scope(key: Key | None) -> Iterator[None]:
    """Look models up under ``key`` (a workload's environment) inside the block."""
    token = _scope.set(key)
    try:
        yield
    finally:
        _scope.reset(token)


def read_scope_with(reader: Callable[[], Key | None]) -> None:
    """Register ``reader``: the key of the workload being predicted where no :func:`scope` is set (None: not its)."""
    if reader not in _readers:
        _readers.append(reader)


def current() -> Key | None:
    """The environment key predictions look up under now (None: none set, the latest answer serves)."""
    key = _scope.get()
    if key is not None:
        return key
    for reader in _readers:
        if (got := reader()) is not None:
            return got
    return None


def known(model_id: str, revision: str | None = None) -> ModelSpec | str | None:
    """What this run learned about ``model_id`` at ``revision`` for the current environment (None: not asked)."""
    answers = _learned.get((model_id, revision))
    if not answers:
        return None
    key = current()
    if key is None:
        return next(reversed(answers.values()))
    return answers[key] if key in answers else answers.get(ANY)


def model(model_id: str, revision: str | None = None) -> ModelSpec:
    """The catalog's spec for exactly this repository and revision, else the one resolved this run for the current
    environment; a UserError saying why when neither has it. Never a name's look-alike: what vLLM serves is that
    repository's config.json."""
    spec = catalog.repo_model(model_id, revision)
    if spec is not None:
        return spec
    found = known(model_id, revision)
    if isinstance(found, ModelSpec):
        return found
    if isinstance(found, str):
        raise UserError(found)
    raise UserError(f"model {model_id}{f' at revision {revision}' if revision else ''}: not resolved (not a catalog "
                    "repository; its config.json comes from the Hugging Face cache, the Hub or the policy's "
                    "model_config)")
