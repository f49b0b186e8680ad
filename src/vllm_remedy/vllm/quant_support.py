"""The quantization checks vLLM runs while it builds its config, release by release: a start they fail is refused
before any weight is loaded (``config_refused``), in vLLM's own words.

Read from the PyPI sdists (vllm/config.py@0.6.4-@0.10.0, config/model.py and config/__init__.py@0.10.2-@0.11.0,
config/vllm.py@0.12.0-@0.34.0; model_executor/model_loader/loader.py@0.5.5-@0.6.3 before the check moved to the
config; each method's class in model_executor/layers/quantization/):

1. ``ModelConfig._verify_quantization``: the checkpoint's ``quantization_config.quant_method`` is offered to every
   override first (awq_marlin / gptq_marlin when the card runs Marlin and ``--quantization`` is unset, ``marlin`` or
   the Marlin name; from 0.22 ``auto_gptq`` and from 0.24 ``auto_awq`` take gptq / awq for any of their spellings;
   moe_wna16; from 0.20 ``gpt_oss_mxfp4`` takes gpt-oss's mxfp4, mxfp4.py@0.20.0); with no override, a
   ``--quantization`` other than the checkpoint's method is refused: "Quantization method specified in the model
   config (awq) does not match the quantization method specified in the `quantization` argument (gptq)."
   (config/model.py@0.11.0, @0.34.0).
2. ``get_quant_config``: ``--quantization`` on a checkpoint without ``quantization_config`` reads the method's own
   file (AWQ: quant_config.json / quantize_config.json, GPTQ: quantize_config.json); fp8, mxfp4 and bitsandbytes need
   none (fp8 quantizes the 16-bit weights online). Without it: "Cannot find the config file for awq"
   (model_loader/weight_utils.py@0.11.0). config.json cannot say whether the repository ships such a file, so a
   checkpoint with no ``quantization_config`` is taken not to (AutoAWQ and AutoGPTQ write the section since 2023).
3. ``_get_quantization_config``: "The quantization method awq is not supported for the current GPU. Minimum
   capability: 75. Current capability: 70." against ``get_min_capability``: awq 75 everywhere (auto_awq.py@0.34.0);
   gptq 60 (auto_gptq.py@0.34.0 too); awq_marlin and gptq_marlin 80 through 0.13, 75 from 0.14.0; fp8 80 through 0.13,
   75 from 0.14.0 (fp8.py@0.13.0 / @0.14.0: from 8.0 below 8.9 it runs as Marlin weight-only, not refused); mxfp4 80
   (mxfp4.py@0.10.1-@0.34.0); bitsandbytes and compressed-tensors 70; ModelOpt's classes per release, after its
   overrides pick one from the checkpoint's algorithm (``modelopt_class``: "modelopt" 89 through 0.26.0, 80 from
   0.27.0; "modelopt_fp4" 80 through 0.13.0, 75 from 0.14.0). Then ``get_supported_act_dtypes``: the plain
   awq and gptq kernels take float16 only ("torch.bfloat16 is not supported for quantization method awq"), through
   0.23 and 0.21 (auto_awq / auto_gptq take bfloat16 too); judged for a typed ``--dtype bfloat16`` only (the
   catalog's quantized variants carry their base's dtype, where AWQ checkpoints are saved in float16).

4. The method's config class, built by ``get_quant_config`` before the capability check (config/__init__.py@0.11.0
   ``_get_quantization_config``), refuses a packing it has no kernel for (``packing_refusal``). vLLM offers an AWQ or
   GPTQ checkpoint to Marlin first where the card runs it (``override_quantization_method`` with
   ``is_awq_marlin_compatible`` / ``is_gptq_marlin_compatible``), and a checkpoint Marlin refuses falls back to the
   plain method, whose accepted bits differ: see ``packing_refusal``.
5. A ``quantization_config`` that names no ``quant_method`` (``quant_config.quantization`` gives ""): through 0.10.2
   ``_verify_quantization`` takes "" as the method and refuses it ("Unknown quantization method: . Must be one of
   [...]", config.py@0.5.5 / @0.8.5, config/__init__.py@0.10.2); from 0.11.0 it turns "" into None
   (config/model.py@0.11.0, @0.34.0: ``quant_method if quant_method != "" else None``) and starts the model
   unquantized, loading the checkpoint's tensors into 16-bit layers: not predicted. From 0.10.1 a ModelOpt section
   (``producer.name`` "modelopt") gets its method from ``quantization.quant_algo`` first (``quant_source.as_release``,
   applied through ``ModelSpec.at``), or vLLM's "Unknown ModelOpt quant algo" refusal.
6. ModelOpt's classes refuse an algorithm text outside ``QUANT_ALGOS`` as written before 0.14.0 ("fp8" in lower
   case: ``modelopt_class.class_refusal``).

Only the methods listed are judged; a typed ``--quantization`` of any other (quark, experts_int8, ...) is vLLM's
refusal where its source shows one, else "cannot predict" (``quant_flag``), never a 16-bit size. An unknown
capability is never refused.
"""

from __future__ import annotations

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import arch_release, dtype_support, modelopt_class, quant_bnb, quant_flag
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.quant_config import IntFacts
from vllm_remedy.vllm.quant_source import UNKNOWN_ALGO
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

Version = tuple[int, int, int]

CONFIG_CHECK_SINCE = (0, 6, 4)  # the checks run while the engine config is built (config.py@0.6.4), else at load
MARLIN_75_SINCE = (0, 14, 0)  # awq_marlin, gptq_marlin and fp8 take capability 7.5 (0.13.0: 80)
AUTO_GPTQ_SINCE = (0, 22, 0)  # auto_gptq.py replaces gptq.py / gptq_marlin.py
AUTO_AWQ_SINCE = (0, 24, 0)  # auto_awq.py replaces awq.py / awq_marlin.py
GPT_OSS_MXFP4_SINCE = (0, 20, 0)  # GptOssMxfp4Config names gpt-oss's mxfp4 "gpt_oss_mxfp4" (absent at 0.19.0)
EMPTY_METHOD_UNQUANTIZED_SINCE = (0, 11, 0)  # _verify_quantization: "" -> None (config/model.py@0.11.0)
# Marlin's AWQ (zero-point) types: uint4 and uint8 through 0.8.5, uint4 only from 0.9.0
# (``query_marlin_supported_quant_types`` in utils/marlin_utils.py@0.8.5 / @0.9.0; awq_marlin.py's TYPE_MAP kept 8 to
# 0.11.0 but the query no longer lists uint8).
AWQ_MARLIN_8BIT_UNTIL = (0, 9, 0)
MARLIN_GROUP_SIZES = (-1, 32, 64, 128)  # MARLIN_SUPPORTED_GROUP_SIZES (utils/marlin_utils.py@0.5.5-@0.34.0)
_FILES = {"awq": "quant_config.json or quantize_config.json", "gptq": "quantize_config.json"}
_JUDGED = frozenset({"awq", "gptq", "awq_marlin", "gptq_marlin", "marlin", "auto_awq", "auto_gptq", "fp8", "mxfp4",
                     "gpt_oss_mxfp4", "bitsandbytes", "compressed-tensors"})


def _marlin_min(v: Version) -> int:
    return 75 if v >= MARLIN_75_SINCE else 80


def min_capability(method: str, v: Version) -> int | None:
    """``get_min_capability`` of the method's config class at this release; None: not judged."""
    if method in ("awq", "auto_awq"):
        return 75
    if method in ("gptq", "auto_gptq"):
        return 60
    if method in ("awq_marlin", "gptq_marlin", "marlin", "fp8"):
        return _marlin_min(v)
    if method in ("mxfp4", "gpt_oss_mxfp4"):
        return 80
    if method in ("bitsandbytes", "compressed-tensors"):
        return 70
    return modelopt_class.min_capability(method, v)


def _cap(capability: tuple[int, int]) -> int:
    return capability[0] * 10 + capability[1]  # DeviceCapability.to_int


def _marlin_takes(model: ModelSpec, v: Version) -> bool:
    """Whether Marlin converts the checkpoint, the card aside: ``is_awq_marlin_compatible`` (``bits``, ``group_size``
    and ``zero_point`` stated; the bits a Marlin type with zero points at this release; the group a Marlin size:
    awq_marlin.py@0.5.5-@0.23.0) or ``is_gptq_marlin_compatible`` (``(bits, sym)`` in {(4, True), (8, True)},
    ``desc_act`` stated, a Marlin group: ``quant_config.mp_linear``, gptq_marlin.py@0.5.5-@0.21.0). A catalog variant
    named by its suffix states nothing: AutoAWQ's 4 bits and GPTQ's 4 / 8 are taken to convert, as before. Not
    modelled: ``is_awq_marlin_compatible`` reads ``bits`` and ``group_size`` only, where ``IntFacts`` takes ``w_bit``
    and ``q_group_size`` first (AutoAWQ writes ``bits`` / ``group_size`` into config.json; its own quant_config.json
    holds the other spellings)."""
    facts = model.int_facts
    if facts is None:
        return model.weight_bits == 4 if model.quantization == "awq" else model.weight_bits in (4, 8)
    if facts.method == "gptq":
        return model.mp_linear == "gptq_marlin"
    if facts.bits is None or facts.group_size is None or facts.zero_point is None:
        return False
    types = ((4, 8) if v < AWQ_MARLIN_8BIT_UNTIL else (4,)) if facts.zero_point else ()  # no-zp: GPTQ's types only
    return facts.bits in types and facts.group_size in MARLIN_GROUP_SIZES


def _missing(key: str, facts: IntFacts) -> str:
    """``get_from_keys``' refusal of a key the config lacks; a key it has whose value is no JSON boolean (``"false"``,
    ``0``) is found, and what the class then does with its truth (a non-empty text is true) was not read: "cannot
    predict", not that refusal."""
    said = dict(facts.not_bool).get(key)
    if said is not None:
        raise UserError(f"cannot predict quantization_config ({facts.method}) {key} {said}: not a JSON boolean, which "
                        "vLLM's config class takes as written (its truth per release was not read)")
    return f"ValueError: Cannot find any of ['{key}'] in the model's quantization config."


def packing_refusal(chosen: str, facts: IntFacts | None, v: Version = NEWEST_RELEASE) -> str | None:
    """What the method's config class raises for the checkpoint's packing (``from_config`` then ``__init__``), or
    None. The keys each ``from_config`` requires (``get_from_keys``, base_config.py@0.5.5 / @0.22.0): AWQ ``w_bit`` /
    ``bits``, ``q_group_size`` / ``group_size`` and ``zero_point`` (awq.py@0.20.0, auto_awq.py@0.24.0); GPTQ
    ``bits``, ``group_size`` and ``desc_act`` (gptq.py@0.20.0), and ``sym`` too from 0.22.0 (auto_gptq.py@0.22.0). A
    missing bits or group size is ``cannot predict`` earlier (``quant_config``). Then the bits:
    - awq (to 0.23.0): "Currently, only 4-bit weight quantization is supported for AWQ, but got 8 bits."
      (awq.py@0.5.5, @0.11.0, @0.23.0);
    - auto_awq (0.24.0+): ``TYPE_MAP = {4: uint4}``, "Unsupported num_bits = 8. Supported: 4. ..." (auto_awq.py@0.24.0,
      @0.34.0);
    - gptq (to 0.21.0): "Currently, only 2/3/4/8-bit weight quantization is supported for GPTQ, but got 5 bits."
      (gptq.py@0.5.5, @0.12.0, @0.21.0; ``sym`` is not read, so asymmetric checkpoints load);
    - auto_gptq (0.22.0+): ``TYPE_MAP`` holds (4, True) and (8, True) only, "Unsupported quantization config:
      bits=4, sym=False" (auto_gptq.py@0.22.0, @0.34.0): 2/3-bit and asymmetric GPTQ, which the plain kernel ran, are
      refused; from 0.30.0 act order first (``act_order_refusal``)."""
    if facts is not None and facts.bits_text is not None:
        return _text_bits(chosen, facts, v)
    if facts is None or facts.bits is None:
        return None
    if chosen in ("awq", "auto_awq"):
        if facts.zero_point is None:
            return _missing("zero_point", facts)
        if facts.bits == 4:
            return None
        if chosen == "awq":
            return (f"ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got {facts.bits} "
                    "bits.")
        return (f"ValueError: Unsupported num_bits = {facts.bits}. Supported: 4. For 8-bit AWQ, use Marlin backend by "
                "setting backend='awq:marlin' or backend='marlin'.")
    if chosen in ("gptq", "auto_gptq"):
        if facts.desc_act is None:
            return _missing("desc_act", facts)
        if chosen == "gptq":
            return None if facts.bits in (2, 3, 4, 8) else (
                "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported for GPTQ, but got "
                f"{facts.bits} bits.")
        if facts.sym is None:
            return _missing("sym", facts)
        if (act_order := act_order_refusal(facts, v)) is not None:
            return act_order
        if (facts.bits, facts.sym) not in ((4, True), (8, True)):
            return f"ValueError: Unsupported quantization config: bits={facts.bits}, sym={facts.sym}"
    return None


ACT_ORDER_REFUSED_SINCE = (0, 30, 0)  # normalize_and_validate_gptq_desc_act (utils/gptq_utils.py@0.30.0; not @0.29.0)
_ACT_ORDER = ("ValueError: GPTQ group activation ordering (desc_act=True) is no longer supported{rule}. Use a "
              "checkpoint with static activation ordering or desc_act=False.")


def act_order_refusal(facts: IntFacts, v: Version) -> str | None:
    """``AutoGPTQConfig.__init__``'s first check from 0.30.0, before it divides by the bits
    (``normalize_and_validate_gptq_desc_act``, utils/gptq_utils.py@0.30.0-@0.34.0, called at auto_gptq.py@0.30.0
    l.118, @0.34.0 l.124): ``desc_act`` true with a group other than -1 (a group of one per output channel makes act
    order a no-op), or a ``dynamic`` rule that turns it on, is refused. Through 0.29.0 the same class turns
    ``desc_act`` off only for group -1 and runs the rest (auto_gptq.py@0.29.0 l.118)."""
    if v < ACT_ORDER_REFUSED_SINCE:
        return None
    if facts.desc_act and facts.group_size != -1:
        return _ACT_ORDER.format(rule="")
    if facts.dynamic_act_order is not None:
        return _ACT_ORDER.format(rule=f", but is enabled by dynamic rule {facts.dynamic_act_order!r}")
    return None


# ``32 // "4"`` in the auto classes' ``__init__``: Python's own words
_FLOOR_DIV_TEXT = "TypeError: unsupported operand type(s) for //: 'int' and 'str'"


def _text_bits(chosen: str, facts: IntFacts, v: Version) -> str:
    """What the config class raises for ``bits`` given as a JSON string ("4"), which no release converts: the Marlin
    checks test ``(bits, sym)`` / ``bits`` for membership in their type maps, so they decline it without raising
    (``is_awq_marlin_compatible``, ``is_gptq_marlin_compatible``, ``is_moe_wna16_compatible`` and every
    ``override_quantization_method``, quantization/*.py@0.5.5-@0.34.0: no arithmetic on the bits; the auto classes'
    overrides read only ``quant_method``), and the class vLLM builds gets the text:
    - awq (to 0.23.0): ``from_config`` reads ``w_bit``/``bits``, the group and ``zero_point``, then ``__init__`` tests
      ``self.weight_bits != 4`` before dividing by it (awq.py@0.5.5 l.29/33, @0.10.0 l.41/45, @0.23.0 l.53/58):
      "only 4-bit ..., but got 4 bits.";
    - gptq (to 0.21.0): ``from_config`` reads bits, group and ``desc_act``, then ``__init__`` computes
      ``Fraction(32, self.weight_bits)`` before its bits check (gptq.py@0.5.5 l.34/35, @0.10.0 l.70/71, @0.21.0
      l.91/92): Python's fractions raises "both arguments should be Rational instances";
    - auto_awq (0.24.0+): ``from_config`` reads ``w_bit``/``bits``, the group and ``zero_point``, then ``__init__``'s
      first line is ``self.pack_factor = 32 // weight_bits``, before its ``TYPE_MAP`` check (auto_awq.py@0.24.0 l.192,
      @0.28.0 l.193, @0.34.0 l.198): a TypeError;
    - auto_gptq (0.22.0+): ``from_config`` reads bits, group, ``desc_act`` and ``sym``; ``__init__`` checks act order
      from 0.30.0 (``act_order_refusal``), then ``self.pack_factor = 32 // weight_bits`` before its ``TYPE_MAP`` check
      (auto_gptq.py@0.22.0 l.149/155, @0.29.0 l.151/157, @0.34.0 l.154/160): the same TypeError.
    Any other class named by --quantization (a Marlin name below 0.22 / 0.24, which declines the text, is refused as
    a mismatch before this) was not read for it: "cannot predict"."""
    if chosen == "awq":
        if facts.zero_point is None:
            return _missing("zero_point", facts)
        return (f"ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got "
                f"{facts.bits_text} bits.")
    if chosen == "gptq":
        if facts.desc_act is None:
            return _missing("desc_act", facts)
        return "TypeError: both arguments should be Rational instances"
    if chosen == "auto_awq":
        return _missing("zero_point", facts) if facts.zero_point is None else _FLOOR_DIV_TEXT
    if chosen == "auto_gptq":
        if facts.desc_act is None:
            return _missing("desc_act", facts)
        if facts.sym is None:
            return _missing("sym", facts)
        return act_order_refusal(facts, v) or _FLOOR_DIV_TEXT
    raise UserError(f"cannot predict quantization_config ({facts.method}) bits {facts.bits_text!r}: a JSON string, "
                    f"which vLLM's {chosen} config was not read for")


def _moe_wna16_takes(model: ModelSpec, method: str, cap: int | None, v: Version) -> bool:
    """Whether ``--quantization moe_wna16`` converts the checkpoint (``MoeWNA16Config.is_moe_wna16_compatible``,
    moe_wna16.py@0.7.2 l.107, @0.22.0, @0.34.0 l.154): a GPTQ config without act order whose ``bits`` is 4 or 8 (from
    0.30.0 act order as ``normalize_and_validate_gptq_desc_act`` allows it: group -1, no ``dynamic`` rule), or an AWQ
    config whose ``bits`` (not ``w_bit``) is 4 on a card of AWQ's capability 7.5. Membership tests: a text "4" is
    not 4. Anything else declines, and the method named is refused as a mismatch. A catalog variant without a
    ``quantization_config`` is taken at its bits; an unknown card is not judged."""
    facts = model.int_facts
    if method not in ("gptq", "awq"):
        return False
    if facts is None:
        return model.weight_bits in ((4, 8) if method == "gptq" else (4,))
    bits = facts.bits_key
    if isinstance(bits, bool):  # True == 1, False == 0 in the list tests: neither is 4 or 8
        return False
    if method == "gptq":
        if bits not in (4, 8):
            return False
        if v >= ACT_ORDER_REFUSED_SINCE:
            return act_order_refusal(facts, v) is None
        return not facts.desc_act
    return bits == 4 and (cap is None or cap >= 75)


def _no_method(model: ModelSpec, user: str | None, v: Version, version: str | None) -> tuple[str | None, str]:
    """(the method, vLLM's refusal) for a ``quantization_config`` without ``quant_method`` (module docstring, 5)."""
    unquantized = v >= EMPTY_METHOD_UNQUANTIZED_SINCE
    if user is not None:
        stated = "None" if unquantized else ""
        return user, (f"ValueError: Quantization method specified in the model config ({stated}) does not match the "
                      f"quantization method specified in the `quantization` argument ({user}).")
    if unquantized:
        raise UserError(f"cannot predict {model.architecture}: quantization_config names no quant_method; vLLM "
                        f"{version or 'from 0.11.0'} then starts it unquantized (config/model.py@0.11.0) and loads the "
                        "checkpoint's tensors into 16-bit layers, which this tool does not predict")
    return "", (f"ValueError: Unknown quantization method: . Must be one of [... the "
                f"{len(arch_release.methods(version))} methods of this release].")


def _override(method: str, user: str | None, model: ModelSpec, cap: int | None, v: Version) -> str | None:
    """The method an override turns the checkpoint's into (``override_quantization_method``), or None."""
    if method == "awq":
        if v >= AUTO_AWQ_SINCE:
            return "auto_awq" if user in (None, "awq", "awq_marlin", "auto_awq", "marlin") else None
        marlin = cap is not None and cap >= _marlin_min(v) and _marlin_takes(model, v)
        return "awq_marlin" if marlin and user in (None, "marlin", "awq_marlin") else None
    if method == "gptq":
        if v >= AUTO_GPTQ_SINCE:
            return "auto_gptq" if user in (None, "gptq", "gptq_marlin", "auto_gptq", "marlin") else None
        marlin = cap is not None and cap >= _marlin_min(v) and _marlin_takes(model, v)
        return "gptq_marlin" if marlin and user in (None, "marlin", "gptq_marlin") else None
    if method == "mxfp4" and v >= GPT_OSS_MXFP4_SINCE and model.architecture == "GptOssForCausalLM":
        return "gpt_oss_mxfp4"
    if method.startswith("modelopt"):  # ModelOpt's overrides ignore --quantization and replace it (modelopt_class)
        return modelopt_class.override(method, model.modelopt_algo, v)
    return None


def method_run(model: ModelSpec, gpu: GpuSpec, user: str | None, version: str | None,
               dtype: str = "auto", load_format: str | None = None) -> tuple[str | None, str | None]:
    """(the method vLLM runs, why it refuses the start) for the checkpoint's ``quantization_config`` and
    ``--quantization`` (``user``) with ``--dtype`` on this card at this release; (None, None) for an unquantized
    start. ``load_format``: --load-format as typed ("auto" unset), None where the caller did not read it
    (``quant_bnb.default_loader_problem``)."""
    v = parse_version(version) or NEWEST_RELEASE
    model = model.at(v, user)  # the quantization this release reads (ModelOpt's producer, hf_quant_config.json)
    if (model.load_refusal or "").startswith(UNKNOWN_ALGO):  # the model config's mapping raised first
        return None, model.load_refusal
    cap = _cap(gpu.capability) if gpu.capability is not None else None
    if (bnb := quant_bnb.default_loader_problem(model.quantization, user, load_format, v, version or "unknown")):
        raise UserError(bnb)
    if model.quantization == "":
        return _no_method(model, user, v, version)
    method = (model.quantization or "").replace("compressed_tensors", "compressed-tensors") or None
    if method is not None:
        chosen = _override(method, user, model, cap, v)
        declines = user == "moe_wna16" and not _moe_wna16_takes(model, method, cap, v)
        if chosen is None and user in (None, method, "moe_wna16") and not declines:
            chosen = user or method
        elif chosen is None:
            if (method in _JUDGED and user in _JUDGED) or declines:
                return user, (f"ValueError: Quantization method specified in the model config ({method}) does not "
                              f"match the quantization method specified in the `quantization` argument ({user}).")
            if model.int_facts is not None and model.int_facts.bits_text is not None:  # its stand-in bits unsized
                raise UserError(f"cannot predict quantization_config ({method}) bits "
                                f"{model.int_facts.bits_text!r}: a JSON string, which vLLM's {user} config was not "
                                "read for")
            raise quant_flag.against_section(str(user), method)  # no override or mismatch modelled for the pair
    elif user is not None:
        chosen = user
        base = "awq" if "awq" in user else "gptq" if "gptq" in user or user == "marlin" else None
        if base is not None:
            return chosen, (f"ValueError: Cannot find the config file for {user} (the checkpoint's config.json has no "
                            f"quantization_config, and a {base.upper()} checkpoint ships {_FILES[base]})")
        if (words := quant_flag.without_section(user, arch_release.methods(version))) is not None:  # or unknown
            return chosen, words
    else:
        return None, None
    if (algo := modelopt_class.class_refusal(chosen, model.modelopt_algo, v)) is not None:
        return chosen, algo
    packing = packing_refusal(chosen, model.int_facts, v)
    if packing is not None and not (cap is None and method is not None and _marlin_takes(model, v)
                                    and chosen in ("awq", "gptq")):  # an unknown card may run Marlin, which takes it
        return chosen, packing
    least = min_capability(chosen, v)
    if least is not None and cap is not None and cap < least:
        return chosen, (f"ValueError: The quantization method {chosen} is not supported for the current GPU. Minimum "
                        f"capability: {least}. Current capability: {cap}.")
    half_only = (chosen == "awq" and v < AUTO_AWQ_SINCE) or (chosen == "gptq" and v < AUTO_GPTQ_SINCE)
    if half_only and dtype_support.requested(dtype) == "bfloat16":  # typed: auto's choice for AWQ is not modelled
        return chosen, (f"ValueError: torch.bfloat16 is not supported for quantization method {chosen}. Supported "
                        "dtypes: [torch.float16]")
    # after every config check: vLLM's model build, not its config, dies on bitsandbytes MoE before 0.10.0
    if (moe := quant_bnb.moe_problem(chosen, model.architecture, model.is_moe, v, version or "(newest)")):
        raise UserError(moe)
    return chosen, None


def refusal(model: ModelSpec, gpu: GpuSpec, quantization: str | None, version: str | None,
            dtype: str = "auto", load_format: str | None = None) -> str | None:
    """vLLM's exception refusing the start for its quantization, or None (the module's three checks)."""
    return method_run(model, gpu, quantization, version, dtype, load_format)[1]
