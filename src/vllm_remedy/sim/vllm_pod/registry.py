"""The rehearsal pod's own reading of whether its vLLM release implements the model's architecture and checkpoint
quantization method, and the traceback vLLM prints when it does not.

Independent of the tools' lookup (``vllm.arch_release``): this reads its own copy of the table,
``vllm_registry.json`` beside it, written by the same generator (scripts/vllm_registry.py) from each release's
model_executor/models/registry.py and model_executor/layers/quantization/__init__.py. A release between two read ones
takes the nearest read one at or below it; a newer one the newest's names.

vLLM's model config asks the registry while it is built, after the max-length check and before
``_verify_quantization`` (config.py@0.6.3 ``ModelConfig.__init__``: ``_init_multimodal_config`` ->
``ModelRegistry.is_multimodal_model`` -> ``inspect_model_cls`` -> ``_raise_for_unsupported``; config.py@0.8.5 the
same through ``self.registry``; a pydantic dataclass from 0.9.1, whose ValueError pydantic reports as a
ValidationError). From 0.7.2 the default ``model_impl`` sends an unregistered name to the Transformers backend instead:
the pod then starts (the image's transformers is not modelled). The registry's names are listed in the table's order
(by first release, then name), not the registry's own.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

Version = tuple[int, int, int]
_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
_PYDANTIC_SINCE: Version = (0, 9, 1)  # ModelConfig a pydantic dataclass (config.py@0.9.1)


def _v(text: object) -> Version:
    major, minor, patch = ([int(p) for p in str(text).split(".")[:3]] + [0, 0])[:3]
    return major, minor, patch


@cache
def _table() -> dict[str, Any]:
    """The copy beside this module."""
    return json.loads(resources.files("vllm_remedy.sim.vllm_pod").joinpath("vllm_registry.json").read_text("utf-8"))


def _release(v: Version) -> Version:
    releases = [_v(r) for r in _table()["releases"]]
    return next((r for r in reversed(releases) if r <= v), releases[0])


def _present(row: list[Any], r: Version) -> bool:
    """Whether a run of read releases (first, last or None; one pair per run) holds ``r``."""
    return any(_v(row[i]) <= r and (row[i + 1] is None or r <= _v(row[i + 1])) for i in range(0, len(row), 2))


def _frames(v: Version, quantization: bool) -> tuple[tuple[str, int, str, str], ...]:
    """Below ``run_server``: ``create_engine_config`` down to the raise (line numbers of 0.6.3 for 0.5.5-0.7.x, of
    0.8.5 for 0.8.x, of 0.10.1's engine/arg_utils.py and pydantic's ``__init__`` from 0.9.1)."""
    if v >= _PYDANTIC_SINCE:
        return ((f"{_SITE}/engine/arg_utils.py", 1057, "create_engine_config",
                 "model_config = self.create_model_config()"),
                (f"{_SITE}/engine/arg_utils.py", 904, "create_model_config", "return ModelConfig("),
                ("/usr/local/lib/python3.12/dist-packages/pydantic/_internal/_dataclasses.py", 123, "__init__",
                 "s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)"))
    old = v < (0, 8, 0)
    head = ((f"{_SITE}/engine/arg_utils.py", 900 if old else 1099, "create_engine_config",
             "model_config = self.create_model_config()"),
            (f"{_SITE}/engine/arg_utils.py", 837 if old else 987, "create_model_config", "return ModelConfig("))
    if quantization:
        return (*head, (f"{_SITE}/config.py", 205 if old else 546, "__init__", "self._verify_quantization()"),
                (f"{_SITE}/config.py", 292 if old else 824, "_verify_quantization", "raise ValueError("))
    registry = f"{_SITE}/model_executor/models/registry.py"
    return (*head,
            (f"{_SITE}/config.py", 194 if old else 517, "__init__",
             "self.multimodal_config = self._init_multimodal_config("),
            (f"{_SITE}/config.py", 213 if old else 586, "_init_multimodal_config",
             "if ModelRegistry.is_multimodal_model(architectures):" if old
             else "if self.registry.is_multimodal_model(self.architectures):"),
            (registry, 384 if old else 505, "is_multimodal_model",
             "return self.inspect_model_cls(architectures).supports_multimodal" if old
             else "model_cls, _ = self.inspect_model_cls(architectures)"),
            (registry, 353 if old else 465, "inspect_model_cls", "return self._raise_for_unsupported(architectures)"),
            (registry, 314 if old else 419, "_raise_for_unsupported", "raise ValueError("))


def _words(v: Version, architecture: str, quant_method: str | None) -> tuple[str, bool] | None:
    """vLLM's words refusing the model at release ``v`` and whether it is the quantization check, or None."""
    table, r = _table(), _release(v)
    row = table["architectures"].get(architecture)
    if row is not None and not _present(row, r) and not any(_v(f) == r for f in table["transformers_fallback"]):
        previous = (table.get("previously_supported") or {}).get(architecture)
        if previous is not None and _v(previous[0]) <= r:
            return (f"Model architecture {architecture} was supported in vLLM until v{previous[1]}, and is not "
                    "supported anymore. Please use an older version of vLLM if you want to use this model "
                    "architecture."), False
        names = [n for n, span in table["architectures"].items() if _present(span, r)]
        shown = f"dict_keys({names!r})" if any(_v(f) == r for f in table["dict_keys_listing"]) else repr(names)
        return (f"Model architectures [{architecture!r}] are not supported for now. Supported architectures: "
                f"{shown}"), False
    method = (quant_method or "").lower()
    row = table["quantization"].get(method)
    if row is not None and r < _v(row[0]):  # a method newer than the release (a dropped one may be overridden)
        known = [n for n, span in table["quantization"].items() if _present(span, r)]
        return f"Unknown quantization method: {method}. Must be one of {known}.", True
    return None


def refusal(v: Version, model_id: str, architecture: str,
            quant_method: str | None) -> tuple[str, tuple[tuple[str, int, str, str], ...]] | None:
    """(the exception as Python prints it, its frames below ``run_server``) when the release lacks the model's
    architecture (no Transformers fallback) or its checkpoint's quantization method; None otherwise."""
    found = _words(v, architecture, quant_method)
    if found is None:
        return None
    words, quantization = found
    if v < _PYDANTIC_SINCE:
        return f"ValueError: {words}", _frames(v, quantization)
    kwargs = f"ArgsKwargs((), {{'model': '{model_id}', 'runner': 'auto', 'convert': 'auto', 'task': None, ...}})"
    shown = kwargs if len(kwargs) <= 50 else f"{kwargs[:25]}...{kwargs[-25:]}"  # pydantic shortens long inputs
    error = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
             f"  Value error, {words} [type=value_error, input_value={shown}, input_type=ArgsKwargs]\n"
             "    For further information visit https://errors.pydantic.dev/2.11/v/value_error")
    return error, _frames(v, quantization)
