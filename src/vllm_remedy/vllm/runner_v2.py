"""Which starts run Model Runner V2 when VLLM_USE_V2_MODEL_RUNNER is unset, release by release.

Apart from ``versions`` because it is a per-architecture choice, not a per-release memory rule; ``runner_env`` applies
the variable on top of it.
"""

from __future__ import annotations

from vllm_remedy.vllm.versions import VersionRules

# Model Runner V2 (v1/worker/gpu/model_runner.py) by default (VllmConfig.use_v2_model_runner, config/vllm.py), when
# VLLM_USE_V2_MODEL_RUNNER is unset (envs.py: unset means the config's default from 0.22.0; 0.21.0 and earlier run it
# only with the variable set to 1). ``runner_v2_by_default`` applies these facts:
# 0.22.0  the generate runner of a Qwen3ForCausalLM, not MoE, not a quantized checkpoint (model_config.is_quantized:
#         the checkpoint has a quantization_config) (DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES, config/vllm.py@0.22.0);
# 0.23.0  the same for LlamaForCausalLM and MistralForCausalLM (config/vllm.py@0.23.0);
# 0.24.0  the listed architectures whatever their checkpoint, and three MoE architectures joined the list
#         (config/vllm.py@0.24.0);
# 0.25.0  every model that is not MoE, and the listed MoE architectures; hybrid (Mamba) and attention-free models
#         stay on V1 (config/vllm.py@0.25.0, _is_default_v2_model_runner_model);
# 0.29.0  every model (the architecture test is gone, config/vllm.py@0.29.0);
# 0.34.0  the V1 runner is removed (v1/worker/gpu_model_runner.py absent; VLLM_USE_V2_MODEL_RUNNER=0 is refused,
#         platforms/interface.py@0.34.0).
# Before 0.29 a feature V2 lacks falls back to V1 ("Model Runner V2 does not yet support ..."): stock torch.compile,
# sequence parallelism, prompt embeds, custom logits processors, some speculative methods (not modelled: no such
# flag is an input here).
MRV2_QWEN3_SINCE = (0, 22, 0)
MRV2_FAMILIES_SINCE = (0, 23, 0)
MRV2_FAMILIES_QUANTIZED_SINCE = (0, 24, 0)
MRV2_DENSE_SINCE = (0, 25, 0)
MRV2_ALL_SINCE = (0, 29, 0)
MRV2_FAMILIES = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"})
# MoE architectures on V2 by default before 0.29, by the release that listed them (config/vllm.py at each).
MRV2_MOE_ARCHITECTURES_SINCE: dict[str, tuple[int, int, int]] = {
    "DeepseekV2ForCausalLM": (0, 24, 0), "Qwen2MoeForCausalLM": (0, 24, 0), "GraniteMoeForCausalLM": (0, 24, 0),
    "InklingForCausalLM": (0, 26, 0), "InklingForConditionalGeneration": (0, 26, 0),
    "LongcatFlashNgramForCausalLM": (0, 26, 0), "KimiK3ForConditionalGeneration": (0, 27, 0),
    "DeepseekV4ForCausalLM": (0, 28, 0),
}


def runner_v2_by_default(rules_: VersionRules, architecture: str, *, is_moe: bool, quantized: bool) -> bool:
    """Whether this release runs the model on Model Runner V2 when VLLM_USE_V2_MODEL_RUNNER is unset (see the
    ``MRV2_*`` facts above; hybrid and attention-free models, which 0.25-0.28 keep on V1, are not modelled)."""
    v = rules_.version
    if rules_.engine != "V1" or v < MRV2_QWEN3_SINCE:
        return False
    if v >= MRV2_ALL_SINCE:
        return True
    moe_since = MRV2_MOE_ARCHITECTURES_SINCE.get(architecture)
    if moe_since is not None and v >= moe_since:
        return True
    if v >= MRV2_DENSE_SINCE:
        return not is_moe
    since = MRV2_QWEN3_SINCE if architecture == "Qwen3ForCausalLM" else MRV2_FAMILIES_SINCE
    listed = architecture in MRV2_FAMILIES and v >= since
    if v >= MRV2_FAMILIES_QUANTIZED_SINCE:  # 0.24 dropped the MoE and quantized exclusions
        return listed
    return listed and not is_moe and not quantized
