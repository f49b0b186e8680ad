"""Runbook step 5, "OOM under load": caps on what one step of the engine may take on (pure).

The server started fine and died later, so something outside the KV cache grew. The levers, per
policy ``load_shedding``:

* ``--max-num-batched-tokens``: caps the prefill chunk (activations grow with it). Only ever lowered —
  compared with the *effective* value, which is the version's default when the flag is absent — and
  never below ``--max-model-len`` when chunked prefill is off (vLLM refuses to start then).
* ``--limit-mm-per-prompt``: images/videos per request, multimodal models only. Spelled as the running
  version parses it: ``image=2,video=1`` before 0.8.5, JSON from 0.8.5 (which still read both; 0.10
  dropped the ``key=value`` form). Each modality only lowered.
* ``--max-loras``: adapters resident per batch, only when LoRA is enabled (vLLM's default is 1).

Only flags that change are returned; each skipped lever says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from vllm_remedy.errors import UserError
from vllm_remedy.policy import LoadShedding, parse_flag_int
from vllm_remedy.vllm import catalog, resolved
from vllm_remedy.vllm.memory import EngineSettings, resolve
from vllm_remedy.vllm.versions import parse_version

#: First release whose --limit-mm-per-prompt parses JSON (engine/arg_utils.py: optional_type(json.loads)).
MM_JSON_SINCE = (0, 8, 5)
_VISION = re.compile(r"(-vl\b|vl-|vision|llava|pixtral|idefics|internvl|minicpm-v|molmo|paligemma|gemma-3-\d+b|"
                     r"mllama|-omni|qwen2\.5-vl|qwen2-vl|phi-3\.5-vision|phi-4-multimodal)", re.IGNORECASE)


@dataclass(frozen=True)
class Guard:
    """Flags to set (canonical names, string values ready for the command-line editor) and why others are not."""

    set: dict[str, str]
    notes: tuple[str, ...]


def parse_mm_limits(value: str) -> dict[str, int]:
    """``{"image":2}`` or ``image=2,video=1`` → ``{"image": 2, "video": 1}``; UserError when neither."""
    text = value.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UserError(f"--limit-mm-per-prompt {value!r}: not valid JSON") from exc
        if isinstance(data, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in data.values()):
            return {str(k): int(v) for k, v in data.items()}
        raise UserError(f"--limit-mm-per-prompt {value!r}: expected a JSON object of modality → count")
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, count = part.partition("=")
        if not sep or not count.strip().isdigit():
            raise UserError(f"--limit-mm-per-prompt {value!r}: expected modality=count pairs, e.g. image=2")
        out[key.strip()] = int(count)
    return out


def format_mm_limits(limits: Mapping[str, int], version: str | None) -> str:
    """The value as ``version`` parses it (unknown versions: JSON, as every current release does)."""
    parsed = parse_version(version)
    ordered = dict(sorted(limits.items()))
    if parsed is not None and parsed < MM_JSON_SINCE:
        return ",".join(f"{k}={v}" for k, v in ordered.items())
    return json.dumps(ordered, separators=(",", ":"))


def is_multimodal(model: str | None, flags: Mapping[str, str]) -> bool:
    """Multimodal when the server already limits inputs, or the model name is a known vision-language family."""
    if "limit-mm-per-prompt" in flags:
        return True
    return bool(model) and bool(_VISION.search(str(model)))


def _effective_mnbt(model: str | None, gpu: str | None, flags: Mapping[str, str],
                    version: str | None) -> tuple[int | None, bool | None, int | None]:
    """(effective max-num-batched-tokens, chunked prefill on?, max-model-len) — Nones when not knowable."""
    explicit = parse_flag_int(flags["max-num-batched-tokens"]) if "max-num-batched-tokens" in flags else None
    try:
        spec, card = resolved.model(str(model), flags.get("revision")), catalog.gpu(str(gpu))
        res = resolve(spec, card, EngineSettings.from_flags(dict(flags), version))
    except (UserError, TypeError):
        return explicit, None, parse_flag_int(flags.get("max-model-len", "")) if "max-model-len" in flags else None
    return res.mnbt, res.chunked_prefill, res.max_model_len


def caps_of(policy: LoadShedding, max_num_batched_tokens: int | None = None,
            limit_mm_per_prompt: Mapping[str, int] | None = None, max_loras: int | None = None) -> LoadShedding:
    """The caps an operation applies: each one given, else the policy's ``load_shedding`` value (one rule for every
    kind's step 5)."""
    mm = limit_mm_per_prompt if limit_mm_per_prompt is not None else policy.limit_mm_per_prompt
    return LoadShedding(max_num_batched_tokens=max_num_batched_tokens if max_num_batched_tokens is not None
                        else policy.max_num_batched_tokens,
                        max_loras=max_loras if max_loras is not None else policy.max_loras,
                        limit_mm_per_prompt=dict(mm) if mm else None)


def guard_flags(flags: Mapping[str, str], shed: LoadShedding, *, model: str | None, version: str | None,
                gpu: str | None) -> Guard:
    """The step-5 caps of ``shed`` that would lower what the server runs with now (see the module docstring)."""
    out: dict[str, str] = {}
    notes: list[str] = []
    cap = shed.max_num_batched_tokens
    if cap is not None:
        current, chunked, max_len = _effective_mnbt(model, gpu, flags, version)
        if current is not None and current <= cap:
            notes.append(f"--max-num-batched-tokens: {current} in effect is already <= {cap}")
        elif chunked is False and max_len is not None and cap < max_len:
            notes.append(f"--max-num-batched-tokens {cap} not applied: without chunked prefill vLLM needs it "
                         f">= --max-model-len {max_len}")
        else:
            out["max-num-batched-tokens"] = str(cap)
    if shed.limit_mm_per_prompt:
        if not is_multimodal(model, flags):
            notes.append(f"--limit-mm-per-prompt: {model} is not a multimodal model")
        else:
            running = parse_mm_limits(flags["limit-mm-per-prompt"]) if "limit-mm-per-prompt" in flags else {}
            wanted = dict(running)
            for modality, count in shed.limit_mm_per_prompt.items():
                wanted[modality] = min(count, running.get(modality, count))
            if wanted != running:
                out["limit-mm-per-prompt"] = format_mm_limits(wanted, version)
            else:
                notes.append("--limit-mm-per-prompt: already within the policy's limits")
    if shed.max_loras is not None:
        if flags.get("enable-lora", "false") in ("false", "False", "0"):
            notes.append("--max-loras: LoRA is not enabled (--enable-lora)")
        else:
            running_loras = parse_flag_int(flags["max-loras"]) if "max-loras" in flags else 1
            if running_loras is not None and running_loras <= shed.max_loras:
                notes.append(f"--max-loras: {running_loras} in effect is already <= {shed.max_loras}")
            else:
                out["max-loras"] = str(shed.max_loras)
    return Guard(out, tuple(notes))
