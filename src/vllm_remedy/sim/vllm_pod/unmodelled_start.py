"""A start the memory model cannot size, in a rehearsal pod: vLLM's own refusal where the release has one, else a
pod that says in the rehearsal's own words that it cannot play the start (split from ``launch``, which decides it).

The memory model says "cannot predict" for what it does not size: a state-space or linear-attention family vLLM runs
(Qwen3-Next), a quantization method it does not model, a checkpoint a release loads in a way not modelled (ModelOpt
tensors before 0.10.1, GPTQ's ``dynamic`` before 0.7.3). Those are the tool's words, never vLLM's. Printed as vLLM's
exception they made a pod crash-loop on a start vLLM may well serve, which ``diagnose`` read as "unknown", or through
the Hub path as vLLM's "Invalid repository ID" (a missing repository: "correct --model" for a right id).

What the pod does instead:

- where the release's registry lacks the config's architecture or its checkpoint's quantization method, vLLM's own
  refusal in that release's words (:func:`refusal`: "Model architectures [...] are not supported for now", "Unknown
  quantization method: ... Must be one of [...]", ``_verify_quantization`` in config.py@0.5.5 l.302-306,
  @0.8.5 l.822-826, config/model.py@0.11.0 l.959-963, @0.34.0 l.1484-1489, the list the release's own);
- otherwise vLLM's outcome is not known here: the pod logs its start up to the model config, then one WARNING record
  whose source is :data:`SOURCE` rather than a vLLM file (:func:`said`), and keeps running, its /health never
  answering (a readiness probe never passes; without one Kubernetes counts a running container Ready). It neither
  serves (that needs a KV-cache size and a memory figure for the card, which would be invented) nor crash-loops (a
  failure vLLM may not have, which ``restore`` would roll back and ``diagnose`` would misname).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.sim.vllm_pod import registry

#: ``launch.Refusal.stage`` of a start the rehearsal does not play (``timeline.plan_refusal``: no exit, no /health)
STAGE = "unmodelled"
#: where a vLLM record names its file:line, the rehearsal's record names itself
SOURCE = "vllm-remedy rehearsal"
Frames = tuple[tuple[str, int, str, str], ...]


class Unmodelled(UserError):
    """The model's config was had, but the memory model cannot size it (``why``: its "cannot predict" line);
    ``config``: the config.json as the pod read it (None: not readable again here)."""

    def __init__(self, why: str, config: Mapping[str, Any] | None) -> None:
        super().__init__(why)
        self.why, self.config = why, config


def tool_words(text: str) -> bool:
    """Whether an error is the memory model's own "cannot predict" (never vLLM's words)."""
    return "cannot predict" in text


def said(why: str) -> str:
    """The rehearsal's record for a start it does not play."""
    return (f"cannot play this start: the memory model cannot size it ({why.removeprefix('cannot predict ')}). "
            "What vLLM does with it is not predicted, so this rehearsal pod neither serves nor fails: it stays "
            "running and its /health does not answer (the model id and flags may well be right)")


def ended(v: registry.Version, model_id: str, err: Unmodelled, typed_quant: str | None) -> dict[str, Any]:
    """``launch.Refusal``'s fields (error, stage, frames) for a model the memory model cannot size: the release's
    refusal where it has one, else the rehearsal's own record (stage :data:`STAGE`)."""
    found = refusal(v, model_id, err.config, typed_quant) if err.config is not None else None
    if found is not None:
        return {"error": found[0], "stage": "config", "frames": found[1]}
    return {"error": said(err.why), "stage": STAGE, "frames": ()}


def or_vllm(err: Exception, vllm_words: str | None = None) -> dict[str, Any]:
    """``launch.Refusal``'s (error, stage) for an error raised while the start is judged: vLLM's words (``vllm_words``,
    else ``ValueError: <err>``) at the config stage, unless the error is the memory model's own "cannot predict",
    which becomes the rehearsal's record."""
    if tool_words(str(err)):
        return {"error": said(str(err)), "stage": STAGE}
    return {"error": vllm_words or f"ValueError: {err}", "stage": "config"}


def config_read(model_id: str, revision: str | None, cache: str | None) -> tuple[str | None, Mapping[str, Any] | None]:
    """(its path, the config) of the config.json the pod's resolution just fetched, from the Hugging Face cache it was
    written to (no request); the config None when it is not there (a cache that refused the write) or not a JSON
    object."""
    import huggingface_hub as hf  # only a model the memory model cannot size needs it

    try:
        path = hf.try_to_load_from_cache(model_id, "config.json", cache_dir=cache, revision=revision)
        if not isinstance(path, str):
            return None, None
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return None, None
    return path, config if isinstance(config, Mapping) else None


def refusal(v: registry.Version, model_id: str, config: Mapping[str, Any], typed_quant: str | None
            ) -> tuple[str, Frames] | None:
    """(exception, frames) when release ``v`` refuses the config at the model config: an architecture its registry
    lacks (before 0.7.2's Transformers fallback, a name no release registered too), then a checkpoint quantization
    method no release knows (or --quantization naming another); None when it accepts both."""
    archs = config.get("architectures")
    arch = next((a for a in archs if isinstance(a, str)), "") if isinstance(archs, (list, tuple)) else ""
    method = _method(config)
    table, r = registry._table(), registry._release(v)
    if arch and arch not in table["architectures"] and not any(registry._v(f) == r
                                                               for f in table["transformers_fallback"]):
        names = [n for n, span in table["architectures"].items() if registry._present(span, r)]
        shown = f"dict_keys({names!r})" if any(registry._v(f) == r for f in table["dict_keys_listing"]) else repr(names)
        return _raised(v, model_id, f"Model architectures [{arch!r}] are not supported for now. Supported "
                                    f"architectures: {shown}", quantization=False)
    known = registry.refusal(v, model_id, arch, method)  # an architecture or method the release does not have yet
    if known is not None:
        return known
    if method and method not in table["quantization"]:  # no release's: no override claims it either
        if typed_quant and typed_quant != method:
            return _raised(v, model_id, f"Quantization method specified in the model config ({method}) does not "
                                        "match the quantization method specified in the `quantization` argument "
                                        f"({typed_quant}).", quantization=True)
        listed = [n for n, span in table["quantization"].items() if registry._present(span, r)]
        return _raised(v, model_id, f"Unknown quantization method: {method}. Must be one of {listed}.",
                       quantization=True)
    return None


def _method(config: Mapping[str, Any]) -> str:
    """The checkpoint's quant_method as vLLM reads it (``_parse_quant_hf_config``: quantization_config, else
    compressed-tensors' compression_config), lower-cased."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        quant = config.get("compression_config")
    return str(quant.get("quant_method") or "").lower() if isinstance(quant, Mapping) else ""


def _raised(v: registry.Version, model_id: str, words: str, quantization: bool) -> tuple[str, Frames]:
    """``words`` raised as the model config raises them: a ValueError, inside pydantic's ValidationError once
    ModelConfig is a pydantic dataclass (0.9.1), as ``registry.refusal`` prints them."""
    if v < registry._PYDANTIC_SINCE:
        return f"ValueError: {words}", registry._frames(v, quantization)
    kwargs = f"ArgsKwargs((), {{'model': '{model_id}', 'runner': 'auto', 'convert': 'auto', 'task': None, ...}})"
    shown = kwargs if len(kwargs) <= 50 else f"{kwargs[:25]}...{kwargs[-25:]}"
    return ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
            f"  Value error, {words} [type=value_error, input_value={shown}, input_type=ArgsKwargs]\n"
            "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
            registry._frames(v, quantization))
