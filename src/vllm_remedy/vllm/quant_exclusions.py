"""Which linear layers a quantized checkpoint leaves unquantized (or packs at other bits), read per release as vLLM's
config classes read their skip lists, so the weight sizing prices those layers at the model dtype.

Apart from ``quant_config`` because this is a per-module walk over the model's layer names, where that module reads
single keys. The rules, each with the release it starts from (PyPI wheels, model_executor/layers/quantization/):

- AWQ ``modules_to_not_convert`` (substring of the layer's name), read from 0.6.4 (awq.py / awq_marlin.py@0.6.4;
  absent @0.6.3): 0.6.4-0.11.x test the fused layer's own name (``is_layer_skipped_awq``, awq.py@0.10.0 l.120);
  0.12.0-0.23.x each shard of a fused layer (``is_layer_skipped(..., skip_with_substr=True)``,
  utils/quant_utils.py@0.12.0, which raises when shards disagree); from 0.24.0 the fused name first, then the shards
  (``match_mode="substring"``, auto_awq.py@0.24.0 l.290, quant_utils.py@0.24.0).
- fp8 ``ignored_layers`` (exact names), every release: the shards of a fused layer (quant_utils.py@0.5.5
  ``is_layer_skipped``, raising when they disagree), from 0.24.0 the fused name first; from 0.11.0
  ``modules_to_not_convert`` stands in when ``ignored_layers`` is empty (``Fp8Config.from_config``, fp8.py@0.11.0,
  @0.30.0 l.163-169).
- compressed-tensors ``ignore`` (exact names or ``re:`` patterns, ``re.match``), every release: the shards of a fused
  layer (``should_ignore_layer``, compressed_tensors/utils.py@0.5.5, raising when they disagree), from 0.30.0 the fused
  name first (``find_matching_patterns``, utils/config_utils.py@0.30.0).
- GPTQ ``dynamic`` (GPTQModel), from 0.7.3 (gptq.py / gptq_marlin.py@0.7.3; absent @0.7.2): the first pattern that
  ``re.match``-es the layer's vLLM name decides; a "-:" one leaves it unquantized, any other overrides ``bits`` /
  ``group_size`` (``get_dynamic_override`` and ``override_config``, utils/gptq_utils.py@0.7.3, @0.30.0 l.184-190).

The layer names are vLLM's (``model.layers.N.self_attn.qkv_proj`` ...) for the architectures listed in
``_LAYOUTS`` only; a multimodal wrapper's language model has moved between ``language_model.model`` and
``model.language_model`` across releases, so both are tried and a rule they answer differently is not predicted.
Routed experts (FusedMoE has its own skip rules per method and release) are not walked: a rule reaching them is
"cannot predict", as is any rule on an architecture whose names are not listed, unless it names only the LM head or
the vision tower (both sized 16-bit already).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Version = tuple[int, int, int]

#: Keys any method lists left-out modules under (ModelOpt ``exclude_modules``, bitsandbytes ``llm_int8_skip_modules``).
SKIP_KEYS = ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules", "llm_int8_skip_modules",
             "dynamic")
_FUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}
# Language-model layer prefixes per architecture (vLLM's module names), text models first.
_TEXT = ("model.layers",)
_WRAPPED = ("language_model.model.layers", "model.language_model.layers")
_LAYOUTS: dict[str, tuple[str, ...]] = {
    **{a: _TEXT for a in ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                          "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM")},
    "LlavaForConditionalGeneration": _WRAPPED,
}
# Entries that can only name the LM head or the vision tower, both sized 16-bit whatever the method does.
_HARMLESS = re.compile(r"^(re:)?[\^.*]*(lm_head|vision_tower|visual|vision_model|multi_modal_projector|mm_projector)"
                       r"[$.*]*$")


@dataclass(frozen=True)
class Split:
    """What one release does with the checkpoint's linear layers: parameters left unquantized (sized at the model
    dtype), parameters packed at other bits ``(params, bits, group_size)``, or why it cannot be predicted."""

    unquantized: float = 0.0
    overrides: tuple[tuple[float, int, int | None], ...] = ()
    problem: str | None = None


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
    shared_expert_intermediate: int = 0


@dataclass(frozen=True)
class _Module:
    suffix: str  # after "<prefix>.N."
    params: float


def _modules(shape: Shape, layer: int) -> list[_Module]:
    q = shape.hidden * shape.heads * shape.head_dim
    kv = shape.hidden * shape.kv_heads * shape.head_dim
    mods = [_Module("self_attn.qkv_proj", q + 2 * kv), _Module("self_attn.o_proj", q)]
    if layer in shape.moe_layers:
        mods.append(_Module("mlp.experts", 0.0))  # checked, never sized here
        if shape.shared_expert_intermediate:
            inter = shape.shared_expert_intermediate
            mods += [_Module("mlp.shared_expert.gate_up_proj", 2 * shape.hidden * inter),
                     _Module("mlp.shared_expert.down_proj", shape.hidden * inter)]
    else:
        mods += [_Module("mlp.gate_up_proj", 2 * shape.hidden * shape.intermediate),
                 _Module("mlp.down_proj", shape.hidden * shape.intermediate)]
    return mods


Match = Callable[[str], bool]  # whether the rule list names this (fused or shard) layer


def _fused_decision(name: str, match: Match, fused_first: bool, shards: bool) -> bool | None:
    """The skip decision for one layer as ``is_layer_skipped`` / ``should_ignore_layer`` take it; None where vLLM
    raises (shards of one fused layer disagree)."""
    proj = name.rsplit(".", 1)[-1]
    if proj not in _FUSED or not shards:
        return match(name)
    if fused_first and match(name):
        return True
    said = {match(name[: -len(proj)] + shard) for shard in _FUSED[proj]}
    return said.pop() if len(said) == 1 else None


def _walk(shape: Shape, prefixes: Sequence[str], decide: Callable[[str], Any], what: str) -> Split:
    """Apply ``decide`` (a layer name -> True skip / False keep / (bits, group) / None vLLM raises) to every layer
    under every prefix variant; ``what`` names the rule in a problem."""
    unquantized = 0.0
    overrides: dict[tuple[int, int | None], float] = {}
    for layer in range(shape.layers):
        for mod in _modules(shape, layer):
            answers = [decide(f"{p}.{layer}.{mod.suffix}") for p in prefixes]
            said = {repr(a): a for a in answers}
            if len(said) > 1:
                return Split(problem=f"{what} names {mod.suffix} differently as the release names the language "
                                     "model (language_model.model vs model.language_model)")
            got = next(iter(said.values()))
            if got is None:
                return Split(problem=f"{what} leaves some shards of {prefixes[0]}.{layer}.{mod.suffix} quantized and "
                                     "others not, which vLLM refuses (ValueError) at load")
            if mod.suffix == "mlp.experts":
                if got is not False:
                    return Split(problem=f"{what} reaches the routed experts ({prefixes[0]}.{layer}.mlp.experts), "
                                         "whose skip rules per method and release are not modelled")
                continue
            if got is True:
                unquantized += mod.params
            elif isinstance(got, tuple):
                overrides[got] = overrides.get(got, 0.0) + mod.params
    return Split(unquantized, tuple((p, b, g) for (b, g), p in overrides.items()))


class _Unreadable(Exception):
    """A skip list vLLM would not read as a list of names (or a pattern ``re`` refuses): "cannot predict"."""


def _entries(qc: Mapping[str, Any], key: str) -> list[str] | None:
    """The names listed under ``key``; None when absent, null or empty. Any other value (a string, an object) is
    iterated or tested differently per class (a string's letters as names, ``in`` on a dict), not read here."""
    raw = qc.get(key)
    if raw is None or raw == [] or raw == {}:
        return None
    if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
        raise _Unreadable(f"quantization_config.{key} {raw!r:.60} is not a list of module names")
    return list(raw)


def _unknown(names: Sequence[str], why: str) -> Split | None:
    """"cannot predict" unless every entry names only the LM head or the vision tower."""
    odd = [n for n in names if not _HARMLESS.match(n)]
    if not odd:
        return None
    return Split(problem=f"quantization_config excludes modules {odd[:4]}{' ...' if len(odd) > 4 else ''}: {why}")


def _re_match(pattern: str, name: str) -> bool:
    try:
        return re.match(pattern, name) is not None
    except re.error as err:  # vLLM's re.match raises the same while it builds the layer: a crash, not modelled
        raise _Unreadable(f"quantization_config pattern {pattern!r} is no regular expression ({err})") from err


def read(qc: Mapping[str, Any] | None, method: str | None, shape: Shape | None) -> Exclusions | None:
    """The checkpoint's exclusions per release, or None when it states none (or the method packs experts only)."""
    try:
        return _read(qc, method, shape)
    except _Unreadable as err:
        return Exclusions((((0, 0, 0), Split(problem=str(err))),))


def _read(qc: Mapping[str, Any] | None, method: str | None, shape: Shape | None) -> Exclusions | None:
    if qc is None or not method or method == "mxfp4":
        return None
    prefixes = _LAYOUTS.get(shape.architecture) if shape is not None else None
    not_walked = "this tool does not know the architecture's layer names in vLLM"
    if method in ("awq", "awq_marlin"):
        names = _entries(qc, "modules_to_not_convert")
        if names is None:
            return None
        if prefixes is None or shape is None:
            return _single((0, 6, 4), _unknown(names, not_walked))
        what = f"modules_to_not_convert {names}"

        def sub(n: str) -> bool:
            return any(e in n for e in names)
        return Exclusions(tuple((since, _walk(shape, prefixes, lambda n, f=ff, s=sh: _fused_decision(n, sub, f, s),
                                              what))
                                for since, ff, sh in (((0, 6, 4), False, False), ((0, 12, 0), False, True),
                                                      ((0, 24, 0), True, True))))
    if method == "fp8":
        ignored, mtnc = _entries(qc, "ignored_layers"), _entries(qc, "modules_to_not_convert")
        eras = []
        for since, names in (((0, 0, 0), ignored), ((0, 11, 0), ignored or mtnc)):
            if names is None:
                eras.append((since, Split()))
                continue
            if prefixes is None or shape is None:
                eras.append((since, _unknown(names, not_walked) or Split()))
                continue
            what = f"ignored_layers / modules_to_not_convert {names}"
            if any("experts" in n for n in names) and shape.moe_layers:
                eras.append((since, Split(problem=f"{what} names experts, whose exact-name rule is not modelled")))
                continue
            for sub_since, ff in ((since, False), (max(since, (0, 24, 0)), True)):
                split = _walk(shape, prefixes, lambda n, f=ff, ns=names: _fused_decision(n, lambda x: x in ns, f, True),
                              what)
                eras.append((sub_since, split))
        eras.sort(key=lambda e: e[0])
        return Exclusions(tuple(eras)) if any(s != Split() for _, s in eras) else None
    if method == "compressed-tensors":
        names = _entries(qc, "ignore")
        if names is None:
            return None
        if prefixes is None or shape is None:
            return _single((0, 0, 0), _unknown(names, not_walked))

        def ct(n: str) -> bool:
            return any(_re_match(e[3:], n) if e.startswith("re:") else e == n for e in names)
        what = f"ignore {names}"
        return Exclusions(tuple((since, _walk(shape, prefixes, lambda n, f=ff: _fused_decision(n, ct, f, True),
                                              what))
                                for since, ff in (((0, 0, 0), False), ((0, 30, 0), True))))
    if method in ("gptq", "gptq_marlin"):
        return _gptq(qc, shape, prefixes)
    stated = [n for k in SKIP_KEYS if k != "dynamic" for n in (_entries(qc, k) or ())]  # dynamic: GPTQ's alone
    if not stated:
        return None
    return _single((0, 0, 0), _unknown(stated, f"which {method} layers vLLM then leaves unquantized is not modelled"))


def _single(since: Version, split: Split | None) -> Exclusions | None:
    return None if split is None else Exclusions(((since, split),))


def _gptq(qc: Mapping[str, Any], shape: Shape | None, prefixes: tuple[str, ...] | None) -> Exclusions | None:
    dynamic = qc.get("dynamic")
    if dynamic is None or dynamic == {}:
        return None
    if not isinstance(dynamic, Mapping):  # GPTQModel writes an object; ``.items()`` on anything else raises
        raise _Unreadable(f"quantization_config.dynamic {dynamic!r:.60} is not an object of rules")
    if prefixes is None or shape is None:
        return _single((0, 7, 3), _unknown(list(map(str, dynamic)), "this tool does not know the architecture's "
                                                                    "layer names in vLLM"))
    base_bits, base_group = qc.get("bits"), qc.get("group_size")
    problem: list[str] = []

    def decide(name: str) -> bool | tuple[int, int | None]:
        for pattern, over in dynamic.items():
            text = str(pattern)
            if text.startswith("-:"):
                if _re_match(text[2:], name):
                    return True
            elif _re_match(text.removeprefix("+:"), name):
                over = over if isinstance(over, Mapping) else {}
                extra = sorted(set(over) - {"bits", "group_size", "desc_act", "sym"})
                bits, group = over.get("bits", base_bits), over.get("group_size", base_group)
                if extra or not isinstance(bits, int) or bits not in (4, 8) or not isinstance(group, int):
                    problem.append(f"dynamic rule {text!r} overrides {dict(over)}")
                return False if (bits, group) == (base_bits, base_group) else (bits, None if group == -1 else group)
        return False
    split = _walk(shape, prefixes, decide, f"dynamic {list(map(str, dynamic))}")
    if problem and split.problem is None:
        split = Split(problem=f"quantization_config {problem[0]}: per-layer kernels for these bits / keys are not "
                              "modelled")
    return Exclusions((((0, 7, 3), split),))


def moe_layer_set(text: Mapping[str, Any], layers: int, experts: int) -> frozenset[int]:
    """The layers with routed experts (Qwen-MoE's ``mlp_only_layers`` / ``decoder_sparse_step``), as
    ``shapes.moe_layers`` counts them."""
    if not experts:
        return frozenset()
    dense = {int(i) for i in text.get("mlp_only_layers") or ()}
    step = int(text.get("decoder_sparse_step") or 1)
    return frozenset(i for i in range(layers) if i not in dense and (i + 1) % step == 0)


def described(split: Split) -> Iterator[str]:
    """Short words for the estimate's notes."""
    if split.unquantized:
        yield f"{split.unquantized / 1e9:.2f}B parameters left unquantized by quantization_config"
    for params, bits, _ in split.overrides:
        yield f"{params / 1e9:.2f}B parameters packed at {bits} bits by a dynamic rule"


def from_text(text: Mapping[str, Any], architecture: str, layers: int, hidden: int, heads: int, kv_heads: int,
              head_dim: int, intermediate: int, experts: int, qc: Mapping[str, Any] | None,
              method: str | None) -> Exclusions | None:
    """``read`` for a config.json's language model (``ModelSpec.from_hf_config``)."""
    if qc is None or not any(qc.get(k) for k in SKIP_KEYS):
        return None
    shape = Shape(architecture, layers, hidden, heads, kv_heads, head_dim, intermediate,
                  moe_layer_set(text, layers, experts), int(text.get("shared_expert_intermediate_size") or 0))
    return read(qc, method, shape)
