"""Where vLLM finds a checkpoint's quantization section in config.json: ``quantization_config``, else
``compression_config`` (older llm-compressor / compressed-tensors exports); and the KV-cache scheme a ModelOpt
section states (``kv_cache_scheme``), which ``kv_auto`` resolves ``--kv-cache-dtype auto`` from; and the section
each release reads for a ModelOpt checkpoint (``as_release``, ``readings``): ``hf_quant_config.json`` read from 0.10.1
only, ``producer`` / ``quantization.quant_algo`` mapped to a method from 0.10.1.

Every release modelled reads it the same way, in both places that decide the method and the weights:
- the model config: ``_parse_quant_hf_config`` (config.py@0.5.5 l.258-263, @0.8.5; config/model.py@0.11.0 l.857-861)
  and, from 0.14.0, ``_normalize_quantization_config`` (transformers_utils/model_arch_config_convertor.py@0.14.0
  l.139-142, @0.30.0 l.263-264): "compressed-tensors uses a "compression_config" key", read when
  ``quantization_config`` is None (absent or null);
- the loader: ``get_quant_config`` (model_loader/weight_utils.py@0.5.5 l.138-141, @0.30.0 l.273-275).
A multimodal config's ``text_config`` section is read only when the top level states none (``fold``), and by the
model config only from 0.10.2 (``TEXT_SECTION_SINCE``); the ModelOpt KV scheme from the top level only.
Applied by ``ModelSpec.from_hf_config`` to the text config ``hf_config`` reads, so every quantization reader
(``quant_config``, ``quant_exclusions``, ``mla_shape``) sees the section vLLM uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def fold(text: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """``text`` (the language-model config) with the section vLLM reads: the top-level ``quantization_config``
    whenever it states one (a multimodal config's ``text_config`` section is read only when the top level has none:
    ``get_quantization_config``, model_arch_config_convertor.py@0.14.0 l.175-182, @0.30.0 l.302-309;
    ``_verify_quantization``, config/__init__.py@0.10.2 l.1140-1144; ``get_quant_config``,
    model_loader/weight_utils.py@0.5.5 l.133-137, @0.30.0 l.268-272), else the top-level ``compression_config`` when
    neither states one; unchanged otherwise."""
    top = config.get("quantization_config")
    if top is not None:
        return text if text.get("quantization_config") == top else {**text, "quantization_config": top}
    if text.get("quantization_config") is not None:
        return text
    compression = config.get("compression_config")
    if compression is None:
        return text
    return {**text, "quantization_config": compression}


def kv_cache_scheme(config: Mapping[str, Any]) -> str | None:
    """The KV-cache quantization a ModelOpt checkpoint states, as ``get_kv_cache_quant_algo_string`` reads it
    (utils/torch_utils.py@0.14.0 l.239-289, @0.30.0) from the top-level config's ``quantization_config`` only
    (``resolve_kv_cache_dtype_string`` reads ``model_config.hf_config``: utils/torch_utils.py@0.14.0 l.310-314,
    @0.30.0 l.516-520, @0.34.0 l.527-531; nothing copies a ``text_config`` section up, the only assignment being the
    hf_quant_config.json merge, transformers_utils/config.py@0.30.0 l.831-843): ``config`` is the top level. For a
    method starting with "modelopt" (the stated ``quant_method``, or the one ``_normalize_quantization_config``
    writes for a ``producer.name`` of "modelopt", transformers_utils/model_arch_config_convertor.py@0.14.0
    l.145-160), the first of ``kv_cache_scheme`` and ``kv_cache_quant_algo`` under ``quantization`` (else the
    section itself), then the section's own. "fp8" for the text "FP8" or a static 8-bit float scheme (``dynamic``
    false, ``num_bits`` 8, ``type`` "float"); "nvfp4" for the text "NVFP4" or a 4-bit float scheme (mapped from 0.20.0
    only: ``kv_auto.resolved``); None for no scheme or another method (any other value resolves to auto in every
    release)."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None
    method = str(qc.get("quant_method") or "").lower()
    producer = qc.get("producer")
    if not method and isinstance(producer, Mapping) and producer.get("name") == "modelopt":
        method = "modelopt"
    if not method.startswith("modelopt"):
        return None
    inner = qc.get("quantization", qc)
    inner = inner if isinstance(inner, Mapping) else {}
    algo = (inner.get("kv_cache_scheme") or qc.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo")
            or qc.get("kv_cache_quant_algo"))
    if isinstance(algo, Mapping):
        if algo.get("type") != "float":
            return None
        if algo.get("dynamic") is False and algo.get("num_bits") == 8:
            return "fp8"
        return "nvfp4" if algo.get("num_bits") == 4 else None
    if isinstance(algo, str) and algo.lower() in ("fp8", "nvfp4"):
        return algo.lower()
    return None


Version = tuple[int, int, int]

#: The key ``hub`` adds to a ``quantization_config`` read from ModelOpt's ``hf_quant_config.json`` (ModelOpt 0.29 and
#: earlier keep the scheme there, beside a config.json without one), with that file's name as its value.
FROM_FILE = "_read_from"
#: ``get_config`` sets that file's mapping as the config's ``quantization_config`` from 0.10.1
#: (transformers_utils/config.py@0.10.1 l.497-505, @0.30.0 l.829-841; absent @0.10.0), and the model config maps
#: ModelOpt's ``producer`` to a ``quant_method`` from the same release (``_parse_quant_hf_config``,
#: config/__init__.py@0.10.1 l.1064-1084; absent @0.10.0, where a section naming no method is "").
MODELOPT_SINCE: Version = (0, 10, 1)
#: ``_normalize_quantization_config`` (transformers_utils/model_arch_config_convertor.py@0.14.0 l.139-165) upper-cases
#: ``quant_algo`` and takes FP8_PER_CHANNEL_PER_TOKEN and FP8_PB_WO as "modelopt" too; 0.10.1-0.13.0 take the
#: exact texts "FP8" and "NVFP4" only (config/model.py@0.11.0 l.863-876, @0.13.0).
MODELOPT_UPPER_SINCE: Version = (0, 14, 0)
#: A ``quantization`` section holding ``modelopt_quant_config`` counts as ModelOpt without a ``producer``
#: (``is_legacy_modelopt``, model_arch_config_convertor.py@0.26.0 l.217-223; absent @0.25.0).
MODELOPT_LEGACY_SINCE: Version = (0, 26, 0)
#: MIXED_PRECISION maps to "modelopt_mixed" (model_arch_config_convertor.py@0.33.0 l.249-265; absent @0.32.0).
MODELOPT_MIXED_SINCE: Version = (0, 33, 0)
#: Before 0.10.1, for a checkpoint whose hf_quant_config.json states an algorithm and no ``--quantization modelopt``:
#: the model config builds no quantization config, and its tensors include ModelOpt's per-layer scales
#: (``weight_scale``, ``input_scale``), which the 16-bit layers have no parameter for (``params_dict[name]`` in
#: ``LlamaForCausalLM.load_weights``, models/llama.py@0.9.0 l.436-452, @0.10.0 l.447-465, after
#: ``maybe_remap_kv_scale_name`` leaves the name untouched, model_loader/weight_utils.py@0.9.0 l.721-781). With the
#: flag those releases read the file (``FLAG_READS_SINCE``, ``flagged``).
NOT_READ = ("cannot predict: without --quantization modelopt (get_quant_config, weight_utils.py@0.9.2), vLLM releases "
            "before 0.10.1 do not read hf_quant_config.json; they build the 16-bit model config.json describes "
            "and load the checkpoint's ModelOpt tensors (and their weight_scale / input_scale, which no 16-bit layer "
            "has: llama.py@0.9.0 load_weights) into it, which this tool does not predict")
#: ``--quantization modelopt`` makes ``get_quant_config`` snapshot-download the repository's ``*.json`` and read the
#: file ``ModelOptFp8Config.get_config_filenames()`` names, ``["hf_quant_config.json"]``, building the class from it
#: when ``config["producer"]["name"] == "modelopt"`` (model_loader/weight_utils.py@0.6.1, @0.6.4, @0.9.2 l.170-215,
#: @0.10.0; modelopt.py@0.9.2 l.65-66); "modelopt" is registered from 0.6.1 (absent from 0.6.0's methods).
FLAG_READS_SINCE: Version = (0, 6, 1)
#: What that class (``ModelOptFp8Config``, the one ``--quantization modelopt`` builds before 0.10.1) does with an
#: NVFP4 file: 0.8.0-0.10.0 take "NVFP4" in ``QUANT_ALGOS`` and build FP8 layers that are not fp8-serialized
#: (``is_checkpoint_fp8_serialized = "FP8" in quant_method``, modelopt.py@0.9.2 l.69-79) for packed 4-bit tensors;
#: 0.6.1-0.7.3 refuse it (``modelopt_class.class_refusal``).
FLAG_NOT_FP8 = ("cannot predict: --quantization modelopt on vLLM before 0.10.1 builds ModelOptFp8Config from "
                "hf_quant_config.json (weight_utils.py@0.9.2 get_quant_config), whose algorithm here is not FP8: its "
                "16-bit (not fp8-serialized) layers take the checkpoint's packed tensors (modelopt.py@0.9.2 "
                "from_config), which this tool does not predict")
#: vLLM's words refusing a ModelOpt algorithm the release does not map (raised before the method is looked at).
UNKNOWN_ALGO = "ValueError: Unknown ModelOpt quant algo: "
#: The model config reads a multimodal config's ``text_config`` section when the top level has none from 0.10.2
#: (``_verify_quantization``, config/__init__.py@0.10.2 l.1140-1144); before, ``_parse_quant_hf_config`` reads the
#: top level only (config.py@0.9.0 l.822-825, config/__init__.py@0.10.1 l.1064-1068, l.1098), so the method is
#: None and no quantization config is built (``_get_quantization_config`` returns None), though the loader would
#: have read it (weight_utils.py@0.10.1 l.161-164).
TEXT_SECTION_SINCE: Version = (0, 10, 2)
TEXT_NOT_READ = ("cannot predict: vLLM releases before 0.10.2 read quantization_config from the top-level config only "
                 "(_parse_quant_hf_config, config/__init__.py@0.10.1); this checkpoint states it in its text_config, "
                 "so vLLM builds the 16-bit model and loads the checkpoint's quantized tensors into it, which this "
                 "tool does not predict")
#: The readings no start is predicted for (``readings``' refusals that are not vLLM's).
UNREAD = (NOT_READ, TEXT_NOT_READ)
_BOUNDS = ((0, 0, 0), MODELOPT_SINCE, MODELOPT_UPPER_SINCE, MODELOPT_LEGACY_SINCE, MODELOPT_MIXED_SINCE)


def as_release(qc: Any, version: Version) -> tuple[Any, str | None]:
    """(the ``quantization_config`` release ``version`` reads, vLLM's refusal of it or None).

    Before 0.10.1 a section ``hub`` read from hf_quant_config.json is not read at all: vLLM builds the 16-bit model
    config.json describes and loads the checkpoint's ModelOpt tensors into it, which this tool does not predict
    (``NOT_READ``) when the file states an algorithm (None otherwise: sized as config.json says); a ModelOpt section
    in config.json keeps what it states. From 0.10.1 a section whose
    ``producer.name`` is "modelopt" (or a legacy one, 0.26.0+) gets ``quant_method`` from ``quantization.quant_algo``:
    "modelopt" for FP8, "modelopt_fp4" for NVFP4, "modelopt_mixed" for MIXED_PRECISION (0.33.0+); any other stated
    algorithm is refused ("Unknown ModelOpt quant algo"), an absent one leaves the section as it is. The same mapping
    whichever file the section came from. A ``producer`` or ``quantization`` that is no object is left to the other
    readers (vLLM's ``.get`` on it raises: no start this tool predicts either way)."""
    if not isinstance(qc, Mapping):
        return qc, None
    from_file = FROM_FILE in qc
    raw = {k: v for k, v in qc.items() if k != FROM_FILE}
    if version < MODELOPT_SINCE:
        if from_file and isinstance(raw.get("quantization"), Mapping) and raw["quantization"].get("quant_algo"):
            return None, NOT_READ
        return (None if from_file else raw), None
    producer = raw.get("producer", {})
    inner = raw.get("quantization", {})
    if not isinstance(producer, Mapping) or not isinstance(inner, Mapping):
        return raw, None
    legacy = version >= MODELOPT_LEGACY_SINCE and "modelopt_quant_config" in inner
    algo = inner.get("quant_algo")
    if not (producer.get("name") == "modelopt" or legacy) or algo is None:
        return raw, None
    said = str(algo).upper() if version >= MODELOPT_UPPER_SINCE else algo
    fp8 = ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO") if version >= MODELOPT_UPPER_SINCE else ("FP8",)
    if said in fp8:
        return {**raw, "quant_method": "modelopt"}, None
    if said == "NVFP4":
        return {**raw, "quant_method": "modelopt_fp4"}, None
    if said == "MIXED_PRECISION" and version >= MODELOPT_MIXED_SINCE:
        return {**raw, "quant_method": "modelopt_mixed"}, None
    return raw, f"{UNKNOWN_ALGO}{algo}"


def flagged(releases: Sequence[tuple[Version, Any]], version: Version, quantization: str | None) -> Any:
    """The reading ``--quantization`` selects where it changes what the release reads, else None: before 0.10.1
    (from ``FLAG_READS_SINCE``) ``--quantization modelopt`` reads hf_quant_config.json, as 0.10.1 reads it without
    the flag, so the span that would be ``NOT_READ`` takes the 0.10.1 reading when that is ModelOpt FP8 (the class
    the flag builds), else ``FLAG_NOT_FP8``. ``releases``: ``ModelSpec.releases`` (first release, spec or text)."""
    if quantization != "modelopt" or not FLAG_READS_SINCE <= version < MODELOPT_SINCE:
        return None
    chosen = next((spec for since, spec in reversed(releases) if since <= version), None)
    if chosen != NOT_READ:
        return None
    read = next((spec for since, spec in releases if since >= MODELOPT_SINCE), None)
    if isinstance(read, str) or getattr(read, "quantization", None) != "modelopt":
        return FLAG_NOT_FP8
    return read


def readings(text: Mapping[str, Any], top: Mapping[str, Any] | None = None,
             ) -> list[tuple[Version, dict[str, Any], str | None]] | None:
    """``text`` (the language-model config, folded) as each release span reads its ``quantization_config``
    (``as_release``): (the first release of the span, the config then, vLLM's refusal), one entry per span that
    reads it differently from the one before; None when every release reads the config as it is. ``top``: the
    top-level config; a section only its ``text_config`` states is not read before 0.10.2 (``TEXT_NOT_READ``)."""
    qc = text.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None
    inner_only = top is not None and top.get("quantization_config") is None and top.get("compression_config") is None
    out: list[tuple[Version, dict[str, Any], str | None]] = []
    for since in sorted(_BOUNDS + ((TEXT_SECTION_SINCE,) if inner_only else ())):
        read, refusal = as_release(qc, since)
        if inner_only and since < TEXT_SECTION_SINCE:
            read, refusal = None, TEXT_NOT_READ
        config = {k: v for k, v in text.items() if k != "quantization_config"}
        if read is not None:
            config["quantization_config"] = read
        if not out or (config, refusal) != out[-1][1:]:
            out.append((since, config, refusal))
    if len(out) == 1 and out[0][1] == text and out[0][2] is None:
        return None
    return out
