"""How many weight matrices one dense MLP (and one shared expert) of a text family holds, as vLLM builds it.

Why per family: a gated MLP (gate, up, down) holds three hidden x intermediate matrices, a plain one (up, down) two,
so one count for all was 50 % off for OPT or Falcon. The weights are the checkpoint's whichever implementation loads
them (a native model file, or from 0.2x the Transformers backend for some names), so one reading per family serves
every release. Read in the wheels' model_executor/models/ (first release listed where the file is read):

- Two matrices (a ColumnParallelLinear up and a RowParallelLinear down, no MergedColumnParallelLinear): opt.py
  fc1/fc2, falcon.py, gpt_neox.py, bloom.py, persimmon.py dense_h_to_4h/dense_4h_to_h, gpt2.py, gpt_bigcode.py,
  starcoder2.py c_fc/c_proj, gpt_j.py fc_in/fc_out, phi.py fc1/fc2, nemotron.py, mpt.py, arcee.py up_proj/down_proj
  (@0.6.3, @0.10.2, @0.19.0, @0.30.0 where present).
- Three (``MergedColumnParallelLinear([intermediate_size] * 2)`` + down_proj, or a class reusing one), @0.30.0 unless
  noted: llama.py; mistral.py; qwen2.py (Qwen2MLP, also qwen3.py, and the language models of qwen2_vl.py,
  qwen2_5_vl.py, qwen3_vl.py); phi3.py, glm.py, ernie45.py (LlamaForCausalLM subclasses); glm4.py (LlamaMLP);
  gemma.py, gemma2.py (GeluAndMul), gemma3.py; granite.py; seed_oss.py; commandr.py (Cohere, Cohere2);
  minicpm.py (MiniCPM3's decoder layers too); internlm2.py; exaone.py; exaone4.py; chatglm.py (ffn_hidden_size * 2);
  stablelm.py; step3_text.py; deepseek_v2.py (dense layers and shared experts); qwen2_moe.py, qwen3_moe.py (shared
  experts); glm4_moe.py; baichuan.py, olmo.py, olmo2.py (Olmo3 too), hunyuan_v1.py, dots1.py (@0.19.0); mllama's text
  model (LlamaMLP, mllama.py@0.10.2); smollm3, which the registry sends to the Transformers backend
  (registry.py@0.30.0): transformers' SmolLM3MLP gate_proj/up_proj/down_proj (modeling_smollm3.py@4.57.1). MoE
  families whose every layer is routed (mixtral, phimoe, granitemoe, gpt_oss) have no dense MLP; their experts are
  counted apart (FusedMoE: w13, gate and up, and w2).

A family in neither list is "cannot predict": its MLP was not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm import architectures, config_defaults

PLAIN_TYPES = frozenset({"opt", "falcon", "RefinedWeb", "RefinedWebModel", "gpt_neox", "gpt2", "gpt_bigcode", "gptj",
                         "phi", "nemotron", "starcoder2", "persimmon", "bloom", "mpt", "arcee"})
GATED_TYPES = frozenset({
    "llama", "mistral", "qwen2", "qwen3", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text", "qwen2_5_vl_text", "qwen3_vl",
    "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "phi3", "glm", "glm4", "ernie4_5", "gemma", "gemma2",
    "gemma3", "gemma3_text", "granite", "seed_oss", "cohere", "cohere2", "minicpm", "minicpm3", "internlm2", "exaone",
    "exaone4",
    "chatglm", "stablelm", "step3_text", "deepseek_v2", "deepseek_v3", "qwen2_moe", "qwen3_moe", "glm4_moe",
    "baichuan", "olmo", "olmo2", "olmo3", "hunyuan_v1_dense", "dots1", "mllama_text_model", "smollm3",
    "mixtral", "phimoe", "granitemoe", "gpt_oss"})
# For a config stating no model_type (a catalog entry): the architecture names the family.
PLAIN_ARCHITECTURES = frozenset({
    "OPTForCausalLM", "FalconForCausalLM", "RWForCausalLM", "GPTNeoXForCausalLM", "GPT2LMHeadModel",
    "GPTBigCodeForCausalLM", "GPTJForCausalLM", "PhiForCausalLM", "NemotronForCausalLM", "Starcoder2ForCausalLM",
    "PersimmonForCausalLM", "BloomForCausalLM", "MPTForCausalLM", "ArceeForCausalLM"})
# Composites whose language model, when its text_config names no model_type, is a gated family by the composite's
# default (config_defaults: llava* llama, paligemma gemma, mistral3 mistral, llava_onevision qwen2; the rest fixed).
GATED_COMPOSITES = frozenset({
    "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration", "LlavaNextVideoForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration", "PaliGemmaForConditionalGeneration", "Mistral3ForConditionalGeneration",
    "Gemma3ForConditionalGeneration", "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
    "MllamaForConditionalGeneration"})


def matrices(text: Mapping[str, Any]) -> int | None:
    """Matrices of one dense MLP of ``text`` (the language model's config): 2 or 3; None when its family's MLP was not
    read (the caller says "cannot predict")."""
    kind = str(text.get("model_type") or "") or (config_defaults.config_type(text) or "")
    if kind:
        return 2 if kind in PLAIN_TYPES else 3 if kind in GATED_TYPES else None
    arch = _registered(text)
    causal = _as_causal(arch) if arch else None
    if arch in PLAIN_ARCHITECTURES or causal in PLAIN_ARCHITECTURES:
        return 2
    known = arch in GATED_COMPOSITES or any(config_defaults.config_type({"architectures": [a]}) for a in (arch, causal))
    return 3 if known else None


def _as_causal(arch: str) -> str:
    """A pooling or reward head's causal model (Qwen2ForRewardModel builds Qwen2Model, qwen2_rm.py@0.30.0): the
    body, and its MLP, are that model's."""
    for suffix in ("ForRewardModel", "ForSequenceClassification", "ForTokenClassification", "RewardModel", "Model"):
        if arch.endswith(suffix) and not arch.endswith("ForCausalLM"):
            return arch[: -len(suffix)] + "ForCausalLM"
    return arch


def _registered(text: Mapping[str, Any]) -> str | None:
    """The registered model vLLM runs: the first listed name its registry resolves (a pooling conversion such as
    Qwen2ForRewardModel resolves to the causal model it converts from, ``architectures.resolve``)."""
    archs = text.get("architectures")
    for name in archs if isinstance(archs, (list, tuple)) else ():
        if isinstance(name, str) and (resolved := architectures.resolve(name)) is not None:
            return resolved
    return None
