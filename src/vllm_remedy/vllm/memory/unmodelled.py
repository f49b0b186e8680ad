"""Flags that change GPU memory in ways the memory model does not size: an estimate that ignored them would be a
number for a different start, so the model says "cannot predict" instead (as for an architecture it cannot size,
``vllm.architectures``).

* ``--enable-lora``: vLLM preallocates adapter slots (``--max-loras`` x ``--max-lora-rank`` per layer and target
  module, lora/layers, punica wrapper buffers) and profiles with dummy adapters loaded
  (v1/worker/lora_model_runner_mixin.py@0.11.0); none of it is in the budget terms.
* ``--speculative-config`` (and the older ``--speculative-model`` / ``--num-speculative-tokens``): a draft model's
  weights, activations and KV cache layers, or EAGLE/MTP heads, share the card and the KV budget
  (v1/spec_decode/). An ngram method loads no draft model, but the lookahead slots still change the scheduler's
  token budget; not modelled either. vLLM accepts it in more spellings than the JSON flag: dotted keys
  (``--speculative-config.method ngram``, ``=`` too; FlexibleArgumentParser folds every ``--x.k v`` into
  ``--x '{"k": v}'``, utils/__init__.py@0.11.0), the ``-sc`` alias (and ``-sc.method``, 0.19+), and 0.22+'s
  ``--spec-method`` / ``--spec-model`` / ``--spec-tokens``, which ``create_speculative_config`` merges into the same
  config (engine/arg_utils.py@0.34.0). ``--lora-modules`` alone does not enable LoRA (the engine's ``LoRAConfig``
  exists only with ``--enable-lora``), nor do ``--max-loras`` / ``--max-lora-rank`` without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.outcomes import Outcome

_TRUE = frozenset({"", "true", "1", "yes", "on"})
SPECULATIVE = ("speculative-config", "speculative-model", "num-speculative-tokens", "spec-method", "spec-model",
               "spec-tokens")
#: Base names (before the first ``.``) of dotted keys that FlexibleArgumentParser folds into ``--speculative-config``.
_DOTTED_SPECULATIVE = frozenset({"speculative-config", "sc"})
#: Outcomes vLLM reaches before any of that memory exists, so the flags cannot change them: config-time refusals, the
#: free-memory check in ``init_device`` (v1/worker/gpu_worker.py@0.10.2), and base weights that alone overflow the
#: card (adapters and a draft model load after them and only add memory).
DECIDED_BEFORE = frozenset({Outcome.MAX_LEN_EXCEEDS_MODEL, Outcome.DTYPE_UNSUPPORTED,
                            Outcome.FREE_MEMORY_BELOW_UTILIZATION, Outcome.OOM_LOADING_WEIGHTS})


class CannotPredict(UserError):
    """The start is valid for vLLM, but this model cannot size it: ``cannot predict <flag>: <why>``."""


def unmodelled(flags: Mapping[str, str], hidden: Sequence[str] = ()) -> str | None:
    """Why these canonical flags, or the arguments taken from variables (``ServerCommand.hidden``), make the estimate
    unknown, one line, or None."""
    if hidden:
        return (f"cannot predict {hidden[0]}: an argument taken from a variable may carry flags (Kubernetes expands "
                "$(VAR) in args, a shell expands and splits $VAR) that this tool does not read; write them out")
    lora = "enable-lora" in flags and str(flags["enable-lora"]).strip().lower() in _TRUE
    if lora and "no-enable-lora" not in flags:
        sizes = ", ".join(f"--{k} {flags[k]}" for k in ("max-loras", "max-lora-rank", "max-cpu-loras") if k in flags)
        return (f"cannot predict --enable-lora{f' ({sizes})' if sizes else ''}: LoRA's adapter slots and punica "
                "buffers (max-loras x max-lora-rank per layer and target module) take GPU memory the memory model "
                "does not size")
    spelled = [f"--{k}" for k in SPECULATIVE if str(flags.get(k) or "").strip().lower() not in ("", "null")]
    spelled += [f"-{k}" if k.startswith("sc.") else f"--{k}" for k in flags
                if "." in k and k.partition(".")[0].replace("_", "-") in _DOTTED_SPECULATIVE]
    if spelled:
        return (f"cannot predict {spelled[0]}: speculative decoding's draft model or heads (weights, activations, "
                "their KV cache layers) take GPU memory the memory model does not size")
    return None
