"""Dimensions no model vLLM could build: refused while the spec is built, in one "cannot predict" line.

``config_sizes.check_sizes`` refuses a stated size that is zero, negative or not a number; a config can still pass it
and describe no model: a ``hidden_size`` below ``num_attention_heads`` leaves a head of no element (vLLM's
``hidden_size // num_attention_heads``, ``ModelConfig.get_head_size``, config/__init__.py@0.10.1 — the memory model
then divided by a KV block of 0 bytes), KV heads that do not divide the attention heads (the attention backends
group ``num_heads // num_kv_heads`` query heads per KV head and assert it is exact, at model construction), or sizes
whose tensors no GPU holds (a layer count of 1e23 gave 4e22 GiB of weights, a maximum length of 1e23 a rotary cache
as large; drawn as a bar, they ran the process out of memory). vLLM refuses none of these at config time in words of
its own: it fails later, creating the layers, so the line is ours. Every path that builds a spec (the catalog,
``--model-config``, the Hub's config.json, ``--hf-overrides``) goes through ``ModelSpec.from_hf_config``, which
calls ``check`` once the shapes are read. ``rope`` refuses the ``rope_scaling`` vLLM itself fails on while it loads
the config (no rope type; YaRN without its base length), in a line that quotes what vLLM raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import hf_config

#: 1 PiB. No node of GPUs holds this much (eight 288 GB cards hold 2.3 TB, 1/490 of it), and the largest published
#: checkpoints are a few TB: a model whose weights, or one tensor, need more is no model a pod serves. Far enough
#: above any real config that no reviewed number is near it.
MAX_BYTES = 1 << 50
#: vLLM's positions are int64 tensors (``torch.arange`` over the length, the rotary cache's rows): a maximum length
#: beyond int64 is not a length any tensor indexes.
MAX_LEN = (1 << 63) - 1
#: Keys that count whole elements or layers (``hf_config`` reads them with ``int()``): 4096.5 is no shape, and
#: truncating it would size a model other than the one vLLM is handed. Length keys are not listed: vLLM reads
#: those as numbers (a rope factor makes them floats) and derives its own integer.
WHOLE_KEYS = ("hidden_size", "n_embd", "d_model", "num_hidden_layers", "n_layer", "num_layers",
              "num_attention_heads", "n_head", "num_key_value_heads", "n_head_kv", "num_kv_heads",
              "multi_query_group_num", "head_dim", "intermediate_size", "ffn_dim", "moe_intermediate_size",
              "vocab_size", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim")
#: The keys a weight count reads, for naming them when the weights pass ``MAX_BYTES``.
WEIGHT_KEYS = ("hidden_size", "n_embd", "d_model", "num_hidden_layers", "n_layer", "num_layers",
               "num_attention_heads", "n_head", "head_dim", "intermediate_size", "ffn_dim", "moe_intermediate_size",
               "vocab_size", "num_local_experts", "num_experts", "n_routed_experts")
PIB = float(MAX_BYTES)


class Unbuildable(UserError):
    """A config no model is built from (``check``): the answer for ``--hf-overrides`` whatever else it sets."""


def _refuse(config: Mapping[str, Any], what: str) -> Unbuildable:
    return Unbuildable(str(hf_config.cannot_predict(config, what)))


def _stated(text: Mapping[str, Any], *keys: str) -> tuple[str, Any]:
    """The first of ``keys`` the config states, with its value (as written)."""
    for key in keys:
        if text.get(key) is not None:
            return key, text[key]
    return keys[0], None


def check(config: Mapping[str, Any], text: Mapping[str, Any], *, heads: int, kv_heads: int, head_dim: int,
          mla: bool, params: float, weight_bits: int) -> None:
    """Refuse (``Unbuildable``, in ``hf_config.cannot_predict``'s words naming the key and its value) a text config
    no model is built from: a dimension that is not whole, a head of no element, KV heads that do not divide the
    heads, weights above ``MAX_BYTES``, a maximum length above int64 or whose rotary cache is above ``MAX_BYTES``."""
    rope(config, text)
    for key in WHOLE_KEYS:
        value = text.get(key)
        if isinstance(value, float) and not value.is_integer():
            raise _refuse(config, f"{key} = {value!r} is not a whole number of elements")
    if head_dim < 1:
        hidden_key, hidden = _stated(text, "hidden_size", "n_embd", "d_model")
        heads_key = _stated(text, "num_attention_heads", "n_head")[0]
        raise _refuse(
            config, f"{hidden_key} = {hidden} over {heads_key} = {heads} gives a head_dim of {head_dim} (vLLM's "
                    f"{hidden_key} // {heads_key} when the config states no head_dim): an attention head of no "
                    "element, no model vLLM builds")
    if not mla and heads % kv_heads:
        kv_key = _stated(text, "num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num")[0]
        heads_key = _stated(text, "num_attention_heads", "n_head")[0]
        raise _refuse(
            config, f"{kv_key} = {kv_heads} does not divide {heads_key} = {heads} (grouped-query attention shares "
                    "each KV head among a whole number of query heads; vLLM's attention layers assert it)")
    weights = params * weight_bits / 8
    if weights > MAX_BYTES:
        stated = [(k, text[k]) for k in WEIGHT_KEYS if isinstance(text.get(k), (int, float))
                  and not isinstance(text.get(k), bool)]
        stated.sort(key=lambda kv: -float(kv[1]))  # the largest first: the one that ran away, as a rule
        shown = ", ".join(f"{k} = {v}" for k, v in stated)
        raise _refuse(
            config, f"{shown} give {params:.3g} parameters: {weights / PIB:.3g} PiB of weights at {weight_bits} "
                    "bits, above the 1 PiB no GPU node holds")
    max_len, length_key = hf_config.derived_max_model_len(text), _length_key(text)
    if max_len > MAX_LEN:
        raise _refuse(
            config, f"{length_key} = {text.get(length_key)} gives a maximum length of {max_len:.3g}, above int64 "
                    "(vLLM's positions are int64 tensors)")
    # the rotary cos/sin cache vLLM builds at the derived length ([length, head_dim] in the model dtype, 2 bytes at
    # least; ``memory.alloc_tail`` charges it to the weights for every model but MLA)
    rotary = max_len * head_dim * 2
    if not mla and rotary > MAX_BYTES:
        raise _refuse(
            config, f"{length_key} = {text.get(length_key)} gives a maximum length of {max_len:.3g}: the rotary "
                    f"cache vLLM builds at that length ({max_len:.3g} x head_dim {head_dim}) takes {rotary / PIB:.3g} "
                    "PiB, above the 1 PiB no GPU node holds")


def rope(config: Mapping[str, Any], text: Mapping[str, Any]) -> None:
    """Refuse a ``rope_scaling`` vLLM fails on while it loads the config, before any length or memory is derived
    (so no prediction of either stands): one that names no ``rope_type`` nor the legacy ``type``, which
    ``patch_rope_scaling_dict`` refuses right after applying ``--hf-overrides`` (transformers_utils/config.py@0.10.1;
    ``patch_rope_parameters_dict`` in the same words for ``rope_parameters``, @0.12.0), and a YaRN one without
    ``original_max_position_embeddings``, which the max-length derivation indexes (``_get_and_verify_max_len``,
    config/__init__.py@0.10.1, config/model.py@0.12.0: a KeyError). The words printed depend on the release (and on
    how the ModelConfig wraps them) and, for a config.json, on the transformers config class validating rope_scaling
    when it loads, before vLLM's patch (not read): so the line is ours, quoting what vLLM raises. Only 0.10.1 and
    0.12.0 were read; the refusal is not dated per release, hence "cannot predict" rather than a predicted refusal.
    An empty mapping is not judged (not read: whether transformers keeps it or drops it to None). An
    ``--hf-overrides`` without a type on 0.10.0-0.11.x never reaches here: it is vLLM's refusal
    (``hf_overrides.NO_ROPE_TYPE``), predicted; a config.json without one stays "cannot predict", as transformers'
    own validation raises first for the classes that validate (``_validate_default_rope_parameters``' missing
    ``rope_type``: KeyError, modeling_rope_utils.py@4.46.3, @4.57.1)."""
    scaling = text.get("rope_scaling")
    if scaling is not None and not isinstance(scaling, Mapping):
        raise _refuse(config, _not_a_mapping(scaling))
    if not isinstance(scaling, Mapping) or not scaling:
        return
    if "rope_type" not in scaling and "type" not in scaling:
        raise _refuse(
            config, f"rope_scaling = {dict(scaling)} names no rope_type (nor the legacy type): vLLM refuses it while "
                    "loading the config (\"rope_scaling should have a 'rope_type' key\" as 0.10.1 words it, "
                    "\"rope_parameters should have a 'rope_type' key\" as 0.12.0 does), before it derives any length")
    # a top-level original_max_position_embeddings is copied into the rope parameters from 0.12 (patch_rope_parameters,
    # transformers_utils/config.py@0.12.0) but not read by 0.10.1: a config with only that one is left as it was
    if (hf_config.rope_type(text) == "yarn" and scaling.get("original_max_position_embeddings") is None
            and text.get("original_max_position_embeddings") is None):
        raise _refuse(
            config, f"rope_scaling = {dict(scaling)} is YaRN without original_max_position_embeddings: vLLM's "
                    "max-length derivation indexes rope_scaling[\"original_max_position_embeddings\"] and fails with a "
                    "KeyError while building the config")


_JSON_KIND = {str: "string", list: "array", int: "number", float: "number", bool: "boolean"}


def _not_a_mapping(scaling: Any) -> str:
    """Why a ``rope_scaling`` that is not a JSON object loads no config: transformers' config class tests it with
    ``in`` and then ``rope_config_validation`` calls ``rope_scaling.get`` (configuration_llama.py@4.46.3 l.196-198,
    @4.57.1 l.212-214; modeling_rope_utils.py@4.46.3 l.561-566, @4.57.1 l.761-766): an AttributeError for a string
    or an array, a TypeError for a number (``"type" in 2.0``), so vLLM never gets a config; a class that does not
    validate hands it to vLLM's ``patch_rope_scaling_dict``, which tests the same keys and raises (no ``rope_type``
    key, transformers_utils/config.py@0.10.0 l.241-246). Not sized as a config without scaling."""
    kind = _JSON_KIND.get(type(scaling), type(scaling).__name__)
    return (f"rope_scaling is a JSON {kind} ({scaling!r:.40}), not an object: transformers' config class fails on it "
            "(rope_config_validation calls rope_scaling.get) before vLLM has a config")


def _length_key(text: Mapping[str, Any]) -> str:
    """The key the derived maximum length comes from (``hf_config.derived_max_model_len``'s choice)."""
    if isinstance(text.get("model_max_length"), (int, float)):
        return "model_max_length"
    present = [(float(text[k]), k) for k in hf_config.MAX_LEN_KEYS
               if isinstance(text.get(k), (int, float)) and not isinstance(text.get(k), bool)]
    return min(present)[1] if present else "max_position_embeddings"
