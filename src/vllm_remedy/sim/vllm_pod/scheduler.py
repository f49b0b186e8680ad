"""The rehearsal pod's own scheduler-config check: whether vLLM refuses ``--max-num-batched-tokens`` below the length.

Read from the pod's argv and each release's defaults, independently of the memory model (``vllm.memory.chunked``
holds the tools' reading; a test compares the two). vLLM builds ``SchedulerConfig`` in the API server while it
builds the engine config, before any engine or GPU exists, and refuses a batch below ``max_model_len`` when chunked
prefill is off (config.py@0.6.3 ``_verify_args``; config/scheduler.py@0.11.1 ``verify_max_model_len``).

Whether it is off:
- V1 sets ``enable_chunked_prefill = True`` for a generative model whatever the flag says until 0.11.0
  (engine/arg_utils.py@0.8.0 ``_set_default_args_v1``, @0.11.0 ``_set_default_args``) and keeps the flag from 0.11.1
  (``if self.enable_chunked_prefill is None``, engine/arg_utils.py@0.11.1, @0.34.0).
- V0 keeps the flag; without one it turns chunked prefill on above 32,768 tokens unless the model has a sliding
  window (no ``--disable-sliding-window``), is multimodal (from 0.6.2), uses MLA (from 0.8.0) or, in 0.5.5-0.6.0,
  runs with ``--enable-prefix-caching`` (engine/arg_utils.py@0.5.5, @0.6.0, @0.6.2, @0.6.5, @0.8.0
  ``_set_default_args_v0``, @0.10.2).
The flag as argparse stores it: ``StoreBoolean`` before 0.8.5 (``--enable-chunked-prefill`` alone is ``const="True"``,
else "true"/"false" in any case), ``BooleanOptionalAction`` from 0.8.5 (``--no-enable-chunked-prefill``); the last
occurrence wins. A default batch is never below the length when chunked prefill is off (``max(max_model_len, ...)``),
so only a typed ``--max-num-batched-tokens`` can be refused. Which engine runs (V0 or V1, the 0.8-0.10 oracle's
fallbacks) is the launch's, shared with the memory model; only the scheduler's reading is the pod's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vllm_remedy.sim.vllm_pod.argv import STORE_BOOLEAN_UNTIL, _human
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.cmdline import ServerCommand

Version = tuple[int, ...]
_FLAG = "enable-chunked-prefill"


@dataclass(frozen=True)
class BatchRefusal:
    """The figures vLLM's message prints."""

    max_num_batched_tokens: int
    max_model_len: int


def typed_chunked(cmd: ServerCommand, version: Version) -> bool | None:
    """``--enable-chunked-prefill`` as argparse leaves it (None: not on the command line). From 0.8.5 the flag takes
    no value: a word after it is not its value (``argv`` judges what argparse makes of that word)."""
    store_boolean = version < STORE_BOOLEAN_UNTIL[_FLAG]
    found: bool | None = None
    if cmd.script is not None:  # a script's words, as its shell expanded them into flags
        for key, value in cmd.flags.items():
            if key == _FLAG:
                found = str(value).strip().lower() != "false"
            elif key == f"no-{_FLAG}":
                found = str(value).strip().lower() == "false"
        return found
    for opt in cmd.options:
        if opt.name != _FLAG:
            continue
        if opt.flag.negated:
            found = False
        elif opt.values and store_boolean:
            found = opt.values[-1].strip().lower() == "true"
        else:
            found = True
    return found


def chunked_on(engine: str, version: Version, spec: ModelSpec, typed: bool | None, max_len: int,
               disable_sliding_window: bool, prefix_caching: bool = False) -> bool:
    """Whether ``SchedulerConfig`` sees chunked prefill on (see the module docstring)."""
    if engine == "V1":
        return True if version < (0, 11, 1) else typed is not False
    if typed is not None:
        return typed
    if prefix_caching and version <= (0, 6, 0):  # ``and not self.enable_prefix_caching`` (@0.5.5, @0.6.0)
        return False
    if spec.vision_params_b > 0 and version >= (0, 6, 2):  # a vision tower: vLLM's multimodal architectures
        return False
    if spec.kv_lora_rank is not None and version >= (0, 8, 0):  # MLA
        return False
    return max_len > 32768 and (disable_sliding_window or not spec.sliding_window)


def refusal(cmd: ServerCommand, flags: Mapping[str, str], spec: ModelSpec, engine: str,
            version: Version) -> BatchRefusal | None:
    """The refusal vLLM's scheduler config raises for this pod, or None when it accepts the batch."""
    raw_batch = flags.get("max-num-batched-tokens")
    raw_len = str(flags.get("max-model-len", "")).strip()
    if raw_batch is None or raw_len.lower() in ("auto", "-1"):  # an auto length: not read
        return None
    try:
        batch = _human(str(raw_batch), version)
        max_len = _human(raw_len, version) if raw_len else spec.max_model_len
    except Exception:  # argparse refused it first (``argv.first_error``)
        return None
    disable = _on(flags, "disable-sliding-window")
    if not raw_len and disable and spec.sliding_window:  # vLLM caps the derived length at the window
        max_len = min(max_len, spec.sliding_window)
    typed, prefix_caching = typed_chunked(cmd, version), _on(flags, "enable-prefix-caching")
    if batch >= max_len or chunked_on(engine, version, spec, typed, max_len, disable, prefix_caching):
        return None
    return BatchRefusal(batch, max_len)


def _on(flags: Mapping[str, str], flag: str) -> bool:
    """A store_true flag given on the command line."""
    return str(flags.get(flag, "false")).strip().lower() not in ("false", "0", "")
