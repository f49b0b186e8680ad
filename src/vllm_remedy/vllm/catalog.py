"""The model catalog (package data) and the spec type the memory model works on; the GPU catalog is ``gpu_catalog``.

Why package data: the numbers (torch-visible GiB per card, config facts per model) change with new
hardware and releases, and reviewers should be able to check them against logs without reading code.
The YAML files are read once (the one file read allowed in this layer) and cached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import (
    architectures,
    config_bounds,
    config_sizes,
    hf_config,
    kv_auto,
    modelopt_class,
    quant_config,
    qwen2_vl_tower,
    shapes,
    stray_text,
)
from vllm_remedy.vllm.catalog_data import load as _load

# GpuSpec, gpu and find_gpu are imported from this module across the project: re-exported from gpu_catalog.
from vllm_remedy.vllm.gpu_catalog import GpuSpec as GpuSpec
from vllm_remedy.vllm.gpu_catalog import find_gpu as find_gpu
from vllm_remedy.vllm.gpu_catalog import gpu as gpu
from vllm_remedy.vllm.mla_shape import MlaShape
from vllm_remedy.vllm.mla_shape import read as read_mla_shape
from vllm_remedy.vllm.quant_exclusions import Exclusions
from vllm_remedy.vllm.quant_exclusions import from_text as read_exclusions
from vllm_remedy.vllm.quant_source import UNREAD, flagged, kv_cache_scheme, readings
from vllm_remedy.vllm.quant_source import fold as fold_compression_config

GIB = 1024**3
#: Node labels that name the GPU product, in the order they are trusted: GPU feature discovery, GKE, Karpenter.
PRODUCT_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "karpenter.k8s.aws/instance-gpu-name")


@dataclass(frozen=True)
class ModelSpec:
    """The facts of a model that decide vLLM's memory budget (per whole model, before TP)."""

    name: str
    architecture: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_model_len: int
    params_b: float
    dtype: str = "bfloat16"
    quantization: str | None = None
    weight_bits: int = 16
    tie_word_embeddings: bool = False
    sliding_window: int | None = None
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    index_head_dim: int = 0  # DeepSeek-V3.2's indexer key width when config.json has index_topk (memory.indexer_cache)
    mla_shape: MlaShape | None = None  # MLA projection widths and kv_b_proj's quantization (vllm.mla_shape)
    sliding_layers: int = 0  # layers attending within sliding_window only (hybrid KV-cache manager)
    quantized_scope: str = "linear"  # which weights weight_bits applies to: "linear" or "experts" (mxfp4)
    zero_points: bool = True  # packed int weights carry zero points (GPTQ/AWQ; not symmetric compressed-tensors)
    group_size: int | None = 128  # input channels per scale of packed int weights; None: per output channel
    exclusions: Exclusions | None = None  # layers the checkpoint leaves unquantized, per release (quant_exclusions)
    kv_quant: str | None = None  # a ModelOpt checkpoint's KV-cache scheme, "fp8" / "nvfp4" (quant_source, kv_auto)
    # or a compressed-tensors one, kv_auto.CT_FP8 / CT_OTHER
    expert_params_b: float = 0.0  # routed experts, all of them (part of params_b)
    vision_params_b: float = 0.0  # vision tower + projector, kept 16-bit (part of params_b)
    vision_hidden: int = 0
    vision_intermediate: int = 0
    image_patches: int = 0  # patches one largest image is cut in (encoder profiling)
    image_tokens: int = 0  # language-model tokens one image becomes (encoder cache)
    mm_embed_dim: int = 0  # Qwen3-VL: width of one encoder output row, deepstack levels included (shapes.Vision)
    # Qwen2-VL's vision transformer as its profile peak needs it (``encoder.qwen2_vl_tower_gib``): block width
    # (vision_config.embed_dim), MLP width (embed_dim x mlp_ratio) and values per patch (channels x temporal x patch²).
    vit_embed_dim: int = 0
    vit_mlp_dim: int = 0
    vit_patch_values: int = 0
    vit_family: str = ""  # "qwen2_vl" or "qwen2_5_vl" (gated SiLU MLP, RMSNorm): the blocks differ
    # What vLLM's max-length check reads from config.json (``vllm.model_len``); None: a spec not built from one.
    length: hf_config.LengthFacts | None = None
    mp_linear: str | None = None  # GPTQ / compressed-tensors wNa16 kernel path (quant_config.mp_linear)
    act_order: bool = False  # the packed weights carry a g_idx (quant_config.act_order)
    weight_block_size: tuple[int, int] | None = None  # fp8 [block_n, block_k] (quant_config.weight_block_size)
    int_facts: quant_config.IntFacts | None = None  # AWQ / GPTQ packing as stated (quant_support judges the bits)
    modelopt_algo: modelopt_class.Facts | None = None  # the algorithm ModelOpt's overrides read (modelopt_class)
    ct_mla_groups: bool | None = None  # compressed-tensors: every group fp8 as 0.7.2's use_mla reads it (quant_config)
    load_refusal: str | None = None  # vLLM's exception loading the config (hf_overrides.applied): config_refused
    # (first release, the spec it reads or why it cannot be predicted) where releases read the quantization
    # differently (quant_source.readings: ModelOpt's producer, hf_quant_config.json); ``at`` picks one
    releases: tuple[tuple[tuple[int, int, int], ModelSpec | str], ...] = ()
    config_model_type: str = ""  # the top-level config's model_type (a composite's own: gemma3 over gemma3_text)
    stray_text_config: bool = False  # a text-only class with a text_config: refused (stray_text.refusal)

    @property
    def is_moe(self) -> bool:
        """Mixture of experts: the shape-based parameter count sums every expert, and the profile run adds
        the routed experts' activations."""
        return self.num_experts > 0

    @property
    def quantized_checkpoint(self) -> bool:
        """The checkpoint itself stores weights below 16 bits (FP8, AWQ, GPTQ, mxfp4, ...): they load at that width
        and run through the method's own kernels, whatever flags the start adds."""
        return bool(self.quantization) and self.weight_bits < 16

    def load_refusal_in(self, version: tuple[int, int, int]) -> str | None:
        """vLLM's exception loading this config in the release (``load_refusal``, else a stray text_config's)."""
        if self.load_refusal is not None:
            return self.load_refusal
        return stray_text.refusal(version) if self.stray_text_config else None

    @property
    def model_type(self) -> str:
        """The text config's model_type (or the family its architecture names), which some dtype rules name."""
        return self.length.model_type if self.length is not None else ""

    @property
    def model_types(self) -> tuple[str, str]:
        """(the text config's, the top-level config's) model_type: vLLM's dtype rules read one or the other by
        release (``dtype_support.ModelTypes``)."""
        return self.model_type, self.config_model_type or self.model_type

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek): KV per token is the latent plus rope dims, not K and V per
        head, and vLLM's default block is 64 tokens."""
        return self.kv_lora_rank is not None

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any], name: str, params_b: float | None = None) -> ModelSpec:
        """Build a spec from a config.json dict, reading keys exactly as vLLM does (see ``hf_config``).

        ``params_b`` (billions) is not in config.json; without it the count is computed from the shapes.
        """
        if not isinstance(config, Mapping):
            raise UserError(f"{name}: expected a JSON object (a Hugging Face config.json)")
        text = fold_compression_config(hf_config.text_config(config), config)  # compression_config: quant_source
        spans = readings(text, config)
        if spans is None:
            return cls._from_text(config, text, name, params_b)
        eras: list[tuple[tuple[int, int, int], ModelSpec | str]] = []
        for since, read, refusal in spans:
            if refusal in UNREAD:
                eras.append((since, refusal))
                continue
            try:
                eras.append((since, _replace(cls._from_text(config, read, name, params_b), load_refusal=refusal)))
            except UserError as exc:  # this span cannot be predicted; another may be
                eras.append((since, str(exc)))
        built = [spec for _, spec in eras if isinstance(spec, ModelSpec)]
        if not built:
            raise UserError(str(eras[-1][1]))
        return _replace(built[-1], releases=tuple(eras))

    def at(self, version: tuple[int, int, int], quantization: str | None = None) -> ModelSpec:
        """The spec as ``version`` reads the checkpoint's quantization (``releases``) under ``--quantization``
        (``quant_source.flagged``); a UserError when that release's reading cannot be predicted."""
        chosen: ModelSpec | str = self
        for since, spec in self.releases:
            chosen = spec if version >= since else chosen
        chosen = flagged(self.releases, version, quantization) or chosen
        if isinstance(chosen, str):
            raise UserError(chosen)
        own = {s.load_refusal for _, s in self.releases if isinstance(s, ModelSpec)}
        if chosen is not self and self.load_refusal not in own:  # set on this spec since (hf_overrides): kept
            return _replace(chosen, load_refusal=self.load_refusal)
        return chosen

    @classmethod
    def _from_text(cls, config: Mapping[str, Any], text: Mapping[str, Any], name: str,
                   params_b: float | None) -> ModelSpec:
        hidden = hf_config.require_int(text, "hidden_size", "n_embd", "d_model", name=name)
        layers = hf_config.require_int(text, "num_hidden_layers", "n_layer", "num_layers", name=name)
        heads = hf_config.require_int(text, "num_attention_heads", "n_head", name=name)
        vocab = hf_config.require_int(text, "vocab_size", name=name)
        config_sizes.check_sizes(text, name=name)
        inter = hf_config.intermediate_size(text, hidden)
        experts, per_token, moe_inter = hf_config.num_experts(text)
        kv_heads = hf_config.num_kv_heads(text, heads)
        head = hf_config.head_dim(text, hidden, heads)
        mla = hf_config.mla_dims(text)
        tie = hf_config.tie_word_embeddings(text, config)
        counts = shapes.text_params(text, hidden, layers, heads, kv_heads, head, inter, vocab, tie)
        tower = shapes.vision(config, hidden)
        vision_params = tower.params if tower else 0.0
        config_bounds.check(config, text, heads=heads, kv_heads=kv_heads, head_dim=head, mla=mla is not None,
                            params=counts.total + vision_params, weight_bits=quant_config.weight_bits(text) or 16)
        spec = cls(
            name=name,
            architecture=architectures.first_architecture(config) or "unknown",
            hidden_size=hidden,
            num_layers=layers,
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head,
            intermediate_size=inter,
            vocab_size=vocab,
            max_model_len=hf_config.derived_max_model_len(text),
            length=hf_config.length_facts(text),
            params_b=float(params_b) if params_b is not None else (counts.total + vision_params) / 1e9,
            dtype=hf_config.torch_dtype(text),
            quantization=quant_config.quantization(text),
            weight_bits=quant_config.weight_bits(text) or 16,
            tie_word_embeddings=tie,
            sliding_window=hf_config.sliding_window(text),
            num_experts=experts,
            experts_per_token=per_token,
            moe_intermediate_size=moe_inter,
            kv_lora_rank=mla[0] if mla else None,
            qk_rope_head_dim=mla[1] if mla else None,
            index_head_dim=_index_head_dim(text, name),
            mla_shape=read_mla_shape(text, quant_config.weight_bits(text) or 16) if mla else None,
            sliding_layers=hf_config.sliding_layers(text, layers),
            quantized_scope=quant_config.quantized_scope(text),
            zero_points=quant_config.zero_points(text),
            group_size=quant_config.group_size(text),
            exclusions=read_exclusions(text, architectures.first_architecture(config) or "unknown", layers, hidden,
                                       heads, kv_heads, head, inter, experts, quant_config.section(text),
                                       quant_config.quantization(text)),
            kv_quant=kv_cache_scheme(config) or kv_auto.ct_scheme(text, mla is not None),  # ModelOpt: top level
            mp_linear=quant_config.mp_linear(text),
            act_order=quant_config.act_order(text),
            weight_block_size=quant_config.weight_block_size(text),
            int_facts=quant_config.int_facts(text),
            modelopt_algo=modelopt_class.facts(quant_config.section(text)),
            ct_mla_groups=quant_config.ct_mla_groups(text),
            config_model_type=hf_config.model_type(config),
            stray_text_config=stray_text.stray(config),
            expert_params_b=counts.experts / 1e9,
            vision_params_b=vision_params / 1e9,
            vision_hidden=tower.hidden if tower else 0,
            vision_intermediate=tower.intermediate if tower else 0,
            image_patches=tower.patches if tower else 0,
            image_tokens=tower.tokens if tower else 0,
            mm_embed_dim=tower.embed_dim if tower else 0,
        )
        geometry = qwen2_vl_tower.tower_fields(config)  # Qwen2-VL's and Qwen2.5-VL's blocks and dummy image
        return _replace(spec, **geometry) if geometry else spec

    def quantized(self, method: str, bits: int) -> ModelSpec:
        """The same architecture stored with ``bits``-bit weights (an FP8/AWQ/GPTQ variant)."""
        return _replace(self, quantization=method, weight_bits=bits)


def _index_head_dim(text: Mapping[str, Any], name: str) -> int:
    """DeepSeek-V3.2's indexer key width: vLLM builds the indexer when the config has ``index_topk``
    (``memory.indexer_cache``); 0 without it."""
    if "index_topk" not in text:
        return 0
    return hf_config.require_int(text, "index_head_dim", name=name)


def _replace(spec: ModelSpec, **changes: Any) -> ModelSpec:
    return dataclasses.replace(spec, **changes)


# ---- catalogs -------------------------------------------------------------------------------------

#: The revisions every entry's numbers describe: the repository's default branch, which is what vLLM reads without
#: ``--revision``. An entry may list commits it was checked at (``revisions``); any other revision (a tag, a branch,
#: another commit) may carry another config.json, which only the repository itself can tell.
DEFAULT_REVISIONS = (None, "", "main")


# Quantization suffixes of published checkpoints → (method, weight bits).
_QUANT_SUFFIXES: tuple[tuple[str, str, int], ...] = (
    ("-quantized.w4a16", "compressed-tensors", 4),
    ("-quantized.w8a8", "compressed-tensors", 8),
    ("-quantized.w8a16", "compressed-tensors", 8),
    ("-fp8-dynamic", "fp8", 8),
    ("-fp8", "fp8", 8),
    ("-awq-int4", "awq", 4),
    ("-awq", "awq", 4),
    ("-gptq-int4", "gptq", 4),
    ("-gptq-int8", "gptq", 8),
    ("-gptq", "gptq", 4),
    ("-int4", "gptq", 4),
    ("-int8", "compressed-tensors", 8),
    ("-w4a16", "compressed-tensors", 4),
    ("-w8a8", "compressed-tensors", 8),
    ("-bnb-4bit", "bitsandbytes", 4),
)
_TUNING_SUFFIXES = ("-instruct", "-chat", "-it", "-hf", "-base")


@cache
def _model_index() -> dict[str, ModelSpec]:
    index: dict[str, ModelSpec] = {}
    for entry in _load("models.yaml")["models"]:
        spec = ModelSpec.from_hf_config(entry["config"], entry["id"], params_b=float(entry["params_b"]))
        for name in [_base_name(entry["id"])[0], *entry.get("names", [])]:
            index[name.lower()] = spec
    return index


@cache
def _repo_index() -> dict[str, tuple[ModelSpec, frozenset[str]]]:
    """Repository id (lower-cased: the Hub matches ids case-insensitively) → (spec, the commits it is vouched at),
    for each entry's ``id`` and the ``aliases`` it lists deliberately (the same repository under a former name)."""
    index: dict[str, tuple[ModelSpec, frozenset[str]]] = {}
    for entry in _load("models.yaml")["models"]:
        spec = ModelSpec.from_hf_config(entry["config"], entry["id"], params_b=float(entry["params_b"]))
        commits = frozenset(str(c).lower() for c in entry.get("revisions", []))
        for repo in [entry["id"], *entry.get("aliases", [])]:
            index[repo.lower()] = (spec, commits)
    return index


def repo_model(repo_id: str, revision: str | None = None) -> ModelSpec | None:
    """The catalog's spec for exactly this Hugging Face repository at ``revision``, else None.

    None for any other id, however close its name (``acme/qwen3-8b``, ``someone/Qwen3-8B-AWQ``), for a local path,
    and for a revision the catalog cannot vouch for: vLLM reads that repository's own config.json at that revision,
    and so must the caller (``hub``).
    """
    found = _repo_index().get(repo_id.lower())  # vLLM passes the argv word as is: " org/m" is no repo id
    if found is None:
        return None
    spec, commits = found
    if revision not in DEFAULT_REVISIONS and revision.strip().lower() not in commits:
        return None
    return _replace(spec, name=repo_id)


def _base_name(model_id: str) -> tuple[str, tuple[str, int] | None]:
    """Normalise an id or local path to a catalog key, and the quantization its suffix names."""
    name = model_id.strip().rstrip("/").split("/")[-1].lower()
    quant: tuple[str, int] | None = None
    changed = True
    while changed:
        changed = False
        for suffix, method, bits in _QUANT_SUFFIXES:
            if name.endswith(suffix):
                name, quant, changed = name[: -len(suffix)], quant or (method, bits), True
        for suffix in _TUNING_SUFFIXES:
            if name.endswith(suffix):
                name, changed = name[: -len(suffix)], True
    if name.startswith("meta-llama-"):
        name = name[len("meta-") :]
    return name, quant


def model(model_id: str) -> ModelSpec:
    """The catalog family a name points to (a Hugging Face id or a local path ending in a known name, its suffix's
    quantization applied): for calibration cases and benchmarks, whose logs state the checkpoint they ran.

    Never for a served model: a name says nothing about the config.json behind it (``acme/qwen3-8b`` may hold any
    model). What a server's ``--model`` is, is :func:`repo_model`'s answer or the repository's own config.json.
    """
    base, quant = _base_name(model_id)
    spec = _model_index().get(base)
    if spec is None:
        raise UserError(f"unknown model {model_id}; pass --model-config with its config.json")
    spec = _replace(spec, name=model_id)
    return spec.quantized(*quant) if quant else spec
