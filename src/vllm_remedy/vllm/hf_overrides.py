"""``--hf-overrides`` and ``--hf-config-path``: the config.json vLLM sizes is not always the repository's own.

vLLM reads ``--hf-overrides`` as JSON (``type=json.loads`` from 0.6.4, engine/arg_utils.py@0.6.4; a dict field of
``ModelConfig`` through the same JSON reading from 0.10, config/__init__.py@0.10.2) and applies a dict to the HF
config *before* deriving anything from it (``get_config(..., hf_overrides_kw=...)`` → ``config.update``), so the
maximum length, the layer count and the weights all follow it. Flat keys replace the top-level value; from 0.12.0 a
dict value is merged into the sub-config it names (``ModelConfig._update_nested``, config/model.py@0.12.0, @0.34.0:
``{"text_config": {"num_hidden_layers": 16}}`` changes that one key) and replaces a plain dict (``rope_scaling``)
after the RoPE patch; before, every dict replaced the whole value. Each release's reading is ``hf_merge``.
``--hf-config-path`` (from 0.8: engine/arg_utils.py@0.8.5) names where the config comes from instead of the model
(``get_config(self.hf_config_path or self.model, ...)``): a repository id, or a path inside the pod.

The tools apply a literal dict to the resolved config (the catalog's or the one ``hub`` read) and rebuild the spec;
a key the spec builder does not read, or a value the tools cannot see, is "cannot predict" naming the key. Which
keys are read is measured, not listed: a key is read when its value changes the spec (``_read``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog, config_bounds, hf_merge
from vllm_remedy.vllm.catalog import ModelSpec

SINCE: tuple[int, int, int] = (0, 6, 4)
#: The first release with --hf-config-path (engine/arg_utils.py@0.8.0; not in @0.7.3).
PATH_SINCE: tuple[int, int, int] = (0, 8, 0)
FLAG, PATH_FLAG = "hf-overrides", "hf-config-path"
#: Through 0.11.x the overrides are set with ``config.update``, one ``setattr`` per top-level key (config.py@0.6.5
#: l.275, @0.8.5 l.457, @0.9.0 l.519-521; transformers_utils/config.py@0.11.0 l.633): a key spelled with a dash,
#: such as the ``max-position-embeddings`` 0.9.0's dotted ``--hf-overrides.max_position_embeddings`` becomes
#: (``hf_dotted``: utils.py@0.9.0 l.1413-1422 respells the whole option; 0.9.2 only the flag part), is an attribute
#: no config reader names, so vLLM sizes the config unchanged. 0.12.0 merges dicts into sub-configs: not judged.
DASHED_INERT_BEFORE: tuple[int, int, int] = (0, 12, 0)
#: 0.10.0-0.11.x apply the overrides with ``config.update`` inside ``get_config`` and then run ``patch_rope_scaling``,
#: whose ``patch_rope_scaling_dict`` raises on a ``rope_scaling`` naming neither ``rope_type`` nor ``type``
#: (transformers_utils/config.py@0.10.0 l.431-438, @0.11.0 l.631-638 then l.390-391): the model config refuses the
#: start whatever else the JSON sets. Before 0.10 the dict is set past the patch (``hf_merge``), from 0.12 merged.
NO_ROPE_TYPE_RELEASES: tuple[tuple[int, int, int], tuple[int, int, int]] = ((0, 10, 0), (0, 12, 0))
NO_ROPE_TYPE = "ValueError: rope_scaling should have a 'rope_type' key"

#: What of a pod's environment decides the config it reads (``hub.pod.key``: endpoint, offline, token digest); ``()``
#: for a config read without one (a local file the tools were given).
EnvKey = tuple[Any, ...]
#: config.json mappings this run read (``hub``), by (model id, revision, the environment it was read under): the base
#: an override is applied to. Two rehearsal pods on one model id with different HF_ENDPOINT or HF_TOKEN read different
#: configs, possibly at once (each cluster's kubelet on its own thread), and each override applies to its own.
_configs: dict[tuple[str, str | None, EnvKey], Mapping[str, Any]] = {}
#: (model id, revision) -> the environment of the last config remembered, in this process and in this thread
_latest: dict[tuple[str, str | None], EnvKey] = {}
_thread = threading.local()


def remember(model_id: str, revision: str | None, config: Mapping[str, Any], env_key: EnvKey = ()) -> None:
    """Keep the config a model's spec was built from (``hub``) under the environment it was read with, so an override
    can be applied to it later; it becomes this thread's base for the model (see :func:`base_config`)."""
    _configs[(model_id, revision, env_key)] = config
    _latest[(model_id, revision)] = env_key
    if not hasattr(_thread, "keys"):
        _thread.keys = {}
    _thread.keys[(model_id, revision)] = env_key


def config_source(flags: Mapping[str, str], model_id: str | None) -> str | None:
    """What vLLM reads the config from: ``--hf-config-path`` when given, else the model."""
    path = str(flags.get(PATH_FLAG) or "").strip()
    return path or model_id


def parse(value: str) -> Any:
    """The flag's value as vLLM's ``json.loads`` reads it; argparse refuses what does not parse (exit 2)."""
    return json.loads(value)


#: From 0.9.0 the flag's type is ``union_dict_and_str`` (a dict-or-callable field of ModelConfig: engine/arg_utils.py
#: @0.9.2, @0.10.2, @0.34.0): only text wrapped in braces goes through ``json.loads``; before, ``type=json.loads``.
UNION_TYPE_SINCE: tuple[int, int, int] = (0, 9, 0)
#: What counts as "wrapped in braces": ``re.match("^{.*}$")`` in engine/arg_utils.py@0.9.0, @0.9.2; from 0.10.0
#: (@0.10.0 ... @0.34.0) blanks around the braces and newlines inside are allowed too.
_BRACES = re.compile(r"^{.*}$")
_BRACES_LOOSE = re.compile(r"(?s)^\s*{.*}\s*$")
LOOSE_BRACES_SINCE: tuple[int, int, int] = (0, 10, 0)


def argparse_refusal(value: str, version: tuple[int, int, int]) -> str | None:
    """argparse's words refusing ``value`` as ``--hf-overrides`` (None when it parses, or when argparse takes it as
    text from 0.9.0, which is not judged here): ``invalid loads value`` up to 0.8, ``parse_type``'s
    ``ArgumentTypeError`` after (its message prints the function's address, which varies per process)."""
    if version < SINCE:
        return None
    braces = _BRACES_LOOSE if version >= LOOSE_BRACES_SINCE else _BRACES
    if version >= UNION_TYPE_SINCE and not braces.match(value):
        return None
    try:
        parse(value)
    except (ValueError, RecursionError):
        if version < UNION_TYPE_SINCE:
            return f"argument --{FLAG}: invalid loads value: {value!r}"
        return f"argument --{FLAG}: Value {value} cannot be converted to <function loads at 0x...>."
    return None


def base_config(model_id: str, revision: str | None, env_key: EnvKey | None = None
                ) -> tuple[Mapping[str, Any], float | None] | None:
    """(config, the catalog's reviewed parameter count or None) the spec was built from, None when unknown.
    ``env_key``: the environment it was read under; None: the one this thread last resolved the model with (a pod's
    start resolves, then applies its overrides, on one thread), else the process's last."""
    if catalog.repo_model(model_id, revision) is not None:
        for entry in catalog._load("models.yaml")["models"]:  # the catalog's own entries: the reviewed config
            ids = [entry["id"], *entry.get("aliases", [])]
            if model_id.strip().lower() in (i.lower() for i in ids):
                return entry["config"], float(entry["params_b"])
    if env_key is None:
        env_key = getattr(_thread, "keys", {}).get((model_id, revision), _latest.get((model_id, revision), ()))
    found = _configs.get((model_id, revision, env_key))
    return (found, None) if found is not None else None


def merged(config: Mapping[str, Any], overrides: Mapping[str, Any], version: tuple[int, int, int]) -> dict[str, Any]:
    """``config`` with ``overrides`` applied as the release does (``hf_merge.apply``)."""
    return hf_merge.apply(config, overrides, version).config


def _set(config: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(config)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return out


_DELETE = object()


def _other(value: Any) -> Any:
    """A value unlike ``value`` of the same kind, to see whether the key is read at all."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * 2 + 1
    if isinstance(value, float):
        return value * 2 + 1.0
    if isinstance(value, str):
        return value + "x"
    return _DELETE


def _spec(config: Mapping[str, Any], name: str) -> ModelSpec | str:
    try:
        return ModelSpec.from_hf_config(config, name=name)
    except (UserError, OverflowError, ValueError, TypeError, KeyError) as exc:
        return str(exc)


def _read(config: dict[str, Any], path: tuple[str, ...], name: str) -> bool:
    """Whether the spec builder reads ``path``: changing or removing its value changes the spec (or its refusal)."""
    node: Any = config
    for key in path:
        node = node[key]
    applied = _spec(config, name)
    return any(_spec(_set(config, path, other), name) != applied for other in (_other(node), _DELETE))


def applied(spec: ModelSpec, model_id: str, revision: str | None, flags: Mapping[str, str],
            version: tuple[int, int, int], literal: bool = False) -> ModelSpec:
    """``spec`` as vLLM sizes it under the flags' ``--hf-overrides``; a UserError ("cannot predict", naming the key)
    when the tools cannot apply it. A release without the flag never gets here (argparse refuses it first).
    ``literal``: the value is known text (``hf_received``), so a ``$`` in it is a character, not a variable."""
    text = flags.get(FLAG)
    if text is None or version < SINCE:
        return spec
    if "$" in str(text) and not literal:
        raise UserError(f"--{FLAG} {text!r} carries a value this tool cannot see (a variable)")
    try:
        overrides = parse(str(text))
    except (ValueError, RecursionError):  # argparse refuses it first (``cmdline``): no spec is sized then
        raise UserError(f"--{FLAG} {text!r} is not JSON") from None
    if not isinstance(overrides, Mapping):
        raise UserError(f"--{FLAG} {text!r} is not a JSON object of config keys")
    if version < DASHED_INERT_BEFORE:
        overrides = {k: v for k, v in overrides.items() if "-" not in str(k)}
    if not overrides:
        return spec
    scaling = overrides.get("rope_scaling")
    if (NO_ROPE_TYPE_RELEASES[0] <= version < NO_ROPE_TYPE_RELEASES[1] and isinstance(scaling, Mapping)
            and "rope_type" not in scaling and "type" not in scaling):
        return dataclasses.replace(spec, load_refusal=NO_ROPE_TYPE)
    base = base_config(model_id, revision)
    if base is None:
        raise UserError(f"--{FLAG} overrides keys of {model_id}'s config.json, which this run did not "
                        "read (a spec given without its config)")
    config, reviewed = base
    got = hf_merge.apply(config, overrides, version)
    new = got.config
    try:
        ModelSpec.from_hf_config(new, name=model_id)
    except config_bounds.Unbuildable:  # no model is built from it: the answer, whatever else it sets
        return rebuilt(spec, model_id, config, new, reviewed)
    except (UserError, OverflowError, ValueError, TypeError, KeyError):
        pass  # a key the builder misses may be what an unread key would fill: those are named first
    unread = [".".join(p) for p in got.paths if p not in got.inert and not _read(new, p, model_id)]
    if unread:
        raise UserError(f"--{FLAG} key(s) {', '.join(unread)}: not read by this tool's model of the "
                        "config, so what vLLM does with them is not sized")
    return rebuilt(spec, model_id, config, new, reviewed)


def rebuilt(spec: ModelSpec, model_id: str, config: Mapping[str, Any], new: Mapping[str, Any],
            reviewed: float | None) -> ModelSpec:
    """``spec`` with what ``new`` changes against ``config``, the catalog's reviewed parameter count (``reviewed``)
    scaled as the shapes' count scales; a UserError when the changed config is not one the spec builder takes."""
    after = _spec(new, model_id)
    if isinstance(after, str):  # "cannot predict <arch>: ..." reads "--hf-overrides: <arch>: ..." after the callers'
        raise UserError(f"--{FLAG}: {after.removeprefix('cannot predict ')}")  # own "cannot predict: "
    before = _spec(config, model_id)
    if isinstance(before, str):
        raise UserError(f"--{FLAG}: {before}")
    changed = {f.name: getattr(after, f.name) for f in dataclasses.fields(ModelSpec)
               if f.name != "name" and getattr(after, f.name) != getattr(before, f.name)}
    if reviewed is not None and before.params_b > 0:  # the catalog's count, scaled as the shapes scale
        changed["params_b"] = reviewed * after.params_b / before.params_b
    return dataclasses.replace(spec, **changed)
