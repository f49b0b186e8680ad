"""ModelOpt's ``exclude_modules`` (``ignore`` in a config.json section from 0.12.0): which decoder layers each vLLM
release leaves unquantized, checked against what the checkpoint stores, so the weight sizing prices them at 16 bits
or says it cannot predict the load.

What the checkpoint stores: ModelOpt lists the module names (Hugging Face's) it left unquantized, and "P*" for a whole
tree of modules rooted at P ("the Nvidia ModelOpt library use just one wildcard pattern: module_path* It gets applied
if the whole tree of modules rooted at module_path is not quantized", ``apply_vllm_mapper``, modelopt.py@0.13.0,
@0.30.0 l.257-275); any other wildcard is read as ``fnmatch`` reads it.

What vLLM does, per release (``get_quant_method`` / ``is_layer_excluded`` of the class the overrides pick,
``modelopt_class``; ``P`` is the fused layer's vLLM name, ``model.layers.N.self_attn.qkv_proj``):
- before 0.10.0 ``ModelOptFp8Config`` quantizes every linear layer (no exclusion: modelopt.py@0.9.2 l.80-88);
  ``ModelOptNvFp4Config`` skips ``P`` listed as is (``is_layer_skipped`` without the fused mapping, so a fused layer
  only by its fused name, quant_utils.py@0.8.0) and, from 0.9.0, ``P`` a pattern fully matches ("." literal, "*" any
  text: ``re.fullmatch``, modelopt.py@0.9.0 l.230-236);
- 0.10.0-0.10.1: FP8 skips ``P`` containing an entry as a substring (modelopt.py@0.10.0 l.141-158); NVFP4 as in 0.9;
- 0.10.2: both also skip a fused layer whose checkpoint shards are all listed (``is_layer_skipped`` with the model's
  ``packed_modules_mapping``, raising when the shards disagree: modelopt.py@0.10.2 l.177-184, l.777-784);
- 0.11.0: FP8 as 0.10.2; NVFP4 matches patterns only when they hold "*" or "." (modelopt.py@0.11.0 l.160-185,
  l.790-808);
- from 0.12.0 one base class: the listed shards, then a substring, then ``fnmatch(P, entry)`` (modelopt.py@0.12.0
  l.115-151, @0.30.0 l.180-216); an excluded FusedMoE gets no method (l.161-164), which FusedMoE replaces with
  ``UnquantizedFusedMoEMethod`` (fused_moe/layer.py@0.12.0 l.582-597, routed_experts.py@0.30.0 l.185-201): 16-bit
  experts. Before 0.12.0 the MoE branch never consults the list (modelopt.py@0.10.0 l.169, @0.11.0 l.199), and a
  None would fail ``assert quant_method is not None`` (fused_moe/layer.py@0.11.0 l.1103-1106);
- 0.24.0: a fused layer listed by its fused name is skipped before the shards are compared (quant_utils.py@0.24.0);
- 0.26.0: these architectures carry an ``hf_to_vllm_mapper`` (llama.py, qwen2.py, qwen3.py, qwen3_moe.py,
  mixtral.py@0.26.0; none @0.24.0), so the loader calls ``apply_vllm_mapper`` (model_loader/utils.py@0.26.0
  l.305-310), which splits each "P*" (P not ending in ".") into "P" and "P.*" (modelopt.py@0.13.0 on).
Before any list: a release that cannot build the section at all is "cannot predict" too: a flat section before
0.10.0 (``from_config`` reads ``quantization`` only), a nested NVFP4 one before 0.10.0 (the FP8 class is built for
it), an MoE model before its class gives FusedMoE a method (``MOE_SINCE``).
A layer vLLM quantizes while the checkpoint stores it 16-bit (or the reverse), or whose shards vLLM finds split, is
"cannot predict": 16-bit tensors loaded into packed parameters (or packed ones into 16-bit) is a load this tool does
not size. A substring rule can reach further than the checkpoint meant ("model.layers.1" is in
"model.layers.10.mlp.down_proj"): that too is a mismatch, said as such.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import modelopt_class, quant_config
from vllm_remedy.vllm.quant_layers import FUSED, HARMLESS, LAYOUTS, Exclusions, Layout, Shape, Split, Version

FP8, NVFP4 = "modelopt", "modelopt_fp4"
FLAT_IGNORE_SINCE: Version = (0, 12, 0)  # a flat section's list is "ignore" (modelopt.py@0.12.0 from_config)
#: The first release whose class gives a FusedMoE a method (modelopt.py@0.10.0 l.169 ``ModelOptFp8MoEMethod``,
#: @0.9.0 ``ModelOptNvFp4FusedMoE``); before, ``get_quant_method`` returns None for it and FusedMoE's
#: ``assert quant_method is not None`` fails (fused_moe/layer.py@0.9.2 l.732-735, @0.8.5, @0.6.1).
MOE_SINCE: dict[str, Version] = {FP8: (0, 10, 0), NVFP4: (0, 9, 0)}
_BOUNDS: tuple[Version, ...] = ((0, 0, 0), (0, 9, 0), (0, 10, 0), (0, 10, 1), (0, 10, 2), (0, 11, 0), (0, 12, 0),
                                (0, 14, 0), (0, 16, 0), (0, 17, 0), (0, 22, 0), (0, 24, 0), (0, 26, 0))


class _Unreadable(Exception):
    """A list vLLM would not read as names (its ``isinstance(exclude_modules, list)`` check, fnmatch on a non-text)."""


def _names(raw: Any) -> list[str]:
    if raw is None or raw == []:
        return []
    if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
        raise _Unreadable(f"the ModelOpt exclude list {raw!r:.60} is not a list of module names (vLLM: "
                          "\"exclude_modules must be a list\" or a TypeError matching it)")
    return raw


def listed(qc: Mapping[str, Any], v: Version) -> list[str]:
    """The names release ``v`` reads from a ModelOpt section: ``quantization.exclude_modules`` when the section has a
    ``quantization`` key, else its own ``exclude_modules`` (0.10.0-0.11.x) or ``ignore`` (0.12.0 on)."""
    if isinstance(qc.get("quantization"), Mapping):
        return _names(qc["quantization"].get("exclude_modules"))
    if "quantization" in qc or v < (0, 10, 0):
        return []  # vLLM raises on the section itself (quant_config.modelopt_algo), not on the list
    return _names(qc.get("ignore" if v >= FLAT_IGNORE_SINCE else "exclude_modules"))


def stored(qc: Mapping[str, Any]) -> list[str]:
    """What the checkpoint lists as left unquantized, whichever release reads it: ModelOpt writes the nested
    ``exclude_modules`` (hf_quant_config.json) or, in a config.json section, ``ignore`` (or ``exclude_modules``)."""
    if isinstance(qc.get("quantization"), Mapping):
        return _names(qc["quantization"].get("exclude_modules"))
    return list(dict.fromkeys(_names(qc.get("ignore")) + _names(qc.get("exclude_modules"))))


@dataclass(frozen=True)
class _Stored:
    """What the checkpoint stores unquantized: exact names, trees ("P*"), other wildcards (``fnmatch``)."""

    names: frozenset[str]
    trees: tuple[str, ...]
    patterns: tuple[str, ...]

    @classmethod
    def of(cls, entries: Sequence[str]) -> _Stored:
        trees = tuple(e[:-1] for e in entries if e.endswith("*") and not any(c in e[:-1] for c in "*?[")
                      and not e.endswith(".*"))
        other = tuple(e for e in entries if any(c in e for c in "*?[") and e[:-1] not in trees)
        return cls(frozenset(e for e in entries if not any(c in e for c in "*?[")), trees, other)

    def which(self, name: str) -> str | None:
        """The entry that leaves ``name`` unquantized, or None."""
        if name in self.names:
            return name
        tree = next((t for t in self.trees if name == t or name.startswith(t + ".")), None)
        return tree + "*" if tree is not None else next((p for p in self.patterns if fnmatchcase(name, p)), None)


def _vllm_rule(cls: str, v: Version, entries: list[str]) -> Callable[[str], bool | None]:
    """``is_layer_excluded`` of class ``cls`` at release ``v``: True skip, False quantize, None vLLM raises."""
    if v >= (0, 26, 0):  # apply_vllm_mapper's split of "P*"
        entries = [x for e in entries for x in ((e[:-1], e[:-1] + ".*") if len(e) >= 2 and e[-1] == "*"
                                                  and e[-2] != "." else (e,))]
    names = set(entries)
    shards = v >= (0, 10, 2)

    def exact(p: str) -> bool | None:  # is_layer_skipped (quant_utils.py)
        proj = p.rsplit(".", 1)[-1]
        if not shards or proj not in FUSED:
            if v >= (0, 12, 0) and "experts" in p:  # its experts branch, reached from 0.12.0
                return any(p in e for e in entries if "experts" in e)
            return p in names
        if v >= (0, 24, 0) and p in names:
            return True
        said = {p[: -len(proj)] + s in names for s in FUSED[proj]}
        return said.pop() if len(said) == 1 else None

    def substring(p: str) -> bool:
        return any(e != p and e in p for e in entries)

    # ``re.fullmatch`` of each entry with "." escaped and "*" as ".*" (0.11.0: only entries holding "*" or "."): an
    # entry with no other regex character matches its own text alone
    read = [e for e in entries if v < (0, 11, 0) or "*" in e or "." in e]
    literal = {e for e in read if not any(c in e for c in "*?+[](){}|^$\\")}
    regexes = [re.compile(e.replace(".", r"\.").replace("*", ".*")) for e in read if e not in literal]
    globs = [e for e in entries if any(c in e for c in "*?[")]  # fnmatch of a text without them is equality

    def full(p: str) -> bool:
        return p in literal or any(r.fullmatch(p) is not None for r in regexes)

    def fnmatched(p: str) -> bool:
        return p in names or any(fnmatchcase(p, e) for e in globs)

    def rule(p: str) -> bool | None:
        if cls == FP8 and v < (0, 10, 0):
            return False
        if cls == FP8 and v < (0, 10, 2):
            return any(e in p for e in entries)
        first = exact(p)
        if first is not False:
            return first
        if v >= (0, 12, 0):
            return substring(p) or fnmatched(p)
        if cls == FP8:  # 0.10.2 tests the name itself too; 0.11.0 skips an entry equal to it
            return substring(p) if v >= (0, 11, 0) else any(e in p for e in entries)
        return v >= (0, 9, 0) and full(p)
    return rule


@dataclass(frozen=True)
class _Layer:
    name: str  # vLLM's prefix
    params: float  # sized here (0: sized elsewhere whatever is decided, the router)
    stored: tuple[str, ...]  # the checkpoint modules it is loaded from
    experts: bool = False


def _layers(shape: Shape, layout: Layout, v: Version) -> list[_Layer]:
    q = shape.hidden * shape.heads * shape.head_dim
    kv = shape.hidden * shape.kv_heads * shape.head_dim
    out = []
    for n in range(shape.layers):
        at = f"model.layers.{n}."
        out += [_Layer(at + "self_attn.qkv_proj", q + 2 * kv, tuple(at + f"self_attn.{s}" for s in FUSED["qkv_proj"])),
                _Layer(at + "self_attn.o_proj", q, (at + "self_attn.o_proj",))]
        if n in shape.moe_layers:
            block = at + layout.moe_block
            out.append(_Layer(block + ".experts", shape.expert_params(), tuple(
                f"{block}.experts.{e}.{s}" for e in range(shape.experts) for s in layout.expert_shards), True))
            if layout.gate_quantized_since is not None and v >= layout.gate_quantized_since:
                out.append(_Layer(block + ".gate", 0.0, (block + ".gate",)))
        else:
            mlp = at + "mlp."
            out += [_Layer(mlp + "gate_up_proj", 2 * shape.hidden * shape.intermediate,
                           tuple(mlp + s for s in FUSED["gate_up_proj"])),
                    _Layer(mlp + "down_proj", shape.hidden * shape.intermediate, (mlp + "down_proj",))]
    return out


#: The releases ``_vllm_rule`` (and the MoE branch) change at: a Split is worked out once per span.
_RULE_BOUNDS: tuple[Version, ...] = ((0, 0, 0), (0, 9, 0), (0, 10, 0), (0, 10, 2), (0, 11, 0), (0, 12, 0), (0, 24, 0),
                                     (0, 26, 0))


def _split(cls: str, v: Version, kept: list[str], entries: list[str], shape: Shape, layout: Layout,
           truths: dict[str, str | bool | None]) -> Split:
    """``kept``: the checkpoint's list; ``entries``: the list this release reads (``listed``); ``truths``: per vLLM
    layer, the checkpoint entry leaving all its modules unquantized, None (none), False (some only), kept across
    releases."""
    in_ckpt, rule = _Stored.of(kept), _vllm_rule(cls, v, entries)
    layers = _layers(shape, layout, v)
    where = f"vLLM's {'ModelOptFp8Config' if cls == FP8 else 'ModelOptNvFp4Config'} (this release)"
    unquantized, router_packed = 0.0, False
    for layer in layers:
        if layer.name not in truths:
            said_by = {in_ckpt.which(s) for s in layer.stored}
            truths[layer.name] = said_by.pop() if len(said_by) == 1 else (
                False if None in said_by else next(iter(said_by)))
        entry = truths[layer.name]
        if entry is False:
            return Split(problem=f"the checkpoint's exclude list {_few(kept)} leaves some of the modules "
                                 f"{layer.name} is loaded from unquantized and others not, which one vLLM layer "
                                 "cannot hold")
        said = rule(layer.name)
        if said is None:
            return Split(problem=f"{where} finds some shards of {layer.name} in the exclude list and others not: "
                                 "ValueError: Detected some but not all shards ... are quantized")
        if layer.experts and said and v < (0, 12, 0):
            said = False  # the MoE branch never reads the list before 0.12.0
        if said != (entry is not None):
            how = (f"quantizes {layer.name}, which the checkpoint stores unquantized ({entry!r})" if entry else
                   f"leaves {layer.name} unquantized by its list {_few(entries)}, which the checkpoint stores "
                   "quantized")
            return Split(problem=f"{where} {how}: a load of tensors of another width this tool does not size")
        if said:
            unquantized += layer.params
        elif layer.name.endswith(".gate"):
            router_packed = True  # built with the quant_config and stored packed: sized with the packed layers
    return Split(unquantized, router_packed=router_packed)


def _few(entries: Sequence[str]) -> str:
    return f"{list(entries[:4])}{' ...' if len(entries) > 4 else ''}"


def read(qc: Mapping[str, Any], method: str, shape: Shape) -> Exclusions | None:
    """The ModelOpt section's exclusions per release (module docstring), or None when the checkpoint lists nothing
    any release would leave unquantized or quantize against it."""
    facts = modelopt_class.facts(qc)
    algo = str(quant_config.modelopt_algo(qc) or "").upper()
    layout = LAYOUTS.get(shape.architecture)
    try:
        kept = stored(qc)
    except _Unreadable as err:
        return Exclusions((((0, 0, 0), Split(problem=str(err))),))
    eras: list[tuple[Version, Split]] = []
    truths: dict[str, str | bool | None] = {}
    done: dict[tuple[str, Version, bool, tuple[str, ...]], Split] = {}
    for v in _BOUNDS:
        try:
            entries = listed(qc, v)
            cls = modelopt_class.override(method, facts, v) or method
        except _Unreadable as err:
            split = Split(problem=str(err))
        except UserError:  # the override cannot be predicted: said by quant_support, not here
            split = Split()
        else:
            if cls in (FP8, NVFP4) and v < (0, 10, 0) and "quantization" not in qc:
                split = Split(problem="vLLM before 0.10.0 reads a ModelOpt section only in hf_quant_config.json's "
                                      "nested layout (from_config: get_from_keys(config, [\"quantization\"]), "
                                      "modelopt.py@0.9.2), which this section lacks: ValueError while the config "
                                      "is built, which this tool does not predict")
            elif cls == FP8 and "FP8" not in algo:
                split = Split(problem=f"vLLM builds its ModelOpt FP8 config for this {algo} checkpoint (no override "
                                      "picks the NVFP4 class before 0.10.0: modelopt_class), which then expects "
                                      "16-bit weights to quantize (is_checkpoint_fp8_serialized false, "
                                      "modelopt.py@0.9.2 l.72-77) and gets packed ones: not predicted")
            elif shape.experts and cls in MOE_SINCE and v < MOE_SINCE[cls]:
                split = Split(problem=f"vLLM's {cls} config has no FusedMoE method at this release (from "
                                      f"{'.'.join(map(str, MOE_SINCE[cls]))}): FusedMoE asserts one, an "
                                      "AssertionError while the model is built, which this tool does not predict")
            elif cls not in (FP8, NVFP4) or not (kept or entries):  # no list: a quantized router is stored packed
                split = Split(router_packed=cls in (FP8, NVFP4) and bool(shape.experts) and layout is not None
                              and layout.gate_quantized_since is not None and v >= layout.gate_quantized_since)
            elif layout is None:
                odd = [e for e in dict.fromkeys(kept + entries) if not HARMLESS.match(e)]
                split = Split(problem=f"quantization_config excludes modules {_few(odd)}: this tool does not know "
                                      "the architecture's layer names in vLLM") if odd else Split()
            else:
                span = max(b for b in _RULE_BOUNDS if b <= v)
                gate = layout.gate_quantized_since is not None and v >= layout.gate_quantized_since
                key = (cls, span, gate, tuple(entries))
                if key not in done:
                    done[key] = _split(cls, v, kept, entries, shape, layout, truths)
                split = done[key]
        if not eras or eras[-1][1] != split:
            eras.append((v, split))
    return Exclusions(tuple(eras)) if any(split != Split() for _, split in eras) else None
