"""Each rollback candidate judged on its own model: the key its model was resolved under, and the Hub's own "no".

The I/O layer resolves every revision's model at that revision's ``--model``, ``--revision`` and environment before
restore decides (``operations.restore_models``); each answer is kept under its environment's key (``resolved``), so a
candidate's prediction must look its model up under that key, not the current template's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from vllm_remedy.errors import UserError
from vllm_remedy.kube.history import Revision
from vllm_remedy.policy.known_good import same_model
from vllm_remedy.vllm import hf_overrides, resolved
from vllm_remedy.vllm.cmdline import find_server

#: Revision number → the environment key its model was resolved under (``resolved.Key``). A revision absent: the
#: workload's own key.
ModelKeys = Mapping[int, tuple[Any, ...]]
_T = TypeVar("_T")


def in_scope(keys: ModelKeys | None, judge: Callable[[Revision], _T],
             container: str | None = None) -> Callable[[Revision], _T | str]:
    """``judge`` with its predictions of a revision looking that revision's model up under the key it was resolved
    with (``resolved.scope``): an earlier revision pinned to another ``--revision``, model or token is predicted on its
    own config, not the current template's. With ``container``, a revision ``judge`` lets pass is held back when the
    Hub refused its model (:func:`hub_refused`)."""
    def scoped(rev: Revision) -> _T | str:
        with resolved.scope((keys or {}).get(rev.number)):
            said = judge(rev)
            if said or container is None:
                return said
            return hub_refused(rev, container) or said
    return scoped


def hub_refused(rev: Revision, container: str | None) -> str | None:
    """Why ``rev`` cannot start when the Hub's own answer to what vLLM would ask is "no" (no such repository or
    revision, a gated repository refused to the pod's token: ``hub.Unavailable``), as recorded when its model was
    resolved; vLLM dies on it at startup (``model_unavailable``), whatever the card. None otherwise (resolved, not
    asked, or the Hub could not be asked: "no prediction", which evidence alone decides)."""
    try:
        server = find_server(dict(rev.template.get("spec") or {}), container)
    except UserError:
        return None
    source = hf_overrides.config_source(server.flags, server.model)
    found = resolved.known(str(source), server.flags.get("revision")) if source else None
    return f"predicted model_unavailable: {found}" if getattr(found, "unavailable", False) else None


def served_model(template: Mapping[str, Any], container: str | None) -> str | None:
    """The model a pod template's vLLM serves as argv names it; for a command naming none, ``--config PATH`` (vLLM
    may take it from that file, which is not read here: two templates reading the same file serve the same model,
    since a rollback does not change the file). None: no vLLM server in it, or neither."""
    try:
        server = find_server(dict(template.get("spec") or {}), container)
    except UserError:
        return None
    if server.model is not None:
        return server.model
    path = server.flags.get("config")
    return f"--config {path}" if path is not None else None


def model_swap(current: Mapping[str, Any] | None, container: str | None) -> Callable[[Revision], str | None]:
    """A reject: why a candidate serving another model than the current (crash-looping) template must not be rolled
    back to — clients name the model (served-model-name defaults to it), so a rollback onto another one answers them
    "model does not exist" or with another model's output (hostile16 G10: a Llama Deployment restored to an older
    Qwen revision "pinned in policy"). Only the operator may make that swap, by naming the revision. Models compare
    as the Hub's case-insensitive ids; with no current template (or no model in it) nothing is rejected."""
    now = served_model(current or {}, container) if current else None

    def swap(rev: Revision) -> str | None:
        if now is None:
            return None
        then = served_model(rev.template, container)
        if then is not None and same_model(then, now):
            return None
        return (f"it serves {then or 'no model this tool can read'}, not {now} (the model of the revision dying "
                f"now): restore never swaps the served model; to restore it anyway, name it with --data "
                f"revision={rev.number}")
    return swap


def first_of(*judges: Callable[[Revision], str | None]) -> Callable[[Revision], str | None]:
    """A reject asking each of ``judges`` in turn: the first reason given, or None."""
    def judged(rev: Revision) -> str | None:
        for judge in judges:
            said = judge(rev)
            if said:
                return said
        return None
    return judged
