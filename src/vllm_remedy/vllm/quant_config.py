"""What a checkpoint's ``quantization_config`` says of its stored weights, read as vLLM reads it.

Apart from hf_config because quantization is its own vocabulary (methods, bits, zero points, which layers are
packed) that the weight sizing consults, while the rest of config.json describes shapes and lengths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm.hf_config import cannot_predict
from vllm_remedy.vllm.quant_ct_fp4 import float_group


def section(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``quantization_config`` when it is an object, None when absent or null. Any other JSON value cannot be
    predicted: vLLM reads the section as a dict in every release (``quant_cfg.get("quant_method", "")`` in
    ``_verify_quantization``, config.py@0.5.5-@0.10.2; ``quant_cfg.get("producer", {})`` in
    ``_parse_quant_hf_config``, config/model.py@0.11.0, and in the model-arch convertor's
    ``_normalize_quantization_config`` that 0.14.0+ read it through), so a string or a list ends the start with an
    AttributeError while the model config is built: a crash, not a refusal this tool classifies, and not bf16."""
    qc = config.get("quantization_config")
    if qc is None or isinstance(qc, Mapping):
        return qc
    raise cannot_predict(config, f"quantization_config is a JSON {_JSON_KIND.get(type(qc), type(qc).__name__)} "
                                 f"({qc!r:.40}), not an object: vLLM calls .get on it while it builds the model "
                                 "config (AttributeError), which is no start this tool predicts")


_JSON_KIND = {str: "string", list: "array", int: "number", float: "number", bool: "boolean"}


def quantization(config: Mapping[str, Any]) -> str | None:
    """``quantization_config.quant_method`` (fp8, awq, gptq, compressed-tensors, bitsandbytes, ...); "" for a section
    that names no method (``quant_support`` judges it per release: refused up to 0.10.2, unquantized from 0.11.0)."""
    qc = section(config)
    if qc is None:
        return None
    method = qc.get("quant_method")
    if method is not None and not isinstance(method, str):
        raise cannot_predict(config, f"quantization_config.quant_method {method!r} is not a string: vLLM calls "
                                     ".lower() on it (AttributeError)")
    if method:
        return method.lower()
    if qc.get("load_in_4bit") or qc.get("load_in_8bit"):
        return "bitsandbytes"  # older bitsandbytes checkpoints name no method
    return ""


# Methods whose stored weights are 8-bit floats, whatever else their config says.
_FP8_METHODS = frozenset({"fp8", "fbgemm_fp8", "ptpc_fp8"})
# Integer methods that state ``bits`` (GPTQ, AutoRound) or ``w_bit`` (AutoAWQ).
_INT_METHODS = frozenset({"awq", "awq_marlin", "gptq", "gptq_marlin", "gptq_marlin_24", "auto-round", "auto_round"})


def weight_bits(config: Mapping[str, Any]) -> int | None:
    """Stored bits per quantized weight; None for an unquantized checkpoint. A method or a config whose
    bits cannot be read raises ``cannot predict`` instead of sizing the weights as 16-bit."""
    qc = section(config)
    if qc is None:
        return None
    method = str(qc.get("quant_method") or "").lower()
    if not method and not (qc.get("load_in_4bit") or qc.get("load_in_8bit")):
        return None  # no method: refused or not predicted per release (quant_support), never sized
    if method in _FP8_METHODS:
        return 8
    if method == "mxfp4":  # gpt-oss: MoE experts only, see ``quantized_scope``
        return 4
    if method in ("modelopt", "modelopt_fp4"):  # the second: hf_quant_config.json's NVFP4 (quant_source.as_release)
        algo = modelopt_algo(qc)
        if algo is None:
            raise cannot_predict(config, "quantization_config (modelopt) states no quant_algo, which vLLM's ModelOpt "
                                         "configs require (from_config raises: modelopt.py@0.9.2 KeyError, "
                                         "@0.10.0-@0.34.0 \"Missing 'quant_algo' in quantization config\")")
        if algo.upper() in ("FP8", "NVFP4"):
            return 8 if algo.upper() == "FP8" else 4
        # FP8_PER_CHANNEL_PER_TOKEN / FP8_PB_WO (modelopt.py@0.14.0 l.105-113; refused before), MXFP8, mixed: their
        # scale layouts are not sized
        raise cannot_predict(config, f"quantization_config.quant_algo {algo} is not modelled")
    if method in _INT_METHODS:
        bits = qc.get("bits") or qc.get("w_bit")
        if not bits:
            raise cannot_predict(config, f"quantization_config ({method}) states no bits / w_bit")
        if method in ("awq", "gptq") and isinstance(bits, str) and bits.isdigit() and int(bits) > 0:
            # vLLM uses the text as JSON has it: the config class refuses it where it is read per release
            # (``quant_support.packing_refusal``, ``IntFacts.bits_text``), else "cannot predict" there; the int is
            # a stand-in for the spec, never a sized start
            return int(bits)
        if isinstance(bits, bool) or not isinstance(bits, int):
            # vLLM uses the value as JSON has it: the plain AWQ config refuses "4" ("only 4-bit ..., but got 4
            # bits", awq.py@0.11.0), the others divide by it first (TypeError: gptq.py@0.21.0 Fraction(32, bits),
            # auto_awq.py / auto_gptq.py@0.34.0 32 // bits), 4.0 divides: per release and method, not modelled
            raise cannot_predict(config, f"quantization_config ({method}) bits {bits!r} is not an integer")
        return bits
    if method == "compressed-tensors":
        groups = qc.get("config_groups")
        for group in groups.values() if isinstance(groups, Mapping) else ():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(weights, Mapping) and weights.get("num_bits"):
                return int(weights["num_bits"])
        raise cannot_predict(config, "quantization_config (compressed-tensors) has no config_groups.*.weights.num_bits")
    if method == "bitsandbytes" or qc.get("load_in_4bit") or qc.get("load_in_8bit"):
        if qc.get("load_in_4bit"):
            return 4
        if qc.get("load_in_8bit"):
            return 8
        raise cannot_predict(config, "quantization_config (bitsandbytes) sets neither load_in_4bit nor load_in_8bit")
    raise cannot_predict(config, f"quantization_config.quant_method {method or '(none)'!r} is not modelled")


def modelopt_algo(qc: Mapping[str, Any]) -> str | None:
    """The ``quant_algo`` ModelOpt's config classes build the layers from, as text; None when the section states none.

    ``from_config`` reads ``quantization.quant_algo`` whenever the section has a ``quantization`` key (the layout of
    ``hf_quant_config.json``, also pasted into config.json), the section's own ``quant_algo`` only otherwise: nested
    only up to 0.9.2 (``get_from_keys(config, ["quantization"])["quant_algo"]``, modelopt.py@0.6.1, @0.8.5, @0.9.2),
    either from 0.10.0 (``if "quantization" in config``, modelopt.py@0.10.0, @0.12.0, @0.30.0 l.316-336). The
    overrides that pick the class read it the same way (``modelopt_class.facts``). Read at the top level alone, a
    nested NVFP4 section was sized as 8-bit FP8 (the old default)."""
    source = qc.get("quantization") if "quantization" in qc else qc
    if not isinstance(source, Mapping):
        return None  # vLLM raises ("Expected 'quantization' to be a dictionary", modelopt.py@0.10.0)
    algo = source.get("quant_algo")
    return None if algo is None or algo == "" else str(algo)


def zero_points(config: Mapping[str, Any]) -> bool:
    """Whether packed integer weights carry zero points: compressed-tensors registers ``weight_zero_point`` only for
    asymmetric schemes (compressed_tensors_wNa16.py@0.10.0 ``create_weights``), so a config whose every weight group
    says ``symmetric: true`` has none; GPTQ/AWQ layouts always store ``qzeros``."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping) or str(qc.get("quant_method", "")).lower() != "compressed-tensors":
        return True
    groups = qc.get("config_groups")
    groups = groups.values() if isinstance(groups, Mapping) else ()
    weights = [g.get("weights") for g in groups if isinstance(g, Mapping)]
    return not weights or not all(isinstance(w, Mapping) and w.get("symmetric") is True for w in weights)


def quantized_scope(config: Mapping[str, Any]) -> str:
    """Which weights the checkpoint stores packed: "experts" (mxfp4: attention, router and embeddings stay
    bf16) or "linear" (every linear layer; embeddings and the vision tower stay 16-bit)."""
    return "experts" if quantization(config) == "mxfp4" else "linear"


DEFAULT_GROUP_SIZE = 128  # GPTQ's, AutoAWQ's and llm-compressor's default when a config states none
NVFP4_GROUP_SIZE = 16


class AssumedGroupSize(int):
    """``DEFAULT_GROUP_SIZE`` read from a config without ``quantization_config``: the weight sizing takes it like any
    group size, but it was not read from a checkpoint. A catalog variant named by its suffix (``catalog.model``:
    ``Qwen/Qwen2.5-72B-Instruct-AWQ``) keeps it with the base model's shapes, which the published checkpoint may have
    padded (that one's intermediate_size is 29696, the base model's 29568): the TP alignment rule
    (``packed_split_problem``) judges only a group size a checkpoint states."""


def group_size(config: Mapping[str, Any]) -> int | None:
    """Input channels sharing one scale (and zero point) in packed integer weights; None: one per output channel.

    vLLM shapes the scales ``[in / group_size, out]`` from the config (gptq.py / awq.py ``create_weights``@0.8.3, and
    compressed-tensors' ``weights.group_size``, compressed_tensors_wNa16.py@0.10.0), so a group of 32 stores four times
    the scales of 128: +15.6 % on the packed weights instead of +3.9 %. ``-1`` (GPTQ) and compressed-tensors' channel
    strategy mean per output channel. AWQ reads ``q_group_size`` before ``group_size`` and GPTQ/AutoRound
    ``group_size`` (``get_from_keys`` in awq.py / gptq.py / auto_round.py ``from_config``@0.8.3), which raises when
    neither is there: that config cannot be predicted, nor one whose size is not a JSON integer."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return AssumedGroupSize(DEFAULT_GROUP_SIZE)
    method = str(qc.get("quant_method", "")).lower()
    keys = ("q_group_size", "group_size") if method.startswith("awq") else ("group_size",)
    raw: Any = next((qc[k] for k in keys if k in qc), None)
    if method.startswith("modelopt") and isinstance(qc.get("quantization"), Mapping):
        raw = qc["quantization"].get("group_size")  # where from_config reads it (``modelopt_algo``)
    if method == "compressed-tensors":
        groups = qc.get("config_groups")
        for group in groups.values() if isinstance(groups, Mapping) else ():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(weights, Mapping) and weights.get("num_bits"):
                if str(weights.get("strategy", "")).lower() == "channel":
                    return None
                raw = weights.get("group_size")
                nvfp4 = weights.get("num_bits") == 4 and str(weights.get("type", "int")).lower() == "float"
                if nvfp4 and isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
                    return float_group(group, weights, raw)  # what vLLM's NVFP4 predicates read (quant_ct_fp4)
                break
    if raw is None:
        if method in _INT_METHODS:
            raise cannot_predict(config, f"quantization_config ({method}) states no {' / '.join(keys)}, which vLLM "
                                         "requires (get_from_keys raises)")
        # ModelOptNvFp4Config's own default is 16 (modelopt.py@0.10.0-@0.34.0 from_config; ``memory.nvfp4``)
        return NVFP4_GROUP_SIZE if method.startswith("modelopt") else DEFAULT_GROUP_SIZE
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise cannot_predict(config, f"quantization_config group_size {raw!r} is not an integer")
    if raw == -1:
        return None
    if raw <= 0:
        raise cannot_predict(config, f"quantization_config group_size {raw} is neither -1 nor positive")
    return raw


#: What vLLM raises when a row-parallel layer's input channels per TP rank split an AWQ group (``create_weights``).
AWQ_INPUT_ALIGNMENT = ("ValueError: The input size is not aligned with the quantized weight shape. This can be caused "
                       "by too large tensor parallel size.")
# Methods that run AWQ's layout: the checkpoint's "awq", or "awq_marlin" when a config names the kernel itself.
_AWQ_METHODS = frozenset({"awq", "awq_marlin"})
_SAYS = "; vLLM: "


def packed_split_problem(method: str | None, group: int | None, tp: int,
                         row_parallel: Sequence[tuple[str, int]]) -> str | None:
    """Why vLLM refuses to create an AWQ checkpoint's weights at this TP, or None: a row-parallel layer (``(name,
    input channels)``: o_proj, down_proj) whose input per rank the group size does not divide.

    Read in every release modelled (0.5.5 to 0.34.0), on every card that runs AWQ:
    - ``AWQLinearMethod.create_weights`` raises ``AWQ_INPUT_ALIGNMENT`` when ``input_size_per_partition %
      group_size`` (awq.py@0.5.5-@0.23.0; ``BaseAWQLinearMethod`` in auto_awq.py@0.24.0-@0.34.0, which normalises
      -1 to the full input first). It is the kernel below awq_marlin's ``get_min_capability`` (8.0 to 0.13.0, 7.5 from
      0.14.0) or with ``--quantization awq``.
    - awq_marlin (the default for an AWQ checkpoint on such a card) to 0.7.2: ``AWQMarlinLinearMethod.create_weights``
      calls ``verify_marlin_supports_shape`` (utils/marlin_utils.py@0.5.5, @0.6.3), which raises "Weight
      input_size_per_partition = N is not divisible by min_thread_k = 128" (a multiple of 128 is checked first) or
      "... by group_size = G" when ``group_size < input_size``; from 0.7.3 ``AWQMarlinConfig.get_quant_method`` sends
      a layer ``check_marlin_supports_layer`` refuses to the AWQ method above ("Falling back to unoptimized AWQ
      kernels", awq_marlin.py@0.7.3, auto_awq.py@0.34.0, where ``allow_tile_padding`` leaves the group straddling the
      shard as the one refusal), which raises.
    So the group straddling two ranks is refused whatever the card and release; only the message differs (Marlin's on
    capability 8.0+ up to 0.7.2, which the rehearsal pod does not render). Marlin's other rules up to 0.7.2
    (``min_thread_k`` 128 on the input and ``min_thread_n`` 64 on the output per rank) hang on the card and the
    release, which this rule does not receive, so they are not judged; nor are routed experts (FusedMoE's own methods)
    or a group size the checkpoint does not state (``AssumedGroupSize``).

    GPTQ and compressed-tensors w4a16 are judged apart (``mp_split``): from 0.6.2 their layers pick a kernel with
    ``choose_mp_linear_kernel``, so whether the split is refused hangs on the card, the run dtype and the release."""
    if method not in _AWQ_METHODS or group is None or isinstance(group, AssumedGroupSize) or tp <= 1:
        return None
    for name, channels in row_parallel:
        per_rank = channels // tp
        if channels % tp == 0 and group < channels and per_rank % group:
            return (f"tensor-parallel-size: {tp} splits {name}'s {channels} input channels into {per_rank} per GPU, "
                    f"which the AWQ group size {group} does not divide (a group would straddle two GPUs){_SAYS}"
                    f"{AWQ_INPUT_ALIGNMENT}")
    return None


def vllm_exception(problem: str) -> str | None:
    """The exception line vLLM raises for a problem ``packed_split_problem`` found, or None for any other text: the
    rehearsal pod renders vLLM's words, the tools print the problem."""
    head, _, said = problem.partition(_SAYS)
    return said if said and head.startswith("tensor-parallel-size:") else None


def mp_linear(config: Mapping[str, Any]) -> str | None:
    """Which mixed-precision path a checkpoint's linear layers take (``mp_split``), or None: "gptq_marlin" for a GPTQ
    config ``GPTQMarlinConfig.is_gptq_marlin_compatible`` converts (bits 4 or 8, ``sym`` true, ``desc_act`` stated,
    group -1/32/64/128: gptq_marlin.py@0.12.0, utils/marlin_utils.py ``MARLIN_SUPPORTED_GROUP_SIZES``), "gptq" for
    any other GPTQ config, "wna16" for compressed-tensors' ``CompressedTensorsWNA16`` (a weight group with strategy
    group or channel, no input activations, static, pack-quantized: ``_is_wNa16_group_channel``,
    compressed_tensors.py@0.12.0) when symmetric; asymmetric ones (zero points change which kernels apply) are not
    judged."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None
    method = str(qc.get("quant_method", "")).lower()
    if method in ("gptq", "gptq_marlin"):
        marlin = (qc.get("bits") in (4, 8) and qc.get("sym") is True and qc.get("desc_act") is not None
                  and qc.get("group_size") in (-1, 32, 64, 128))
        return "gptq_marlin" if marlin else "gptq"
    if method != "compressed-tensors":
        return None
    groups = qc.get("config_groups")
    for group in groups.values() if isinstance(groups, Mapping) else ():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping) or group.get("input_activations") is not None:
            continue
        fmt = str(group.get("format") or qc.get("format") or "")
        if (str(weights.get("strategy", "")).lower() in ("group", "channel") and not weights.get("dynamic")
                and str(weights.get("type", "int")).lower() == "int" and fmt == "pack-quantized"
                and weights.get("num_bits") in (4, 8)):
            return "wna16" if weights.get("symmetric") is True else None
    return None


def act_order(config: Mapping[str, Any]) -> bool:
    """Whether the packed weights carry a ``g_idx`` (GPTQ ``desc_act``; compressed-tensors ``actorder: group``, which
    ``CompressedTensorsWNA16`` maps to ``has_g_idx``): Machete and Exllama refuse it on a split input."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return False
    if qc.get("desc_act") is True:
        return True
    groups = qc.get("config_groups")
    for group in groups.values() if isinstance(groups, Mapping) else ():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if isinstance(weights, Mapping) and str(weights.get("actorder") or "").lower() == "group":
            return True
    return False


def weight_block_size(config: Mapping[str, Any]) -> tuple[int, int] | None:
    """fp8's ``weight_block_size`` [block_n, block_k] (``Fp8Config.from_config`` reads it with ``get_from_keys_or``,
    fp8.py@0.6.6/@0.8.5; it raises unless it has two dimensions), or None: not block-quantized. Two values that are not
    positive integers cannot be predicted."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping) or str(qc.get("quant_method", "")).lower() != "fp8":
        return None
    raw = qc.get("weight_block_size")
    if raw is None:
        return None
    if (not isinstance(raw, list) or len(raw) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in raw)):
        raise cannot_predict(config, f"quantization_config.weight_block_size {raw!r} is not two positive integers")
    return raw[0], raw[1]


@dataclass(frozen=True)
class IntFacts:
    """What an AWQ or GPTQ ``quantization_config`` states of its packing, as written (None: the key is absent): the
    keys vLLM's AWQ / GPTQ configs read to pick a kernel and to accept the checkpoint at all (``quant_support``)."""

    method: str  # "awq" or "gptq"
    bits: int | None  # ``bits`` (AWQ: ``w_bit`` first, as ``get_from_keys(["w_bit", "bits"])``)
    group_size: int | None  # AWQ: ``q_group_size`` first
    sym: bool | None  # GPTQ
    desc_act: bool | None  # GPTQ
    zero_point: bool | None  # AWQ
    bits_text: str | None = None  # the bits as a JSON string of digits ("4"): vLLM keeps the text (quant_support)
    dynamic_act_order: str | None = None  # GPTQ: the first ``dynamic`` rule turning act order on (``_act_order_rule``)
    bits_key: int | float | str | None = None  # ``bits`` as written (not AWQ's ``w_bit``): is_moe_wna16_compatible
    not_bool: tuple[tuple[str, str], ...] = ()  # (key, repr) of sym / desc_act / zero_point stated but no JSON boolean


def _stated(qc: Mapping[str, Any], *keys: str) -> Any:
    return next((qc[k] for k in keys if qc.get(k) is not None), None)


def int_facts(config: Mapping[str, Any]) -> IntFacts | None:
    """The packing an AWQ or GPTQ checkpoint states, or None for any other method."""
    qc = section(config)
    method = str(qc.get("quant_method") or "").lower() if qc is not None else ""
    if qc is None or method not in ("awq", "gptq"):
        return None
    bits = _stated(qc, "w_bit", "bits") if method == "awq" else _stated(qc, "bits")
    group = _stated(qc, "q_group_size", "group_size") if method == "awq" else _stated(qc, "group_size")

    def _int(v: Any) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def _bool(v: Any) -> bool | None:
        return v if isinstance(v, bool) else None

    return IntFacts(method=method, bits=_int(bits), group_size=_int(group), sym=_bool(qc.get("sym")),
                    desc_act=_bool(qc.get("desc_act")), zero_point=_bool(qc.get("zero_point")),
                    bits_text=bits if isinstance(bits, str) else None,
                    dynamic_act_order=_act_order_rule(qc, group) if method == "gptq" else None,
                    bits_key=raw if isinstance(raw := qc.get("bits"), int | float | str) else None,
                    not_bool=tuple((k, repr(qc[k])) for k in ("sym", "desc_act", "zero_point")
                                   if qc.get(k) is not None and not isinstance(qc[k], bool)))


def _act_order_rule(qc: Mapping[str, Any], group: Any) -> str | None:
    """The first GPTQModel ``dynamic`` rule that turns act order on for a group of more than one: the loop of
    ``normalize_and_validate_gptq_desc_act`` (utils/gptq_utils.py@0.30.0-@0.34.0), which skips "-:" rules and
    non-objects and takes each rule's ``desc_act`` / ``group_size`` over the checkpoint's (``desc_act`` as written,
    before the group -1 normalisation). None when no rule does, or ``dynamic`` is no object."""
    dynamic = qc.get("dynamic")
    if not isinstance(dynamic, Mapping):
        return None
    for pattern, overrides in dynamic.items():
        if str(pattern).startswith("-:") or not isinstance(overrides, Mapping):
            continue
        if overrides.get("desc_act", qc.get("desc_act")) and overrides.get("group_size", group) != -1:
            return str(pattern)
    return None


def ct_mla_groups(config: Mapping[str, Any]) -> bool | None:
    """For a compressed-tensors checkpoint, whether vLLM 0.7.1/0.7.2's ``use_mla`` keeps MLA (``memory.mla_release``):
    every config group's ``weights.type`` and ``input_activations.type`` are the literal ``"fp8"`` (config.py@0.7.2
    l.998-1016: a missing ``config_groups`` is one group of neither, an empty one has no group to fail, a null
    section a type of None). llm-compressor's FP8 checkpoints write ``"type": "float"`` there, so on 0.7.2 they run
    without MLA. None for any other method, and where that loop would raise (a group or section that is no object:
    ``.get`` on it) rather than decide."""
    qc = section(config)
    if qc is None or str(qc.get("quant_method") or "").lower() != "compressed-tensors":
        return None
    groups = qc.get("config_groups", {"": {}})
    if not isinstance(groups, Mapping) or not all(isinstance(g, Mapping) for g in groups.values()):
        return None
    for group in groups.values():
        types = []
        for key in ("input_activations", "weights"):
            part = group.get(key, {})
            if part is not None and not isinstance(part, Mapping):
                return None
            types.append(None if part is None else part.get("type", ""))
        if types != ["fp8", "fp8"]:
            return False
    return True
