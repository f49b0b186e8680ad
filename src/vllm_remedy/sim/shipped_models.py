"""A world's shipped models (``models: [{id, revision?, config}]`` in its seed) for the tools run against it.

``ship_model`` gives them to the rehearsal cluster's pods — and to this process's predictions — in the process that
serves the cluster. The deploys, ``check`` and ``drift`` of a game day run as separate processes (the real pyinfra
CLI), which resolve catalog → Hugging Face cache → Hub and never saw them: a game day on a world's own model failed
at "no prediction ... the Hub is unreachable", not at the remediation it rehearses (hostile15 H10).

A world that ships its models is a world without a Hub for them ("without any network"), and an operator whose
cluster reaches no Hub gives the tools what its pods have the way huggingface_hub and vLLM themselves read it: a
Hugging Face cache holding the models' config.json files, read with ``HF_HUB_OFFLINE=1`` (the README's "local
Hugging Face cache", and huggingface_hub's documented offline mode). So the game day writes each shipped config into
a cache of its own (its working folder, never the user's cache, which fake repositories must not enter), in
huggingface_hub's layout (``hub.store``), and runs its deploys with ``HF_HUB_CACHE`` there and ``HF_HUB_OFFLINE=1``
(:func:`tools_env`); ``sim up`` writes the same cache in its state folder and prints the two variables to export for
the deploys, ``check`` and ``drift`` a user runs against it. Offline matters: online, a branch is revalidated
against the Hub, whose "no such repository" for a world's own model is definitive (vLLM's own answer) and would
overrule the copy. The policy's ``model_config`` was the other way a user has, but it holds one config per policy
and stands in only when the Hub cannot be asked, which the same offline switch would need; the cache carries every
shipped model and revision at once. What the cache cannot carry: a model shipped with no revision serves pods at any
``--revision``, but is written here at ``main`` only; and in a world that ships models, a model outside the catalog
that only the Hub serves is offline to its deploys too (ship it as well).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vllm_remedy.hub import store

#: The folder, under a game's working folder, of the Hugging Face cache its deploys read the world's models from.
CACHE = "hf-hub-cache"


def shipped(seed: Mapping[str, Any]) -> list[tuple[str, str | None, Mapping[str, Any]]]:
    """(id, revision or None, config.json mapping) of every model ``seed`` ships (entries ``ship_model`` accepts)."""
    out: list[tuple[str, str | None, Mapping[str, Any]]] = []
    for entry in seed.get("models") or []:
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str) and isinstance(entry.get("config"), Mapping):
            revision = str(entry["revision"]) if entry.get("revision") is not None else None
            out.append((entry["id"], revision, entry["config"]))
    return out


def write_cache(models: list[tuple[str, str | None, Mapping[str, Any]]], cache: Path) -> None:
    """Each model's config.json into ``cache`` as huggingface_hub would have downloaded it: at ``refs/<revision>``
    (``main`` without one), its commit the revision itself when it is one, else a digest of the file."""
    for model_id, revision, config in models:
        body = json.dumps(config, indent=2, sort_keys=True).encode()
        digest = hashlib.sha1(body).hexdigest()
        ref = revision or "main"
        commit = ref if store.COMMIT.fullmatch(ref) else digest
        store.save(str(cache), model_id, ref, commit, digest, body)


def tools_env(seed: Mapping[str, Any], workdir: Path) -> dict[str, str]:
    """The environment the tools run against this world need to see its shipped models ({} when it ships none): the
    cache written under ``workdir`` and huggingface_hub's offline switch (see the module docstring for why)."""
    models = shipped(seed)
    if not models:
        return {}
    cache = workdir / CACHE
    write_cache(models, cache)
    return {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
