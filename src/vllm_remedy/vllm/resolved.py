"""Models resolved this run, beside the packaged catalog: what a server's ``--model`` turned out to be.

Resolving a model outside the catalog is I/O (the Hugging Face cache, the Hub, a policy's ConfigMap) and
belongs to the layers that may do it (``hub``, the connector, the rehearsal cluster); the memory model and
every prediction are pure and only *look up*. So the I/O layer resolves once per model and revision and
records the spec here — or why there is none, which every prediction then prints ("no prediction: ...").
"""

from __future__ import annotations

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import ModelSpec

_learned: dict[tuple[str, str | None], ModelSpec | str] = {}


def learn(model_id: str, revision: str | None, found: ModelSpec | str) -> None:
    """Record a resolved spec, or the one-line reason a model could not be resolved."""
    _learned[(model_id, revision)] = found


def known(model_id: str, revision: str | None = None) -> ModelSpec | str | None:
    """What this run learned about ``model_id`` at ``revision`` (None: not asked yet)."""
    return _learned.get((model_id, revision))


def model(model_id: str, revision: str | None = None) -> ModelSpec:
    """The catalog's spec for exactly this repository and revision, else the one resolved this run; a UserError
    saying why when neither has it. Never a name's look-alike: what vLLM serves is that repository's config.json."""
    spec = catalog.repo_model(model_id, revision)
    if spec is not None:
        return spec
    found = _learned.get((model_id, revision))
    if isinstance(found, ModelSpec):
        return found
    if isinstance(found, str):
        raise UserError(found)
    raise UserError(f"model {model_id}{f' at revision {revision}' if revision else ''}: not resolved (not a catalog "
                    "repository; its config.json comes from the Hugging Face cache, the Hub or the policy's "
                    "model_config)")
