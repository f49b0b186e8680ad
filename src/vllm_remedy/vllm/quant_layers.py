"""The vocabulary the skip-list readers share: how an architecture's vLLM model names its decoder layers, the shapes
they are sized from, and what a release leaves unquantized (``Split`` per release: ``Exclusions``).

Apart from ``quant_exclusions`` (AWQ / GPTQ / fp8 / compressed-tensors lists) and ``quant_modelopt_skip`` (ModelOpt's
``exclude_modules``) so that both read the same layer names without importing each other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Version = tuple[int, int, int]
#: A fused vLLM layer and the checkpoint's shards it is loaded from (``packed_modules_mapping`` of llama.py, qwen2.py,
#: qwen3.py, qwen3_moe.py, mixtral.py@0.10.2-@0.34.0).
FUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


@dataclass(frozen=True)
class Layout:
    """How an architecture's vLLM model names its decoder layers' linear modules."""

    named_since: Version  # the first release whose model file passes each linear layer its full prefix
    moe_block: str = "mlp"  # the MoE block's attribute (its ``experts`` are FusedMoE, its ``gate`` the router)
    expert_shards: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")  # one expert's checkpoint modules
    gate_quantized_since: Version | None = None  # the release whose model builds the router with ``quant_config``


# model.layers.N.{self_attn.qkv_proj, self_attn.o_proj, mlp.gate_up_proj, mlp.down_proj}: llama.py@0.5.5-@0.34.0
# (MistralForCausalLM is llama.py's class), qwen2.py@0.6.4-@0.34.0 (Qwen3's MLP is Qwen2's), qwen3.py /
# qwen3_moe.py@0.8.5-@0.34.0, mixtral.py@0.5.5-@0.34.0 (block_sparse_moe.experts, experts.E.w1 / w3 / w2 in the
# checkpoint; its gate has quant_config=None). Qwen3-MoE's router ``gate`` is a ReplicatedLinear built with
# ``quant_config=None`` through 0.10.0, with the model's quant_config from 0.10.1 (qwen3_moe.py@0.10.1,
# @0.10.2 ``_maybe_ignore_quant_config``, which drops it for GPTQ only, @0.11.0-@0.34.0).
LAYOUTS: dict[str, Layout] = {
    "LlamaForCausalLM": Layout((0, 5, 5)),
    "MistralForCausalLM": Layout((0, 5, 5)),
    "Qwen2ForCausalLM": Layout((0, 6, 4)),
    "Qwen3ForCausalLM": Layout((0, 8, 5)),
    "Qwen3MoeForCausalLM": Layout((0, 8, 5), gate_quantized_since=(0, 10, 1)),
    "MixtralForCausalLM": Layout((0, 5, 5), "block_sparse_moe", ("w1", "w3", "w2")),
}
#: Entries that can only name the LM head or the vision tower, both sized 16-bit whatever the method does.
HARMLESS = re.compile(r"^(re:)?[\^.*]*(lm_head|vision_tower|visual|vision_model|multi_modal_projector|mm_projector)"
                      r"[$.*]*$")


@dataclass(frozen=True)
class Split:
    """What one release does with the checkpoint's linear layers: parameters left unquantized (sized at the model
    dtype), parameters packed at other bits ``(params, bits, group_size)``, or why it cannot be predicted."""

    unquantized: float = 0.0
    overrides: tuple[tuple[float, int, int | None], ...] = ()
    problem: str | None = None
    router_packed: bool = False  # the MoE router is a quantized layer here, stored packed (``weights.weights_gib``)


@dataclass(frozen=True)
class Exclusions:
    """``Split`` per release: ``eras`` ascending by the release each starts from; before the first, no rule."""

    eras: tuple[tuple[Version, Split], ...]

    def at(self, version: Version) -> Split | None:
        chosen = None
        for since, split in self.eras:
            if version >= since:
                chosen = split
        return chosen


@dataclass(frozen=True)
class Shape:
    """The language model's shapes the walk sizes layers from (``ModelSpec``'s fields)."""

    architecture: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    moe_layers: frozenset[int]
    experts: int = 0  # routed experts per MoE layer
    moe_intermediate: int = 0  # one expert's intermediate size

    def expert_params(self) -> float:
        """One MoE layer's routed experts: ``w13`` [E, 2 x moe_inter, hidden] and ``w2`` [E, hidden, moe_inter]."""
        return 3.0 * self.experts * self.hidden * self.moe_intermediate


def moe_layer_set(text: Mapping[str, Any], layers: int, experts: int) -> frozenset[int]:
    """The layers with routed experts (Qwen-MoE's ``mlp_only_layers`` / ``decoder_sparse_step``), as
    ``shapes.moe_layers`` counts them."""
    if not experts:
        return frozenset()
    dense = {int(i) for i in text.get("mlp_only_layers") or ()}
    step = int(text.get("decoder_sparse_step") or 1)
    return frozenset(i for i in range(layers) if i not in dense and (i + 1) % step == 0)


#: Each release before the first that reads the list builds every linear layer packed; the checkpoint's
#: ``<layer>.weight`` (16-bit) or its other-bits tensors meet no parameter of that name or shape: ``load_weights``
#: looks the name up with ``params_dict[name]`` (models/llama.py@0.6.3 l.395/412, @0.7.2 l.425/437; qwen2.py@0.7.2
#: l.398/412), a KeyError, or copies a tensor of another shape.
_UNREAD = ("vLLM before {since} ignores {what} (no such key in its {where}): it builds packed parameters for the "
           "layers the list leaves unquantized or packs at other bits, which the checkpoint stores otherwise, and the "
           "load fails on them (params_dict[name] in load_weights, llama.py@0.6.3), which this tool does not size")


def unread_before(first: Version, found: Exclusions | None, what: str) -> Exclusions | None:
    """``found`` (non-empty: a release that reads the list leaves a layer out or packs it differently, so the
    checkpoint stores that layer so) with the releases before ``first``, which never read it, refused as ``_UNREAD``
    (post hoc, from hostile review 14: those starts were sized all-quantized "fits"). AWQ's
    ``modules_to_not_convert`` from 0.6.4 (``grep`` finds it in awq.py / awq_marlin.py@0.6.4, in neither @0.6.3);
    GPTQ's ``dynamic`` from 0.7.3 (gptq.py / gptq_marlin.py@0.7.3, neither @0.7.2)."""
    if found is None:
        return None
    where = "awq.py / awq_marlin.py" if "modules_to_not_convert" in what else "gptq.py / gptq_marlin.py"
    problem = _UNREAD.format(since=".".join(map(str, first)), what=what, where=where)
    return Exclusions((((0, 0, 0), Split(problem=problem)), *found.eras))
