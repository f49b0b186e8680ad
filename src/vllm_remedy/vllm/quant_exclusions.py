"""Which linear layers a quantized checkpoint leaves unquantized (or packs at other bits), read per release as vLLM's
config classes read their skip lists, so the weight sizing prices those layers at the model dtype.

Apart from ``quant_config`` because this is a per-module walk over the model's layer names, where that module reads
single keys. The rules, each with the release it starts from (PyPI wheels, model_executor/layers/quantization/):

- AWQ ``modules_to_not_convert`` (substring of the layer's name), read from 0.6.4 (awq.py / awq_marlin.py@0.6.4;
  absent @0.6.3): 0.6.4-0.11.x test the fused layer's own name (``is_layer_skipped_awq``, awq.py@0.10.0 l.120);
  0.12.0-0.23.x each shard of a fused layer (``is_layer_skipped(..., skip_with_substr=True)``,
  utils/quant_utils.py@0.12.0, which raises when shards disagree); from 0.24.0 the fused name first, then the shards
  (``match_mode="substring"``, auto_awq.py@0.24.0 l.290, quant_utils.py@0.24.0). Before 0.6.4 a list that leaves
  a layer out is "cannot predict" (``quant_layers.unread_before``: vLLM packs it, the checkpoint stores it 16-bit).
- fp8 ``ignored_layers`` (exact names), every release: the shards of a fused layer (quant_utils.py@0.5.5
  ``is_layer_skipped``, raising when they disagree), from 0.24.0 the fused name first; from 0.10.1
  ``modules_to_not_convert`` stands in when ``ignored_layers`` is empty (``Fp8Config.from_config``, fp8.py@0.10.1
  l.128-131, @0.10.2 l.132-135, @0.30.0 l.163-169; absent @0.10.0, which reads ``ignored_layers`` alone).
- compressed-tensors ``ignore`` (exact names or ``re:`` patterns, ``re.match``), every release: the shards of a fused
  layer (``should_ignore_layer``, compressed_tensors/utils.py@0.5.5, raising when they disagree), from 0.30.0 the fused
  name first (``find_matching_patterns``, utils/config_utils.py@0.30.0).
- GPTQ ``dynamic`` (GPTQModel), from 0.7.3 (gptq.py / gptq_marlin.py@0.7.3; absent @0.7.2): the first pattern that
  ``re.match``-es the layer's vLLM name decides; a "-:" one leaves it unquantized, any other overrides ``bits`` /
  ``group_size`` (``get_dynamic_override`` and ``override_config``, utils/gptq_utils.py@0.7.3, @0.30.0 l.184-190).
  Before 0.7.3 rules that change a layer are "cannot predict" (``quant_layers.unread_before``), as for AWQ before 0.6.4.
- GPTQ ``modules_in_block_to_quantize``, from 0.11.0 (gptq.py / gptq_marlin.py@0.11.0, auto_gptq.py@0.22.0 to
  @0.34.0; absent @0.10.2): an allow-list. ``maybe_update_config`` flattens a list of lists (gptq.py@0.11.0
  l.155-166, auto_gptq.py@0.30.0 l.276-290) and ``is_layer_gptq_quantized`` (utils/gptq_utils.py@0.11.0 l.75-111,
  @0.30.0 l.120-164, @0.34.0) quantizes a layer only when an entry is a substring of its name, a fused layer by its
  shards (``packed_modules_mapping``; ValueError when they disagree); any other linear layer is
  ``UnquantizedLinearMethod``. ``dynamic`` then applies to the listed ones. The model mappers these architectures
  hand the config from 0.26.0 hold stacked maps only, dropped there (``get_unstacked_mapper`` @0.26.0,
  ``get_rename_mapper`` @0.29.0), so the names are not rewritten. An absent or empty list is filled from the
  safetensors header's dtypes (not read here: sized all-quantized).

- ModelOpt ``exclude_modules`` (``ignore`` in a config.json section): ``quant_modelopt_skip``, which checks each
  release's rule against what the checkpoint stores, routed experts included.

The names tested are the ``prefix`` vLLM gives each linear layer (``model.layers.N.self_attn.qkv_proj`` ...), for the
architectures in ``_LAYOUTS`` only, from the release their model file passes those prefixes (qwen2.py@0.6.3 passes
none: every layer's name is "" there, which a substring or an exact name never matches). Routed experts (FusedMoE
has its own skip rules per method and release) are judged by ``quant_moe_skip`` for fp8 and compressed-tensors; an
AWQ or GPTQ rule reaching them is "cannot predict", as is any rule on an architecture not listed, unless it names
only the LM head or the vision tower (sized 16-bit already).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm import quant_modelopt_skip, quant_moe_skip
from vllm_remedy.vllm.quant_layers import FUSED as _FUSED
from vllm_remedy.vllm.quant_layers import HARMLESS as _HARMLESS
from vllm_remedy.vllm.quant_layers import LAYOUTS as _LAYOUTS
from vllm_remedy.vllm.quant_layers import Exclusions, Layout, Shape, Split, Version, moe_layer_set, unread_before

__all__ = ["SKIP_KEYS", "Exclusions", "Shape", "Split", "from_text", "moe_layer_set", "read"]

#: Keys any method lists left-out modules under (ModelOpt ``exclude_modules``, bitsandbytes ``llm_int8_skip_modules``).
SKIP_KEYS = ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules", "llm_int8_skip_modules",
             "dynamic", "modules_in_block_to_quantize")
_GPTQ_KEYS = ("dynamic", "modules_in_block_to_quantize")  # read by the GPTQ classes only
ALLOW_LIST_SINCE = (0, 11, 0)  # modules_in_block_to_quantize (gptq.py@0.11.0; absent @0.10.2)
DYNAMIC_SINCE = (0, 7, 3)  # GPTQ dynamic (gptq.py / gptq_marlin.py@0.7.3; absent @0.7.2)
FP8_FALLBACK_SINCE = (0, 10, 1)  # fp8 reads modules_to_not_convert (fp8.py@0.10.1 from_config; absent @0.10.0)


@dataclass(frozen=True)
class _Module:
    suffix: str  # after "<prefix>.N."
    params: float


def _modules(shape: Shape, layer: int, moe_block: str) -> list[_Module]:
    q = shape.hidden * shape.heads * shape.head_dim
    kv = shape.hidden * shape.kv_heads * shape.head_dim
    mods = [_Module("self_attn.qkv_proj", q + 2 * kv), _Module("self_attn.o_proj", q)]
    if layer in shape.moe_layers:
        mods.append(_Module(f"{moe_block}.experts", 0.0))  # checked, never sized here
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


Decide = Callable[[str], Any]  # a layer name -> True skip / False keep / (bits, group) / None (vLLM raises)


def _walk(shape: Shape, layout: Layout | None, decide: Decide, what: str, experts_known: bool = False) -> Split:
    """Apply ``decide`` to every linear layer by its vLLM name; ``layout`` None: the release names none ("").
    ``experts_known``: the routed experts are judged apart (``quant_moe_skip``), not here."""
    unquantized = 0.0
    overrides: dict[tuple[int, int | None], float] = {}
    for layer in range(shape.layers):
        for mod in _modules(shape, layer, layout.moe_block if layout else "mlp"):
            name = f"model.layers.{layer}.{mod.suffix}" if layout else ""
            got = decide(name)
            if got is None:
                return Split(problem=f"{what} leaves some shards of {name} quantized and others not, which vLLM "
                                     "refuses (ValueError) at load")
            if mod.suffix.endswith(".experts"):
                if got is not False and not experts_known:
                    return Split(problem=f"{what} reaches the routed experts ({name}), whose skip rules per method "
                                         "and release are not modelled")
                continue
            if got is True:
                unquantized += mod.params
            elif isinstance(got, tuple):
                overrides[got] = overrides.get(got, 0.0) + mod.params
    return Split(unquantized, tuple((p, b, g) for (b, g), p in overrides.items()))


Moe = Callable[[Version], "float | str"]  # routed experts left 16-bit at a release, or why not predicted


def _eras(shape: Shape, layout: Layout, rules: list[tuple[Version, Decide]], what: str,
          moe: tuple[tuple[Version, ...], Moe] | None = None) -> Exclusions | None:
    """``Split`` per release: at each release a rule or the naming changes, the rule then in force walked over the
    names the release gives (none before ``layout.named_since``), plus the routed experts ``moe`` judges (with the
    releases its rule changes at). None when no release leaves anything out."""
    bounds = sorted({since for since, _ in rules} | {layout.named_since} | set(moe[0] if moe else ()))
    eras = []
    for at in bounds:
        live = [decide for since, decide in rules if since <= at]
        if live:
            split = _walk(shape, layout if at >= layout.named_since else None, live[-1], what, moe is not None)
            if moe is not None and split.problem is None:
                got = moe[1](at)
                split = Split(problem=got) if isinstance(got, str) else Split(
                    split.unquantized + got, split.overrides)
            eras.append((at, split))
    return Exclusions(tuple(eras)) if any(split != Split() for _, split in eras) else None


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
    odd = list(dict.fromkeys(n for n in names if not _HARMLESS.match(n)))  # a name two keys list is said once
    if not odd:
        return None
    return Split(problem=f"quantization_config excludes modules {odd[:4]}{' ...' if len(odd) > 4 else ''}: {why}")


def _re_match(pattern: str, name: str) -> bool:
    try:
        return re.match(pattern, name) is not None
    except re.error as err:  # vLLM's re.match raises the same while it builds the layer: a crash, not modelled
        raise _Unreadable(f"quantization_config pattern {pattern!r} is no regular expression ({err})") from err


def read(qc: Mapping[str, Any] | None, method: str | None, shape: Shape) -> Exclusions | None:
    """The checkpoint's exclusions per release, or None when it states none (or the method packs experts only)."""
    try:
        return _read(qc, method, shape)
    except _Unreadable as err:
        return Exclusions((((0, 0, 0), Split(problem=str(err))),))


def _read(qc: Mapping[str, Any] | None, method: str | None, shape: Shape) -> Exclusions | None:
    if qc is None or not method or method == "mxfp4":
        return None
    layout = _LAYOUTS.get(shape.architecture)
    if method in ("gptq", "gptq_marlin"):
        return _gptq(qc, shape, layout)
    if method in ("awq", "awq_marlin"):
        names, first = _entries(qc, "modules_to_not_convert"), (0, 6, 4)
        lists: list[tuple[Version, list[str] | None]] = [(first, names)]
    elif method == "fp8":
        ignored, first = _entries(qc, "ignored_layers"), (0, 0, 0)
        lists = [(first, ignored), (FP8_FALLBACK_SINCE, ignored or _entries(qc, "modules_to_not_convert"))]
    elif method == "compressed-tensors":
        first = (0, 0, 0)
        lists = [(first, _entries(qc, "ignore"))]
    else:
        stated = [n for k in SKIP_KEYS if k not in _GPTQ_KEYS for n in (_entries(qc, k) or ())]  # GPTQ's alone
        return _single((0, 0, 0), _unknown(stated, f"which {method} layers vLLM then leaves unquantized is not "
                                                   "modelled")) if stated else None
    named = [n for _, names in lists for n in names or ()]
    if not named:
        return None
    awq = method in ("awq", "awq_marlin")
    if layout is None:  # before 0.6.4 AWQ ignores the list: a load not sized either (``quant_layers.unread_before``)
        return _single((0, 0, 0) if awq else first,
                       _unknown(named, "this tool does not know the architecture's layer names in vLLM"))
    every = sorted(set(named))
    what = f"quantization_config's skip list {every[:6]}{' ...' if len(every) > 6 else ''}"
    moe = _moe(method, lists, shape, layout, what) if shape.moe_layers and shape.experts else None
    found = _eras(shape, layout, _rules(method, lists), what, moe)
    return unread_before(first, found, "quantization_config.modules_to_not_convert") if awq else found


def _moe(method: str, lists: list[tuple[Version, list[str] | None]], shape: Shape, layout: Layout,
         what: str) -> tuple[tuple[Version, ...], Moe] | None:
    """The routed experts' judge for fp8, compressed-tensors and AWQ (``quant_moe_skip``); None for GPTQ."""
    def names_at(v: Version) -> list[str]:
        return next((names or [] for since, names in reversed(lists) if since <= v), [])

    if method == "fp8":
        stored = {n for _, names in lists for n in names or ()}.__contains__  # both keys: what the checkpoint says

        def fp8(v: Version) -> float | str:
            return quant_moe_skip.experts(shape, layout, stored, quant_moe_skip.fp8_rule(names_at(v)),
                                          v >= quant_moe_skip.FP8_EXPERTS_SINCE, what)
        return (FP8_FALLBACK_SINCE, quant_moe_skip.FP8_EXPERTS_SINCE), fp8
    if method == "compressed-tensors":
        names = names_at((0, 0, 0))
        exact = {e for e in names if not e.startswith("re:")}
        patterns = [e[3:] for e in names if e.startswith("re:")]
        seen: dict[str, bool] = {}  # one answer per module name across releases (a layer's experts are many)

        def listed(n: str) -> bool:
            if n not in seen:
                seen[n] = n in exact or any(_re_match(p, n) for p in patterns)
            return seen[n]

        def ct(v: Version) -> float | str:
            return quant_moe_skip.experts(shape, layout, listed, quant_moe_skip.ct_rule(listed),
                                          v >= quant_moe_skip.CT_EXPERTS_SINCE, what)
        return (quant_moe_skip.CT_EXPERTS_SINCE,), ct
    if method in ("awq", "awq_marlin"):
        entries = names_at((0, 6, 4))

        def substring(n: str) -> bool:
            return any(e in n for e in entries)

        def awq(v: Version) -> float | str:
            return quant_moe_skip.experts(shape, layout, substring, substring, v >= quant_moe_skip.AWQ_EXPERTS_SINCE,
                                          what, quant_moe_skip.AWQ_BY_CARD)
        return (quant_moe_skip.AWQ_EXPERTS_SINCE,), awq
    return None


def _rules(method: str, lists: list[tuple[Version, list[str] | None]]) -> list[tuple[Version, Decide]]:
    """Each method's matcher per release (module docstring), over the names listed from each release on."""
    def names_at(v: Version) -> list[str]:
        return next((names or [] for since, names in reversed(lists) if since <= v), [])

    def fused(match: Callable[[str], bool], first: bool, shards: bool) -> Decide:
        return lambda n: _fused_decision(n, match, first, shards)

    if method in ("awq", "awq_marlin"):
        names = names_at((0, 6, 4))

        def sub(n: str) -> bool:
            return any(e in n for e in names)
        return [((0, 6, 4), fused(sub, False, False)), ((0, 12, 0), fused(sub, False, True)),
                ((0, 24, 0), fused(sub, True, True))]
    if method == "fp8":
        old, new = names_at((0, 0, 0)), names_at(FP8_FALLBACK_SINCE)
        return [((0, 0, 0), fused(lambda n: n in old, False, True)),
                (FP8_FALLBACK_SINCE, fused(lambda n: n in new, False, True)),
                ((0, 24, 0), fused(lambda n: n in new, True, True))]
    names = names_at((0, 0, 0))

    def ct(n: str) -> bool:
        return any(_re_match(e[3:], n) if e.startswith("re:") else e == n for e in names)
    return [((0, 0, 0), fused(ct, False, True)), ((0, 30, 0), fused(ct, True, True))]


def _single(since: Version, split: Split | None) -> Exclusions | None:
    return None if split is None else Exclusions(((since, split),))


def _gptq(qc: Mapping[str, Any], shape: Shape, layout: Layout | None) -> Exclusions | None:
    dynamic = qc.get("dynamic")
    if dynamic == {}:
        dynamic = None
    if dynamic is not None and not isinstance(dynamic, Mapping):  # GPTQModel writes an object; ``.items()`` raises
        raise _Unreadable(f"quantization_config.dynamic {dynamic!r:.60} is not an object of rules")
    allowed = _allow_list(qc)
    if dynamic is None and allowed is None:
        return None
    if layout is None:
        if allowed is not None:  # an allow-list leaves every unnamed layer 16-bit: no entry is harmless
            return _single(ALLOW_LIST_SINCE, Split(problem=f"quantization_config.modules_in_block_to_quantize "
                                                           f"{allowed[:4]}: this tool does not know the "
                                                           "architecture's layer names in vLLM"))
        return _single((0, 0, 0), _unknown(list(map(str, dynamic or {})), "this tool does not know the "
                                                                         "architecture's layer names in vLLM"))
    base_bits, base_group = qc.get("bits"), qc.get("group_size")
    problem: list[str] = []

    def by_dynamic(name: str) -> bool | tuple[int, int | None]:
        for pattern, over in (dynamic or {}).items():
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

    def listed(n: str) -> bool:
        return any(e in n for e in allowed or ())

    def with_allow_list(name: str) -> bool | tuple[int, int | None] | None:
        if name.endswith(".experts"):  # FusedMoE's own GPTQ method: whether it reads the list is not modelled
            return True
        quantized = _fused_decision(name, listed, False, True)  # shards always, never the fused name
        if quantized is None:
            return None
        return by_dynamic(name) if quantized else True

    keys = [k for k, v in (("dynamic", dynamic), ("modules_in_block_to_quantize", allowed)) if v is not None]
    what = " and ".join(f"quantization_config.{k}" for k in keys) + (f" {allowed[:4]}" if allowed else "")
    rules: list[tuple[Version, Decide]] = [(DYNAMIC_SINCE, by_dynamic)] if dynamic is not None else []
    if allowed is not None:
        rules.append((ALLOW_LIST_SINCE, with_allow_list))
    found = _eras(shape, layout, rules, what)
    if problem and found is not None:
        found = Exclusions(tuple((since, split if split.problem else Split(
            problem=f"quantization_config {problem[0]}: per-layer kernels for these bits / keys are not modelled"))
            for since, split in found.eras))
    if dynamic is None or found is None:
        return found
    # what the rules alone do where the release first names the layers (every layout names them before 0.11.0,
    # so the allow-list plays no part there): a layer they leave out or repack is stored so
    ruled = found.at(max(DYNAMIC_SINCE, layout.named_since))
    return unread_before(DYNAMIC_SINCE, found, "quantization_config.dynamic") if ruled not in (None, Split()) \
        else found


def _allow_list(qc: Mapping[str, Any]) -> list[str] | None:
    """``modules_in_block_to_quantize`` flattened as ``maybe_update_config`` does: a list of names, or of lists of
    names; None when absent or empty (vLLM then reads the safetensors header). A mixed or other value is flattened
    differently per release (``is_list_of`` checks the first item only @0.11.0; ``flatten_list`` @0.27.0)."""
    raw = qc.get("modules_in_block_to_quantize")
    if raw is None or raw == []:
        return None
    if isinstance(raw, list) and all(isinstance(e, str) for e in raw):
        return list(raw)
    nested = isinstance(raw, list) and all(isinstance(e, list) and all(isinstance(n, str) for n in e) for e in raw)
    if nested and (flat := [n for group in raw for n in group]):
        return flat
    raise _Unreadable(f"quantization_config.modules_in_block_to_quantize {raw!r:.60} is not a list of module names "
                      "(or of lists of them)")


def from_text(text: Mapping[str, Any], architecture: str, layers: int, hidden: int, heads: int, kv_heads: int,
              head_dim: int, intermediate: int, experts: int, qc: Mapping[str, Any] | None,
              method: str | None) -> Exclusions | None:
    """``read`` for a config.json's language model (``ModelSpec.from_hf_config``). A ModelOpt section goes to
    ``quant_modelopt_skip``, which reads its nested or flat list per release and the routed experts too."""
    if qc is None:
        return None
    moe_inter = (text.get("moe_intermediate_size") or intermediate) if experts else 0
    shape = Shape(architecture, layers, hidden, heads, kv_heads, head_dim, intermediate,
                  moe_layer_set(text, layers, experts), experts, int(moe_inter))
    if method and method.startswith("modelopt"):
        return quant_modelopt_skip.read(qc, method, shape)
    if not any(qc.get(k) for k in SKIP_KEYS):
        return None
    return read(qc, method, shape)
