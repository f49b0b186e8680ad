"""What a rehearsal pod's LoRA and speculative-decoding flags do to its start, in the simulator's own arithmetic.

The tools say "cannot predict" for these flags; a real vLLM starts such pods, so the rehearsal must too, or it could
never show a pod the tools refused to judge. Nothing here reads the tools' verdict (``vllm.memory.unmodelled``).

LoRA (``--enable-lora``): vLLM wraps every linear layer the model supports (and its embeddings and lm_head) and
allocates each wrapper's adapter stacks on the GPU inside ``load_model`` (v1/worker/gpu_model_runner.py@0.11.0,
under the same memory profiler as the weights), so they count in "Model loading took" and come out of the KV
budget like weights. Shapes from lora/layers@0.11.0 and @0.34.0: per wrapped linear slice ``lora_a``
(max_loras, rank, in) and ``lora_b`` (max_loras, out, rank) in the model's dtype (``--lora-dtype auto``), the
column-parallel outputs and row-parallel inputs split by TP; the embedding's ``lora_a`` (max_loras, vocab [+ 256
extra vocab before 0.16], rank) and ``lora_b`` (max_loras, hidden, rank); the lm_head's ``lora_a`` (max_loras,
rank, hidden) and ``lora_b`` (max_loras, vocab padded to 256, rank); before 0.16 both also keep (max_loras, 256,
hidden) extra-vocab embeddings. Fused-MoE experts are wrapped from 0.16 (lora/layers/fused_moe.py), one MLP's
stacks per expert. The punica wrapper's index tensors (lora/punica_wrapper/punica_base.py, LoRAKernelMeta) are a
few int64/int32 vectors of max-num-batched-tokens and max-num-seqs. The profile's dummy adapters are built on the
CPU (``create_dummy_lora`` uses device "cpu", lora/models.py@0.11.0) and copied into those stacks: nothing more.

Speculative decoding: an ngram (prompt lookup) proposer loads no model and allocates nothing on the GPU, so the
start is as without it. A draft model is resolved like the target (its config from the hub); one the world cannot
resolve fails as vLLM does, when ``SpeculativeConfig`` builds the draft's ``ModelConfig``; a plain draft model (not
EAGLE, Medusa, MLP speculator or MTP) is refused there by 0.11 (``NotImplementedError``, config/speculative.py@0.11.0)
and runs from 0.16 (v1/spec_decode/draft_model.py@0.16.0; the releases between were not read). A resolved draft adds
its weights and its attention layers' KV (``draft_layers``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from vllm_remedy.vllm.catalog import GIB, GpuSpec, ModelSpec
from vllm_remedy.vllm.memory import Resolved
from vllm_remedy.vllm.memory.weights import weights_gib

DEFAULT_MAX_LORAS = 1  # LoRAConfig.max_loras (config/lora.py@0.11.0)
DEFAULT_MAX_LORA_RANK = 16  # LoRAConfig.max_lora_rank
EXTRA_VOCAB = 256  # LoRAConfig.lora_extra_vocab_size, gone by 0.16.0
EXTRA_VOCAB_UNTIL = (0, 16, 0)
VOCAB_PADDING = 256  # get_lora_vocab_padding_size() on CUDA
MOE_LORA_SINCE = (0, 16, 0)  # lora/layers/fused_moe.py
_TRUE = frozenset({"", "true", "1", "yes", "on"})
#: Flags that name a speculative config: the JSON flag, its 0.19+ alias and 0.22+'s pieces of it.
SPECULATIVE_KEYS = ("speculative-config", "spec-method", "spec-model", "spec-tokens", "speculative-model",
                    "num-speculative-tokens")
_SPEC_PIECES = {"spec-method": "method", "spec-model": "model", "spec-tokens": "num_speculative_tokens",
                "speculative-model": "model", "num-speculative-tokens": "num_speculative_tokens"}
_NO_MODEL_METHODS = frozenset({"ngram", "[ngram]", "ngram_gpu", "suffix"})
PLAIN_DRAFT_REFUSED = ((0, 11, 0), (0, 16, 0))  # [from, until): V0 gone, draft_model.py not yet there
PLAIN_DRAFT_ERROR = ("NotImplementedError: Speculative decoding with draft model is not supported yet. Please consider "
                     "using other speculative decoding methods such as ngram, medusa, eagle, or mtp.")


@dataclass(frozen=True)
class LoraSlots:
    """The adapter slots ``--enable-lora`` preallocates."""

    max_loras: int
    rank: int
    fully_sharded: bool = False


def _base(key: str) -> str:
    return key.partition(".")[0].replace("_", "-")


def lora_slots(flags: Mapping[str, str]) -> LoraSlots | None:
    """The slots when the flags enable LoRA, else None (``--max-loras`` alone enables nothing)."""
    if str(flags.get("enable-lora", "false")).strip().lower() not in _TRUE:
        return None

    def count(key: str, default: int) -> int:
        try:
            return max(1, int(str(flags.get(key, default)).strip()))
        except ValueError:
            return default

    sharded = str(flags.get("fully-sharded-loras", "false")).strip().lower() in _TRUE
    return LoraSlots(count("max-loras", DEFAULT_MAX_LORAS), count("max-lora-rank", DEFAULT_MAX_LORA_RANK), sharded)


def speculative(flags: Mapping[str, str]) -> dict[str, object] | None:
    """The speculative config vLLM builds from every spelling (JSON, dotted keys, 0.22+ pieces), or None."""
    config: dict[str, object] = {}
    raw = str(flags.get("speculative-config") or "").strip()
    if raw and raw != "null":
        try:
            loaded = json.loads(raw)
        except json.JSONDecodeError:
            loaded = None
        if isinstance(loaded, dict):
            config.update(loaded)
    for key, value in flags.items():
        base, dot, rest = key.partition(".")
        if dot and _base(base) in ("speculative-config", "sc"):
            config[rest.replace("-", "_")] = value
    for key, field in _SPEC_PIECES.items():
        if str(flags.get(key) or "").strip():
            config.setdefault(field, flags[key])
    return config or None


def without(flags: Mapping[str, str]) -> dict[str, str]:
    """The flags the memory physics sees: LoRA and speculative decoding are sized here, not there."""
    return {k: v for k, v in flags.items()
            if k != "enable-lora" and k not in SPECULATIVE_KEYS and not ("." in k and _base(k) in ("speculative-config",
                                                                                                   "sc"))}


def draft_model(config: Mapping[str, object] | None) -> str | None:
    """The draft model a speculative config loads, None for a proposer that loads none (ngram)."""
    if not config:
        return None
    model = config.get("model")
    method = str(config.get("method") or "").strip().lower()
    if not model or str(model).strip().lower() == "[ngram]" or method in _NO_MODEL_METHODS:
        return None  # V0's `--speculative-model [ngram]` too
    return str(model)


def draft_refused(version: tuple[int, ...], draft_id: str, draft: ModelSpec) -> str | None:
    """vLLM's config error for a plain draft model in the releases that refuse one (method detection as in
    ``SpeculativeConfig.__post_init__``: eagle in the id, medusa / mlp_speculator / MTP model types)."""
    low, arch = draft_id.lower(), draft.architecture.lower()
    special = "eagle" in low or any(k in arch for k in ("medusa", "speculator", "mtp", "eagle"))
    start, until = PLAIN_DRAFT_REFUSED
    return PLAIN_DRAFT_ERROR if not special and start <= version < until else None


def _mlp(hidden: int, inter: int, rank: int) -> int:
    """Elements of one gated MLP's stacks: gate_up (2 slices) and down, TP already applied to ``inter``."""
    return rank * (2 * hidden + 2 * inter) + rank * (inter + hidden)


def lora_bytes(model: ModelSpec, res: Resolved, slots: LoraSlots, version: tuple[int, ...]) -> int:
    """Bytes one GPU holds for the adapter stacks and the punica metadata (module docstring)."""
    tp, r, hidden = max(1, res.tp), slots.rank, model.hidden_size
    a_rank = max(1, r // tp) if slots.fully_sharded else r
    q_out = model.num_heads * model.head_dim // tp
    kv_out = max(1, model.num_kv_heads // tp) * model.head_dim
    attention = a_rank * 3 * hidden + (q_out + 2 * kv_out) * r + r * q_out + hidden * r
    if model.is_moe:
        inter = (model.moe_intermediate_size or model.intermediate_size) // tp
        mlp = _mlp(hidden, inter, r) * model.num_experts if version >= MOE_LORA_SINCE else 0
    else:
        mlp = _mlp(hidden, model.intermediate_size // tp, r)
    extra = EXTRA_VOCAB if version < EXTRA_VOCAB_UNTIL else 0
    padded = math.ceil(model.vocab_size / VOCAB_PADDING) * VOCAB_PADDING
    embed = (model.vocab_size + extra) * r + hidden * r + extra * hidden
    head = r * hidden + padded * r + extra * hidden
    elements = slots.max_loras * (model.num_layers * (attention + mlp) + embed + head)
    tokens, seqs = res.mnbt, res.max_num_seqs
    punica = 8 * 5 * tokens + 4 * 2 * tokens + 8 * 3 * seqs + 4 * 2 * seqs
    return elements * res.weight_dtype_bytes + punica


def with_extra_weights(model: ModelSpec, gpu: GpuSpec, res: Resolved, quantization: str | None,
                       extra_bytes: float) -> ModelSpec:
    """The model as loaded, carrying ``extra_bytes`` more per GPU in its weights: the parameter count that adds them
    through the weight term's own widths (a secant: the term is linear in the parameters)."""
    if extra_bytes <= 0:
        return model
    base = weights_gib(model, res, quantization, gpu.capability)
    per_billion = weights_gib(replace(model, params_b=model.params_b + 1.0), res, quantization, gpu.capability) - base
    if per_billion <= 0:
        return model
    return replace(model, params_b=model.params_b + extra_bytes / GIB / per_billion)


def draft_layers(model: ModelSpec, draft: ModelSpec) -> int:
    """The draft's attention layers as target layers of the same KV bytes a token: they share the KV budget (the
    drafter's layers join the engine's KV cache config, v1/spec_decode/eagle.py and v1/worker/gpu_model_runner.py),
    and the draft's forward is captured in CUDA graphs with the target's."""
    per_target = max(1, model.num_kv_heads * model.head_dim)
    return math.ceil(draft.num_layers * draft.num_kv_heads * draft.head_dim / per_target)


def loaded(model: ModelSpec, draft: ModelSpec | None, gpu: GpuSpec, res: Resolved, quantization: str | None,
           flags: Mapping[str, str]) -> ModelSpec:
    """The model as this pod's vLLM holds it: with its LoRA stacks in the weights, and a draft model's weights and
    KV layers; the model itself when the flags add neither."""
    extra = 0.0
    if (slots := lora_slots(flags)) is not None:
        extra += lora_bytes(model, res, slots, res.rules.version)
    if draft is not None:
        extra += weights_gib(draft, res, None, gpu.capability) * GIB
        model = replace(model, num_layers=model.num_layers + draft_layers(model, draft))
    return with_extra_weights(model, gpu, res, quantization, extra)
