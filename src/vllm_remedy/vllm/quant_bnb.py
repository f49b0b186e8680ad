"""bitsandbytes and the model loader, release by release: vLLM loads bitsandbytes weights only with its
``BitsAndBytesModelLoader`` (``load_format == "bitsandbytes"``: ``get_model_loader``, model_loader/loader.py@0.7.3
l.1410-1411), and which flags select it changed twice (hostile review 15, H15):

- 0.5.5-0.8.2: ``--quantization bitsandbytes`` (or a QLoRA adapter) without ``--load-format bitsandbytes`` is refused,
  and so is ``--load-format bitsandbytes`` without ``--quantization bitsandbytes``: "BitsAndBytes quantization and
  QLoRA adapter only support 'bitsandbytes' load format, but got auto" / "BitsAndBytes load format and QLoRA adapter
  only support 'bitsandbytes' quantization, but got None" (engine/arg_utils.py@0.5.5 l.750-764, @0.6.0 l.771-785,
  @0.7.3 l.1106-1120 in ``create_engine_config`` before the model config; @0.8.0 l.1160-1175 in
  ``create_load_config``, called after the model and scheduler configs, l.1350: a refusal of theirs that coincides
  is printed first there, which ``flag_refusal``'s place before every check does not model). 0.8.1-0.8.2 were not
  read: taken as 0.8.0.
- 0.8.3-0.8.4: ``create_load_config`` sets ``load_format = "bitsandbytes"`` from ``--quantization bitsandbytes``
  (arg_utils.py@0.8.3 l.1074-1075); only a QLoRA adapter without it is refused. 0.8.4 was not read: taken as 0.8.3.
- 0.8.5 on: the checkpoint's method sets both (``if model_config.quantization == "bitsandbytes": self.quantization =
  self.load_format = "bitsandbytes"``, arg_utils.py@0.8.5 l.1235-1236, @0.11.0 l.1398-1400).

So a bitsandbytes checkpoint started without those flags before 0.8.5 gets the ``DefaultModelLoader``, whose
``load_weights`` meets the checkpoint's quant-state tensors (``*.weight.absmax``, ``quant_map``, ``nested_absmax``)
with no parameter for them (``params_dict[name]``, models/llama.py@0.7.3 l.428/440): the start fails while loading
weights, in words that hang on the tensor order (``default_loader_problem``: "cannot predict", never sized).
"""

from __future__ import annotations

from collections.abc import Mapping

Version = tuple[int, int, int]
BNB = "bitsandbytes"
FLAG_SETS_LOAD_SINCE: Version = (0, 8, 3)
CHECKPOINT_SETS_LOAD_SINCE: Version = (0, 8, 5)
QLORA = "qlora-adapter-name-or-path"


def _literal(text: str | None) -> bool:
    return text is None or ("$" not in text and "{{" not in text)


def flag_refusal(flags: Mapping[str, str], v: Version) -> tuple[str, str] | None:
    """(vLLM's exception, the flag whose value it refuses: ``ConfigRefused.flag``) for the bitsandbytes flags before
    0.8.3, or None. ``flags``: canonical keys; a value taken from a variable is not judged."""
    if v >= FLAG_SETS_LOAD_SINCE:
        return None
    quant, load, qlora = (flags.get(k) for k in ("quantization", "load-format", QLORA))
    if not all(_literal(x) for x in (quant, load, qlora)):
        return None
    quant_text = None if quant is None or str(quant) == "None" else str(quant)
    load_text = "auto" if load is None else str(load)
    if (quant_text == BNB or qlora is not None) and load_text != BNB:
        return (f"ValueError: BitsAndBytes quantization and QLoRA adapter only support '{BNB}' load format, but got "
                f"{load_text}", "load-format")  # the value refused: dropping --quantization is another start
    if (load_text == BNB or qlora is not None) and quant_text != BNB:
        return (f"ValueError: BitsAndBytes load format and QLoRA adapter only support '{BNB}' quantization, but got "
                f"{quant_text}", "load-format")
    return None


def default_loader_problem(checkpoint_method: str | None, quantization: str | None, load_format: str | None,
                           v: Version, label: str) -> str | None:
    """Why a bitsandbytes checkpoint's start cannot be predicted at release ``v``: the default loader meets its
    quant-state tensors (module docstring); None when the release's flags select the bitsandbytes loader.
    ``load_format``: None when the caller did not read it (then 0.8.3-0.8.4 are not judged)."""
    loader = (load_format or "").lower() == BNB
    if loader and BNB not in (checkpoint_method, quantization) and v >= FLAG_SETS_LOAD_SINCE:  # before: refused
        return (f"cannot predict --load-format bitsandbytes on vLLM {label} without bitsandbytes quantization (the "
                f"checkpoint's method: {checkpoint_method or 'none'}): the bitsandbytes loader then reads layers no "
                "bitsandbytes config built (model_loader/loader.py@0.8.5 BitsAndBytesModelLoader._load_weights raises "
                "for another method), which this tool does not predict")
    if checkpoint_method != BNB or v >= CHECKPOINT_SETS_LOAD_SINCE or quantization == BNB:
        return None  # before 0.8.3 --quantization bitsandbytes without the loader was refused (``flag_refusal``)
    if v >= FLAG_SETS_LOAD_SINCE and (load_format is None or load_format.lower() == BNB):
        return None
    return (f"cannot predict this bitsandbytes checkpoint on vLLM {label}: without --quantization bitsandbytes"
            f"{' --load-format bitsandbytes' if v < FLAG_SETS_LOAD_SINCE else ''} it is loaded by the default model "
            "loader (the checkpoint selects the bitsandbytes one from 0.8.5: engine/arg_utils.py@0.8.5 l.1235-1236), "
            "which has no parameter for its quant-state tensors (weight.absmax, quant_map: params_dict[name] in "
            "llama.py@0.7.3 load_weights): the load fails, in words this tool does not predict")


#: The first release whose bitsandbytes config has a method for fused experts: ``elif isinstance(layer, FusedMoE):
#: return BitsAndBytesMoEMethod(self)`` (layers/quantization/bitsandbytes.py@0.10.0 l.133-134). Before it
#: ``get_quant_method`` returns a method for ``LinearBase`` only and None otherwise (@0.5.5 l.45-50, @0.8.5 l.123-129,
#: @0.9.2 l.123-129), and ``FusedMoE.__init__`` asserts on that None (layers/fused_moe/layer.py@0.5.5 l.192,
#: @0.8.5 l.498-499, @0.9.2 l.732-735: ``assert quant_method is not None``) while the model is built, before any
#: weight loads (``_initialize_model`` comes first in the bitsandbytes loader's ``load_model``, loader.py@0.8.5
#: l.1305-1312).
MOE_SINCE: Version = (0, 10, 0)
#: The MoE architectures whose model file builds its experts as ``FusedMoE`` in every release read before 0.10.0 in
#: which the registry has them (models/*.py@0.5.5-@0.9.2, 16 wheels). Mixtral is not one under bitsandbytes:
#: ``get_model_architecture`` swaps it for ``QuantMixtralForCausalLM`` (mixtral_quant.py, per-expert linear layers)
#: for any method outside ``mixtral_supported`` (model_loader/utils.py@0.8.5 l.93-100, @0.9.2 l.229-237), whose
#: bitsandbytes load was not read.
FUSED_MOE_BEFORE: frozenset[str] = frozenset({
    "DbrxForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "Dots1ForCausalLM",
    "Ernie4_5_MoeForCausalLM", "GraniteMoeForCausalLM", "Grok1ModelForCausalLM", "HunYuanMoEV1ForCausalLM",
    "JambaForCausalLM", "MiniMaxM1ForCausalLM", "MiniMaxText01ForCausalLM", "OlmoeForCausalLM", "PhiMoEForCausalLM",
    "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"})


def moe_problem(method: str | None, architecture: str, moe: bool, v: Version, label: str) -> str | None:
    """Why a bitsandbytes start of an MoE model cannot be predicted before 0.10.0 (None otherwise): vLLM has no
    bitsandbytes method for its fused experts and dies building the model (:data:`MOE_SINCE`), a crash no outcome
    names, so never a 4-bit size ("fits")."""
    if method != BNB or not moe or v >= MOE_SINCE:
        return None
    if architecture in FUSED_MOE_BEFORE:
        return (f"cannot predict bitsandbytes on {architecture} with vLLM {label}: its experts are a FusedMoE layer, "
                "for which vLLM's BitsAndBytesConfig.get_quant_method returns None before 0.10.0, so building the "
                "model stops at 'assert quant_method is not None' (AssertionError, fused_moe/layer.py@0.8.5 l.499, "
                "@0.9.2 l.735) before any weight loads; bitsandbytes MoE runs from vLLM 0.10.0 "
                "(BitsAndBytesMoEMethod)")
    return (f"cannot predict bitsandbytes on the MoE architecture {architecture} with vLLM {label}: before 0.10.0 "
            "vLLM's bitsandbytes has no method for fused experts (its model build asserts on one), and how this "
            "release builds this model's experts was not read")
