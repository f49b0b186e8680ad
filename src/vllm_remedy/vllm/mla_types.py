"""Which ``model_type`` values a vLLM release runs as multi-head latent attention (MLA), release by release.

vLLM decides MLA by the text config's ``model_type``, not by the presence of ``kv_lora_rank``: ``is_deepseek_mla``
returns ``kv_lora_rank is not None`` only for the types it lists (config.py@0.7.2-@0.10.0, config/__init__.py@0.10.1-
@0.10.2, config/model.py@0.11.0-@0.13.0, transformers_utils/model_arch_config_convertor.py@0.14.0-@0.34.0), and
``use_mla`` follows it. Every other type with ``kv_lora_rank`` (MiniCPM3) runs its own attention class: minicpm3.py
(@0.6.3 to @0.34.0) builds ``Attention(num_local_heads, qk_head_dim, ..., num_kv_heads=num_local_heads)``, K and V per
head at ``qk_nope_head_dim + qk_rope_head_dim``, the ``head_dim`` MiniCPM3Config sets (its configuration_minicpm.py,
``self.head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim``). The lists, read in each wheel (the ``eagle`` branch,
an EAGLE draft of DeepSeek, is a draft's and not read here):

- 0.7.2: deepseek_v2, deepseek_v3 (0.7.1, not downloaded, has ``use_mla`` too: taken as 0.7.2's list).
- 0.7.3-0.9.2: + deepseek_mtp.
- 0.10.0-0.10.2: + kimi_k2.
- 0.11.0: + deepseek_v32, longcat_flash.
- 0.12.0-0.14.0: + kimi_linear, pangu_ultra_moe, pangu_ultra_moe_mtp.
- 0.15.0: + glm4_moe_lite, glm4_moe_lite_mtp. 0.16.0: + glm_moe_dsa. 0.17.0-0.19.0: + bailing_hybrid.
- 0.20.0-0.24.0: + deepseek_v4 (MLA when ``head_dim`` is set if the config has ``compress_ratios``: not modelled).
- 0.25.0: + bailing_hybrid_mtp. 0.26.0-0.27.0: + axk1, longcat_flash_ngram; 0.27.0 + k3_dspark.
- 0.28.0: + bailing_hybrid_v3_mtp, dots3_note. 0.29.0: + hy_v4, hy_v4_mtp. 0.30.0-0.31.0: + deepseek_v41, glm5_next,
  glm5_next_text. 0.32.0-0.33.0: without longcat_flash_ngram. 0.34.0: + mistral_large_4.
"""

from __future__ import annotations

Version = tuple[int, int, int]

# (first release, types added there, types dropped there), in release order.
_CHANGES: tuple[tuple[Version, frozenset[str], frozenset[str]], ...] = (
    ((0, 7, 1), frozenset({"deepseek_v2", "deepseek_v3"}), frozenset()),
    ((0, 7, 3), frozenset({"deepseek_mtp"}), frozenset()),
    ((0, 10, 0), frozenset({"kimi_k2"}), frozenset()),
    ((0, 11, 0), frozenset({"deepseek_v32", "longcat_flash"}), frozenset()),
    ((0, 12, 0), frozenset({"kimi_linear", "pangu_ultra_moe", "pangu_ultra_moe_mtp"}), frozenset()),
    ((0, 15, 0), frozenset({"glm4_moe_lite", "glm4_moe_lite_mtp"}), frozenset()),
    ((0, 16, 0), frozenset({"glm_moe_dsa"}), frozenset()),
    ((0, 17, 0), frozenset({"bailing_hybrid"}), frozenset()),
    ((0, 20, 0), frozenset({"deepseek_v4"}), frozenset()),
    ((0, 25, 0), frozenset({"bailing_hybrid_mtp"}), frozenset()),
    ((0, 26, 0), frozenset({"axk1", "longcat_flash_ngram"}), frozenset()),
    ((0, 27, 0), frozenset({"k3_dspark"}), frozenset()),
    ((0, 28, 0), frozenset({"bailing_hybrid_v3_mtp", "dots3_note"}), frozenset()),
    ((0, 29, 0), frozenset({"hy_v4", "hy_v4_mtp"}), frozenset()),
    ((0, 30, 0), frozenset({"deepseek_v41", "glm5_next", "glm5_next_text"}), frozenset()),
    ((0, 32, 0), frozenset(), frozenset({"longcat_flash_ngram"})),
    ((0, 34, 0), frozenset({"mistral_large_4"}), frozenset()),
)
#: Every type some read release runs as MLA: a config of one of them is sized with the latent (release by release in
#: ``memory.mla_release``); ``kv_lora_rank`` on any other type is not MLA in vLLM.
EVER = frozenset().union(*(added for _, added, _ in _CHANGES))
#: Types with ``kv_lora_rank`` whose non-MLA attention class was read: MiniCPM3 (module docstring).
PER_HEAD = frozenset({"minicpm3"})


def listed(version: Version) -> frozenset[str]:
    """The types the release's ``is_deepseek_mla`` lists (none before 0.7.1)."""
    types: set[str] = set()
    for since, added, dropped in _CHANGES:
        if version >= since:
            types = (types | added) - dropped
    return frozenset(types)
