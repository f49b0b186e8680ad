"""Read a Hugging Face ``config.json`` dict the way vLLM reads it for its memory budget.

vLLM derives the default ``max_model_len`` and the KV-cache shape from a handful of keys whose
names and rules differ between model families; getting one wrong moves the predicted KV cache
by a factor (head_dim on Gemma/Qwen3, the rope factor on YaRN models). Rules follow
``vllm/config.py::_get_and_verify_max_len`` and ``ModelConfig.get_head_size`` (0.6 – 0.19).
Pure: callers pass the parsed JSON in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import architectures, config_defaults, mla_types, stray_text

# The keys vLLM scans for the model's maximum length; the smallest present value wins.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# Rope types whose max_position_embeddings is already the long-context length.
UNSCALED_ROPE_TYPES = frozenset({"su", "longrope", "llama3", "default", "mrope"})
# vLLM's own fallback when no length key is present (``_get_and_verify_max_len``: ``default_max_len = 2048``,
# vllm/config.py@0.6.0, config/__init__.py@0.10.1): a rule of vLLM's, not a guess of ours.
DEFAULT_MAX_LEN = 2048
# Families whose layers alternate local (sliding-window) and global attention without a ``layer_types``
# list: every Nth layer is global, as the classes build layer_types (``(i + 1) % N``, configuration_gemma2.py /
# gpt_oss.py N = 2, gemma3.py / cohere2.py N = sliding_window_pattern defaulting to 6 / 4, @4.57.1).
GLOBAL_EVERY = {"gemma2": 2, "gemma3_text": 6, "gemma3": 6, "cohere2": 4, "gpt_oss": 2}
# Families that apply ``sliding_window`` to every layer when it is set (Mistral-7B-v0.1).
ALL_LAYERS_SLIDING = frozenset({"mistral", "mixtral"})
# Keys that mark layers without a per-token KV cache (state-space, linear or chunked-local attention):
# their memory is not K and V per token, and guessing would be silently wrong.
UNMODELLED_LAYER_KEYS = (
    "layers_block_type",
    "hybrid_override_pattern",
    "ssm_state_size",
    "mamba_d_state",
    "linear_attn_config",
    "full_attention_interval",
    "attn_layer_period",
    "attention_chunk_size",
    "cross_attention_layers",
)


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language-model part: multimodal configs nest it under ``text_config`` (or ``llm_config``), with
    the defaults transformers fills in for keys the checkpoint leaves out (vLLM reads the filled config)."""
    architectures.check_family(config)  # the name decides first: a hybrid or unknown family is never sized
    check_architectures(config)
    if config.get("is_encoder_decoder") is True or "encoder_layers" in config:
        layers = ", ".join(f"{k} {config[k]}" for k in ("encoder_layers", "decoder_layers") if k in config)
        raise cannot_predict(config, f"an encoder-decoder model{f' ({layers})' if layers else ''}: its encoder and "
                                     "cross-attention KV cache are not modelled")
    if stray_text.text_only(config):  # a text class keeps a stray sub-config as a plain attribute (``stray_text``)
        return with_defaults(config)
    for key in ("text_config", "llm_config", "language_config"):
        inner = config.get(key)
        if isinstance(inner, Mapping) and ("hidden_size" in inner or "num_hidden_layers" in inner):
            # A tie the composite states is the model's (Qwen2.5-VL states it there): it answers before the text
            # class's default does (``tie_word_embeddings``).
            stated_tie = {"tie_word_embeddings": config["tie_word_embeddings"]} if (
                inner.get("tie_word_embeddings") is None and config.get("tie_word_embeddings") is not None) else {}
            # Some checkpoints keep quantization / dtype only at the top level (and errors name the architecture).
            outer = {k: config[k] for k in ("quantization_config", "torch_dtype", "architectures")
                     if k not in inner and k in config}
            return with_defaults({**inner, **stated_tie, **outer}, parent=config)
    return with_defaults(config)


def with_defaults(config: Mapping[str, Any], parent: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``config`` with its class's defaults under the keys it omits; ``parent``: the composite it is text_config of."""
    return {**config_defaults.class_defaults(config, parent), **config}


def cannot_predict(config: Mapping[str, Any], what: str) -> UserError:
    """The one error for an architecture the memory model cannot size: a guess would be a silent wrong number."""
    name = architectures.first_architecture(config) or str(config.get("model_type") or "") or "this model"
    return UserError(f"cannot predict {name}: {what}")


def check_architectures(config: Mapping[str, Any]) -> None:
    """Refuse a config that names no architecture: vLLM dispatches on ``architectures`` and refuses an empty one
    ("No model architectures are specified", ``ModelRegistry.inspect_model_cls``), so sizing it as some family would
    predict a start that never happens. A plain string is not the list transformers writes; not guessed at either."""
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and all(isinstance(a, str) and a.strip() for a in archs):
        return
    if isinstance(archs, str):
        raise cannot_predict(config, f"architectures is the string {archs!r}, not a list of class names")
    stated = "missing" if "architectures" not in config else f"{_json(archs)}"
    raise cannot_predict(config, f"config.json names no architecture (architectures: {stated}); vLLM finds no model "
                                 "class and refuses to start (recent releases: No model architectures are specified)")


def _json(value: Any) -> str:
    return "null" if value is None else "[]" if value == [] else repr(value)


def require_int(config: Mapping[str, Any], *keys: str, name: str = "config.json") -> int:
    """The first present key as a positive int; a missing one is ``cannot predict <arch>: <what is missing>``."""
    for key in keys:
        value = config.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) <= 0:
                raise UserError(f"{name}: {key} must be a positive integer, got {value!r}")
            return int(value)
    raise cannot_predict(config, f"{' / '.join(keys)} missing (the decoder-only keys this model is sized from)")


def tie_word_embeddings(text: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether the LM head shares the embedding's weights: the key as stated (text config first; ``text`` already
    carries its class's default from ``config_defaults``), else the composite's class default. A type the table
    does not hold keeps PretrainedConfig's True (configuration_utils.py@4.46.3 ``kwargs.pop("tie_word_embeddings",
    True)``, @4.57.1 keyword default True): the base default of every 4.x class that sets none (gpt2, falcon,
    starcoder2). A config naming no model_type and no architecture the table maps is a catalog entry's abbreviation,
    which states the key whenever it is True."""
    for source in (text, config):
        if source.get("tie_word_embeddings") is not None:
            return bool(source["tie_word_embeddings"])
    composite = config_defaults.class_defaults(config).get("tie_word_embeddings")
    if composite is not None:
        return bool(composite)
    return bool(text.get("model_type") or config.get("model_type"))


def num_kv_heads(config: Mapping[str, Any], num_heads: int) -> int:
    """KV heads: GQA key names vary; absent means multi-head attention (one KV head per head): the classes derive it
    so (LlamaConfig@4.46.3 ``if num_key_value_heads is None: num_key_value_heads = num_attention_heads``) and so does
    vLLM for a class without the key (``ModelConfig.get_total_num_kv_heads``). A class whose default is a number
    (Mistral's 8, Qwen3-MoE's 4, Gemma 3's 4) has it filled in by ``with_defaults`` first."""
    for key in ("num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num"):
        value = config.get(key)
        if value:
            return int(value)
    if config.get("multi_query") is True:
        return 1
    return num_heads


def head_dim(config: Mapping[str, Any], hidden_size: int, num_heads: int) -> int:
    """``head_dim`` when the config states it (Gemma, Qwen3, Llama-3.2; a class default is filled in first), else
    hidden / heads, as the classes derive it (LlamaConfig@4.46.3 ``self.hidden_size // self.num_attention_heads``)
    and vLLM's ``ModelConfig.get_head_size`` does."""
    explicit = config.get("head_dim")
    if explicit:
        return int(explicit)
    if config.get("qk_nope_head_dim") and config.get("qk_rope_head_dim"):  # MLA (DeepSeek)
        return int(config["qk_nope_head_dim"]) + int(config["qk_rope_head_dim"])
    return hidden_size // num_heads


def rope_type(config: Mapping[str, Any]) -> str | None:
    """The rope scaling type after vLLM's patch: ``type`` → ``rope_type``, ``su`` → ``longrope``."""
    scaling = config.get("rope_scaling")
    if not isinstance(scaling, Mapping):
        return None
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "su":
        return "longrope"
    if "mrope_section" in scaling and kind in (None, "default", "mrope"):
        return "mrope"
    return str(kind) if kind is not None else "default"


def derived_max_model_len(config: Mapping[str, Any]) -> int:
    """The default ``max_model_len``: smallest length key, times the rope factor except su/longrope/llama3.

    YaRN restarts from ``original_max_position_embeddings``; Gemma-3 is already scaled.
    """
    present = [int(config[k]) for k in MAX_LEN_KEYS if isinstance(config.get(k), (int, float))]
    derived = float(min(present)) if present else float(DEFAULT_MAX_LEN)
    if isinstance(config.get("model_max_length"), (int, float)):  # Command-R / Cohere: this key wins
        derived = float(config["model_max_length"])
    kind = rope_type(config)
    model_type = str(config.get("model_type", ""))
    if kind is not None and kind not in UNSCALED_ROPE_TYPES and "gemma3" not in model_type:
        scaling = config["rope_scaling"]
        factor = float(scaling.get("factor", 1.0))  # vLLM: _get_and_verify_max_len, .get("factor", 1.0)
        if kind == "yarn" and scaling.get("original_max_position_embeddings"):
            derived = float(scaling["original_max_position_embeddings"])
        derived *= factor
    return int(derived)


@dataclass(frozen=True)
class LengthFacts:
    """The config.json facts vLLM's max-length check reads, kept as the JSON has them so ``vllm.model_len`` can
    apply each release's rule (and print the numbers as vLLM prints them: 4.0 is a float in Python too)."""

    keys: tuple[tuple[str, int | float], ...]  # the MAX_LEN_KEYS present, in vLLM's scan order
    model_max_length: int | float | None = None
    rope_type: str | None = None  # after vLLM's patch (``rope_type``)
    factor: int | float | None = None  # rope_scaling.factor as written (None: absent)
    original: int | float | None = None  # rope_scaling.original_max_position_embeddings (YaRN's base)
    has_rope: bool = False  # the config carries RoPE parameters (rope_theta / rope_scaling / rope_parameters)
    model_type: str = ""


# Families whose transformers config class fills in a default ``rope_theta`` when config.json leaves it out: from
# 0.12 vLLM turns that into ``rope_parameters`` and scales the derived length by 1.0 (it then prints as a float).
_ROPE_FAMILIES = ("llama", "mistral", "mixtral", "qwen", "gemma", "phi3", "cohere", "deepseek", "gpt_oss", "gptoss",
                  "granite", "olmo", "starcoder2", "internlm", "exaone", "glm", "minicpm", "yi")


def length_facts(config: Mapping[str, Any]) -> LengthFacts:
    """What ``_get_and_verify_max_len`` reads from the (text) config, for ``vllm.model_len``."""
    keys = tuple((k, config[k]) for k in MAX_LEN_KEYS
                 if isinstance(config.get(k), (int, float)) and not isinstance(config.get(k), bool))
    scaling = config.get("rope_scaling") or config.get("rope_parameters")
    scaling = scaling if isinstance(scaling, Mapping) else {}
    family = model_type(config) or str((config.get("architectures") or [""])[0]).lower()
    factor, original = scaling.get("factor"), scaling.get("original_max_position_embeddings")
    has_rope = bool(scaling) or "rope_theta" in config or family.startswith(_ROPE_FAMILIES)
    mml = config.get("model_max_length")
    return LengthFacts(keys=keys, model_max_length=mml if isinstance(mml, (int, float)) else None,
                       rope_type=rope_type(config), factor=factor if isinstance(factor, (int, float)) else None,
                       original=original if isinstance(original, (int, float)) else None, has_rope=has_rope,
                       model_type=str(config.get("model_type") or family))


def sliding_window(config: Mapping[str, Any]) -> int | None:
    """The attention window when the model actually uses one (Qwen2 ships it disabled)."""
    if config.get("use_sliding_window") is False:
        return None
    window = config.get("sliding_window")
    if isinstance(window, list):
        windows = [int(w) for w in window if w]
        return min(windows) if windows else None
    return int(window) if window else None


def model_type(config: Mapping[str, Any]) -> str:
    """``model_type``, or the architecture name's family when a catalog entry omits it."""
    kind = str(config.get("model_type") or "")
    if kind:
        return kind
    arch = str((config.get("architectures") or [""])[0]).lower()
    for family in ("gemma3", "gemma2", "cohere2", "gptoss", "mixtral", "mistral"):
        if arch.startswith(family):
            return "gpt_oss" if family == "gptoss" else family
    return ""


def sliding_layers(config: Mapping[str, Any], layers: int) -> int:
    """How many layers attend only within ``sliding_window`` (vLLM's hybrid KV-cache manager keeps just the
    window for them); the rest attend to the whole sequence. Raises ``cannot predict`` for layer kinds
    without a per-token KV cache."""
    for key in UNMODELLED_LAYER_KEYS:
        if config.get(key) not in (None, False, [], 0):
            raise cannot_predict(config, f"{key} marks layers whose cache is not per-token K/V; not modelled")
    window = sliding_window(config)
    kinds = config.get("layer_types")
    if isinstance(kinds, list) and kinds:
        unknown = sorted({str(k) for k in kinds} - {"full_attention", "sliding_attention"})
        if unknown:
            raise cannot_predict(config, f"layer_types {', '.join(unknown)} have no per-token KV model")
        if len(kinds) != layers:
            raise cannot_predict(config, f"layer_types lists {len(kinds)} layers but num_hidden_layers is {layers}")
        count = kinds.count("sliding_attention")
        if count and window is None:
            raise cannot_predict(config, "layer_types has sliding_attention layers but no sliding_window")
        return count
    if window is None:
        return 0
    family = model_type(config)
    if family in GLOBAL_EVERY:
        every = int(config.get("sliding_window_pattern") or GLOBAL_EVERY[family])
        return layers - layers // every
    return layers if family in ALL_LAYERS_SLIDING else 0


def latent_dims(config: Mapping[str, Any]) -> tuple[int, int] | None:
    """(kv_lora_rank, qk_rope_head_dim) of DeepSeek-style low-rank K/V projections (the weights), MLA or not; None
    for ordinary projections."""
    rank = config.get("kv_lora_rank")
    if not rank:
        architectures.check_mla(config)
        return None
    rope = config.get("qk_rope_head_dim")
    if not rope:
        raise cannot_predict(config, "kv_lora_rank is set (MLA) but qk_rope_head_dim is missing")
    return int(rank), int(rope)


def mla_dims(config: Mapping[str, Any]) -> tuple[int, int] | None:
    """(kv_lora_rank, qk_rope_head_dim) when vLLM caches the latent: one compressed "head" per token and layer; None
    for K/V per head. vLLM decides by model_type (``mla_types``): MiniCPM3's ``kv_lora_rank`` is per-head K/V at
    qk_nope + qk_rope (``head_dim``); a type no read release lists and whose attention was not read is not sized."""
    dims = latent_dims(config)
    if dims is None:
        return None
    kind = config_defaults.config_type(config) or model_type(config)
    if kind in mla_types.PER_HEAD:
        return None
    if kind not in mla_types.EVER:
        raise cannot_predict(config, f"kv_lora_rank on model_type {kind or '(none)'}: no read vLLM release runs it as "
                                     "MLA (is_deepseek_mla lists other types), and its attention class was not read")
    return dims


# MoE classes whose routed experts are ``intermediate_size`` wide (they have no ``moe_intermediate_size``): vLLM's
# mixtral.py / phimoe.py / granitemoe.py / gpt_oss.py / olmoe.py build each expert with ``config.intermediate_size``
# (MixtralConfig, PhimoeConfig, GraniteMoeConfig, GptOssConfig, OlmoeConfig have no moe_intermediate_size, 4.57.1).
EXPERTS_USE_INTERMEDIATE = frozenset({"mixtral", "phimoe", "granitemoe", "gpt_oss", "olmoe"})


def num_experts(config: Mapping[str, Any]) -> tuple[int, int, int | None]:
    """(experts, experts per token, per-expert intermediate size) — (0, 0, None) for dense models. An MoE config
    missing the top-k, or the expert width where its class has one, is ``cannot predict`` (the class defaults are
    already filled in by ``with_defaults``)."""
    experts = config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts") or 0
    per_token = config.get("num_experts_per_tok") or config.get("experts_per_token") or config.get("moe_topk") or 0
    inter = config.get("moe_intermediate_size")
    if experts and not per_token:
        raise cannot_predict(config, "num_experts_per_tok missing (the experts each token is routed to)")
    if experts and not inter and (config_defaults.config_type(config) or model_type(config)) not in \
            EXPERTS_USE_INTERMEDIATE:
        raise cannot_predict(config, "moe_intermediate_size missing (the routed experts' width)")
    return int(experts), int(per_token), int(inter) if inter else None


def intermediate_size(config: Mapping[str, Any], hidden: int) -> int:
    """The dense MLP width: ``intermediate_size`` (``ffn_dim`` for OPT), else the width the class derives when its
    own key is None: GPT2Config / GPTBigCodeConfig ``n_inner`` None -> 4 x hidden (``inner_dim = config.n_inner if
    config.n_inner is not None else 4 * hidden_size``, transformers' modeling_gpt2.py / modeling_gpt_bigcode.py@4.46.3,
    which vLLM's ports follow), FalconConfig ``ffn_hidden_size`` None -> hidden x 4 (configuration_falcon.py@4.46.3
    ``__init__``). Anything else is ``cannot predict``: 4 x hidden was a guess."""
    for key in ("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size"):
        if config.get(key):
            return int(config[key])
    kind = config_defaults.config_type(config) or str(config.get("model_type") or "")
    if kind in ("gpt2", "gpt_bigcode", "falcon"):
        return 4 * hidden
    raise cannot_predict(config, "intermediate_size missing (the MLP width; its config class gives no default "
                                 "this project has read)")


def torch_dtype(config: Mapping[str, Any]) -> str:
    """The checkpoint's dtype as ``--dtype auto`` starts from: none stated is float32 (_get_and_verify_dtype
    ``config_dtype = torch.float32``, vllm/config.py@0.6.4); what a release runs float32 in is ``dtype_support``'s
    (float16 or bfloat16 by release, model_type and card)."""
    return str(config.get("torch_dtype") or config.get("dtype") or "float32").replace("torch.", "")
