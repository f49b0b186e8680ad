"""Routed experts under a skip list, for the methods whose FusedMoE path vLLM reads it the same way on every card:
fp8 ``ignored_layers`` (``modules_to_not_convert`` from 0.10.1), compressed-tensors ``ignore``, and AWQ's
``modules_to_not_convert`` from 0.20.0.

What vLLM does with a layer's FusedMoE (``model.layers.N.mlp.experts``; Mixtral's ``block_sparse_moe.experts``):
- fp8: through 0.10.x ``Fp8Config.get_quant_method`` gives every FusedMoE ``Fp8MoEMethod`` (fp8.py@0.5.5, @0.10.2);
  from 0.11.0 it returns ``UnquantizedFusedMoEMethod`` when ``is_layer_skipped`` says so (fp8.py@0.11.0 l.196-200,
  @0.30.0), whose branch for a name holding "experts" skips the whole layer's experts as soon as one listed name
  holding "experts" contains that prefix (quant_utils.py@0.11.0 l.295-299, @0.30.0 l.677-681);
- compressed-tensors: through 0.11.x ``CompressedTensorsMoEMethod.get_moe_method`` never reads ``ignore``
  (compressed_tensors_moe.py@0.10.2, @0.11.0); from 0.12.0 it asks ``get_scheme_dict`` for expert 0's
  ``gate_proj``, ``up_proj`` and ``down_proj`` (those names, whatever the checkpoint calls them) and returns
  ``UnquantizedFusedMoEMethod`` when ``should_ignore_layer`` matches all three, raises ("All MoE projections need
  to have same quantization scheme") when only some match (compressed_tensors_moe.py@0.12.0 l.8-27, @0.30.0).
- AWQ ``modules_to_not_convert`` (AutoAWQ skips a module whose name contains an entry, and vLLM tests the same way):
  from 0.20.0 every AWQ path returns ``UnquantizedFusedMoEMethod`` for a FusedMoE prefix containing an entry
  (awq_marlin.py@0.20.0 ``is_layer_skipped(..., skip_with_substr=True)`` before any kernel choice; plain awq.py@0.20.0
  hands the layer to moe_wna16 or to an AWQMarlinConfig carrying the list; moe_wna16.py@0.20.0 l.4-7; one check
  in auto_awq.py@0.24.0 l.334-340, @0.30.0). Before 0.20.0 the path hangs on the card: awq_marlin skips from
  0.10.2 (awq_marlin.py@0.10.2) and quantizes before, plain AWQ's moe_wna16 returned ``UnquantizedLinearMethod``
  for a FusedMoE (moe_wna16.py@0.12.0 l.4-5), which FusedMoE's type assert refuses; a release-wide ``Split`` does
  not receive the card, so a list reaching the experts there is "cannot predict".
What the checkpoint stores: the list names the modules its quantizer left alone; a layer's experts are 16-bit when
it names the container or every expert's modules, quantized when it names none. A layer whose experts the list
names only in part, or that vLLM reads otherwise than the checkpoint stores (16-bit experts into packed parameters,
a Mixtral list naming ``w1`` / ``w2`` / ``w3`` that compressed-tensors' fixed names never match), is "cannot
predict". 16-bit experts are sized at the model dtype (``Split.unquantized``).

GPTQ is not judged here: gptq_marlin leaves a FusedMoE a ``dynamic`` "-:" rule matches unquantized
(gptq_marlin.py@0.9.2 l.48-53) while the other GPTQ paths (moe_wna16) do not read ``dynamic``: a card question too.
"""

from __future__ import annotations

from collections.abc import Callable

from vllm_remedy.vllm.quant_layers import Layout, Shape, Version

FP8_EXPERTS_SINCE: Version = (0, 11, 0)
CT_EXPERTS_SINCE: Version = (0, 12, 0)
AWQ_EXPERTS_SINCE: Version = (0, 20, 0)
AWQ_BY_CARD = ("vLLM's AWQ MoE path hangs on the card before 0.20.0 (awq_marlin leaves listed experts 16-bit from "
               "0.10.2, plain AWQ's moe_wna16 hands a FusedMoE a linear method), which this estimate does not know")
_CT_NAMES = ("gate_proj", "up_proj", "down_proj")  # get_moe_method's fixed names for expert 0

Listed = Callable[[str], bool]  # whether the skip list names this checkpoint module


def fp8_rule(entries: list[str]) -> Callable[[str], bool | None]:
    """fp8's decision for a FusedMoE prefix from 0.11.0: is_layer_skipped's "experts" branch."""
    return lambda container: any(container in e for e in entries if "experts" in e)


def ct_rule(listed: Listed) -> Callable[[str], bool | None]:
    """compressed-tensors' decision from 0.12.0: expert 0's three fixed names all ignored, none, or a ValueError."""
    def decide(container: str) -> bool | None:
        said = {listed(f"{container}.0.{name}") for name in _CT_NAMES}
        return said.pop() if len(said) == 1 else None
    return decide


def experts(shape: Shape, layout: Layout, listed: Listed, rule: Callable[[str], bool | None], reads: bool,
            what: str, unread: str | None = None) -> float | str:
    """Expert parameters this release leaves 16-bit, or why it cannot be predicted. ``listed``: the checkpoint's
    list; ``rule``: vLLM's decision for a FusedMoE prefix, read only when ``reads`` (the release's MoE path reads
    the list at all); ``unread``: why a release that does not is not predicted either way (its paths differ)."""
    total = 0.0
    for n in sorted(shape.moe_layers):
        container = f"model.layers.{n}.{layout.moe_block}.experts"
        hits = {listed(f"{container}.{e}.{s}") for e in range(shape.experts) for s in layout.expert_shards}
        stored = True if listed(container) or hits == {True} else (False if hits == {False} else None)
        if stored is None:
            return f"{what} names some of {container}'s modules and not others, which one FusedMoE cannot hold"
        if not reads and unread is not None and (stored or rule(container)):
            return f"{what} reaches {container}: {unread}"
        said = rule(container) if reads else False
        if said is None:
            return (f"{what} ignores only some of {container}.0's gate_proj / up_proj / down_proj: vLLM raises "
                    "(All MoE projections need to have same quantization scheme)")
        if said != stored:
            how = ("quantizes {}, which the checkpoint stores 16-bit" if stored else
                   "leaves {} 16-bit, which the checkpoint stores quantized")
            return f"with {what} vLLM {how.format(container)}: a load this tool does not size"
        if said:
            total += shape.expert_params()
    return total
