"""The RoPE scaling types each release's ``get_rope`` builds: any other one crashes vLLM while it builds the model.

``get_rope`` dispatches on the config's scaling type and ends in ``raise ValueError(f"Unknown RoPE scaling type
{scaling_type}")`` (model_executor/layers/rotary_embedding.py@0.5.5 l.873, @0.6.3 l.1003, @0.8.5 l.1596, @0.10.0
l.1965; rotary_embedding/__init__.py@0.10.1 l.188, @0.12.0 l.290, @0.30.0 l.346, @0.34.0 l.350). Nothing before it
refuses the name: the max-length derivation multiplies by the factor whatever the type, transformers' config
validation only warns on a type it has no validator for (``rope_config_validation``, modeling_rope_utils.py@4.46.3,
@4.57.1 l.766-773; ``validate_rope``, @5.5.3 l.796-804), and vLLM's ``patch_rope_scaling_dict`` (0.6.4+) renames only
``type`` -> ``rope_type``, ``su`` -> ``longrope`` and ``mrope`` -> ``default`` (transformers_utils/config.py@0.6.4
l.109-123, @0.10.0 l.231-254, @0.12.0 l.328-354). The crash comes once the engine is configured, as the model's
layers are constructed (before any weight is loaded), so only a config-time refusal, or the free-memory check that
runs before ``load_model``, ends such a start first; no outcome class is a crash while building the model, so the
estimate says "cannot predict" in those words rather than "fits".

The sets below were read from every wheel 0.5.5-0.34.0 (a release not read takes the last read before it). The type
read is the one after vLLM's patch (``hf_config.rope_type``: ``su`` is ``longrope``, an ``mrope_section`` config is
``mrope``, not judged here: Qwen2-VL's own config class renames it). Models whose vLLM class rewrites the type before
calling ``get_rope`` (DeepSeek-V2/V3's ``rope_scaling["rope_type"] = "deepseek_yarn"``, models/deepseek_v2.py@0.10.0
l.298, @0.5.5 l.244 as ``type``; sarvam.py, bailing_moe_v3.py, AXK1.py, param2moe.py, openpangu.py@0.34.0 do the
same) are not judged, nor is a model without RoPE (not enumerated: such a config is still "cannot predict").
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

_V055 = frozenset({"llama3", "linear", "dynamic", "yarn", "deepseek_yarn", "su", "longrope"})
_V064 = frozenset({"llama3", "default", "linear", "dynamic", "yarn", "deepseek_yarn", "longrope"})
_V090 = _V064 | {"mllama4", "ntk"}
_V120 = _V090 | {"xdrope", "deepseek_llama_scaling"}
_V160 = _V120 | {"openpangu"}
_V190 = _V160 | {"proportional"}
#: (first release, the types its ``get_rope`` dispatches), newest first: 0.6.1 adds ``mrope``; 0.6.4 adds ``default``
#: and drops ``su`` (the config patch renames it); 0.8.3 ``mllama4``; 0.9.0 ``ntk``; 0.12.0 ``xdrope`` and
#: ``deepseek_llama_scaling``; 0.16.0 ``openpangu``; 0.19.0 ``proportional``; 0.30.0 ``bailing_mrope``, without
#: ``xdrope``.
DISPATCHED: tuple[tuple[tuple[int, int, int], frozenset[str]], ...] = (
    ((0, 30, 0), (_V190 - {"xdrope"}) | {"bailing_mrope"}),
    ((0, 19, 0), _V190),
    ((0, 16, 0), _V160),
    ((0, 12, 0), _V120),
    ((0, 9, 0), _V090),
    ((0, 8, 3), _V064 | {"mllama4"}),
    ((0, 6, 4), _V064),
    ((0, 6, 1), _V055 | {"mrope"}),
    ((0, 0, 0), _V055),
)
#: Architecture name prefixes whose vLLM model sets its own scaling type before ``get_rope`` (module docstring).
REWRITES_TYPE = ("Deepseek", "Sarvam", "BailingMoeV3", "AXK1", "Param2", "OpenPangu", "PanguUltraMoE")


def dispatched(version: str | None) -> frozenset[str]:
    """The scaling types the release's ``get_rope`` builds (the newest release known when None)."""
    v = parse_version(version) or NEWEST_RELEASE
    return next(types for since, types in DISPATCHED if v >= since)


def crash(model: ModelSpec, version: str | None) -> str | None:
    """"cannot predict" words for a scaling type the release's ``get_rope`` raises on; None when it builds it (or the
    spec keeps no length facts, the model rewrites the type, or the config's type is ``default``/``mrope``/absent)."""
    kind = model.length.rope_type if model.length is not None else None
    if kind is None or kind == "mrope" or model.architecture.startswith(REWRITES_TYPE):
        return None
    if kind == "default" and "default" not in dispatched(version):  # 0.5.5-0.6.3: not read whether a class drops it
        return None
    if kind in dispatched(version):
        return None
    label = version or "(newest)"
    return (f"cannot predict {model.architecture}: rope_scaling type {kind!r}: vLLM {label} raises 'Unknown RoPE "
            f"scaling type {kind}' while building the model (get_rope dispatches only "
            f"{', '.join(sorted(dispatched(version)))})")


def vllm_error(model: ModelSpec, version: str | None) -> str | None:
    """The exception line vLLM prints where ``crash`` holds (for the rehearsal pod, which plays the crash):
    ``get_rope``'s own words, raised while the model is constructed (after every config check, before any weight is
    loaded)."""
    if crash(model, version) is None:
        return None
    return f"ValueError: Unknown RoPE scaling type {model.length.rope_type if model.length else ''}"
