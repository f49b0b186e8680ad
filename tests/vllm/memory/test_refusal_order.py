"""One start, two config-time refusals: the estimate names the one vLLM runs first (``memory.refusal_order``). vLLM
builds the model config (length, architecture, ``--quantization`` against the checkpoint), reads VLLM_USE_V1 (0.8-0.11),
builds the scheduler config (the batch), then the engine config checks the heads against TP and the quantization for
the card; the other TP splits are refused only as the weights are created. Before, the tools put the TP size and the
env before the quantization and the batch, and a VLLM_USE_V1 text after the length (cases A-F, H-J2 moved)."""

from __future__ import annotations

import pytest

from vllm_remedy.hub import spec_from_config
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.refusal_order import stages
from vllm_remedy.vllm.outcomes import Outcome

QWEN7 = catalog.model("Qwen/Qwen2.5-7B-Instruct")  # 28 heads, 4 KV heads, 32768 positions
AWQ = catalog.model("Qwen/Qwen2.5-7B-Instruct-AWQ")
L40S, V100 = catalog.gpu("NVIDIA-L40S"), catalog.gpu("Tesla-V100-SXM2-32GB")
BATCH = {"max-model-len": "16384", "max-num-batched-tokens": "4096", "enable-chunked-prefill": "false"}
HEADS, KV_SPLIT = {"tensor-parallel-size": "3"}, {"tensor-parallel-size": "7"}  # 7 divides 28 heads, not 4 KV heads
MISMATCH = {"max-model-len": "8192", "quantization": "gptq"}
SHORT = {"max-model-len": "8192", "dtype": "half"}

BATCH_WORDS = "ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (16384)."
HEADS_WORDS = "Total number of attention heads (28) must be divisible by tensor parallel size (3)."
MISMATCH_WORDS = "ValueError: Quantization method specified in the model config (awq) does not match"
CAPABILITY_WORDS = "ValueError: The quantization method awq is not supported for the current GPU."
ORACLE_WORDS = "VLLM_USE_V1=1: vLLM 0.8.5 refuses it on a GPU of compute capability 7.0"
V0_GONE_WORDS = "VLLM_USE_V1=0: vLLM 0.11.0 has no V0 engine"
INT_WORDS = "VLLM_USE_V1='true': vLLM 0.7.3 reads it as bool(int(value))"

# (model, card, release, flags, env inputs, refused_by vLLM's first refusal is, its words); None: the max length
PAIRS = {
    "A heads+batch: the scheduler config first": (QWEN7, L40S, "0.8.5", {**BATCH, **HEADS}, {"vllm-use-v1": "0"},
                                                  "batch", BATCH_WORDS),
    "B kv split+batch": (QWEN7, L40S, "0.8.5", {**BATCH, **KV_SPLIT}, {"vllm-use-v1": "0"}, "batch", BATCH_WORDS),
    "C capability+batch": (AWQ, V100, "0.8.5", {**BATCH, "dtype": "half"}, {}, "batch", BATCH_WORDS),
    "D mismatch+oracle: the model config first": (AWQ, V100, "0.8.5", {**MISMATCH, "dtype": "half"},
                                                  {"vllm-use-v1": "1"}, "quant", MISMATCH_WORDS),
    "E mismatch+heads": (AWQ, L40S, "0.11.0", {**MISMATCH, **HEADS}, {}, "quant", MISMATCH_WORDS),
    "F capability+kv split: the config before the weights": (AWQ, V100, "0.11.0", {**SHORT, **KV_SPLIT}, {},
                                                             "quant", CAPABILITY_WORDS),
    "G heads+capability": (AWQ, V100, "0.11.0", {**SHORT, **HEADS}, {}, "tp", HEADS_WORDS),
    "H 0.11.0's V0 refusal+heads: the assert after the config": (QWEN7, L40S, "0.11.0", {**SHORT, **HEADS},
                                                                 {"vllm-use-v1": "0"}, "tp", HEADS_WORDS),
    "I 0.11.0's V0 refusal+capability": (AWQ, V100, "0.11.0", SHORT, {"vllm-use-v1": "0"}, "quant",
                                         CAPABILITY_WORDS),
    "J int() text+length: EngineArgs first": (QWEN7, L40S, "0.7.3", {"max-model-len": "65536"},
                                              {"vllm-use-v1": "true"}, "env", INT_WORDS),
    "J2 int() text+length: 0.11.0's ModelConfig reads it first": (QWEN7, L40S, "0.11.0", {"max-model-len": "65536"},
                                                                  {"vllm-use-v1": "true"}, "env",
                                                                  "VLLM_USE_V1='true': vLLM 0.11.0 reads it"),
    "J3 length+int() text: 0.8.5 reads it after the model config": (QWEN7, L40S, "0.8.5", {"max-model-len": "65536"},
                                                                     {"vllm-use-v1": "true"}, None, None),
    "K oracle+heads": (QWEN7, V100, "0.8.5", {**SHORT, **HEADS}, {"vllm-use-v1": "1"}, "env", ORACLE_WORDS),
    "L length+mismatch": (AWQ, L40S, "0.11.0", {**MISMATCH, "max-model-len": "65536"}, {}, None, None),
    "M length+heads": (QWEN7, L40S, "0.11.0", {"max-model-len": "65536", **HEADS}, {}, None, None),
    "N oracle+batch": (QWEN7, V100, "0.8.5", {**BATCH, "dtype": "half"}, {"vllm-use-v1": "1"}, "env", ORACLE_WORDS),
    "O length+oracle": (QWEN7, V100, "0.8.5", {**SHORT, "max-model-len": "65536"}, {"vllm-use-v1": "1"}, None, None),
}


@pytest.mark.parametrize(("model", "gpu", "version", "flags", "inputs", "by", "words"), PAIRS.values(), ids=PAIRS)
def test_the_estimate_names_the_refusal_vllm_runs_first(model, gpu, version, flags, inputs, by, words):
    est = estimate(model, gpu, EngineSettings.from_flags(flags, version, inputs))
    if by is None:
        assert est.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL and est.refusal is None
        return
    assert (est.outcome, est.refused_by) == (Outcome.CONFIG_REFUSED, by), est.refusal
    assert est.refusal is not None and words in est.refusal, est.refusal


@pytest.mark.parametrize(("version", "first"), [("0.5.5", "len"), ("0.6.3", "len"), ("0.8.5", "len"),
                                                ("0.9.0", "len"), ("0.9.2", "arch"), ("0.11.0", "arch"),
                                                ("0.20.0", "arch"), ("0.34.0", "arch")])
def test_the_model_config_checks_the_length_and_the_architecture_in_the_releases_order(version, first):
    order = stages(version)
    assert order.index(first) < order.index("arch" if first == "len" else "len") < order.index("qmethod")
    assert order.index("env") < order.index("batch") < order.index("heads") < order.index("qconfig") \
        < order.index("env_late") < order.index("weights")


def test_a_quant_method_the_release_does_not_know_is_the_model_configs_refusal_before_the_heads():
    """ModelConfig._verify_quantization (config/__init__.py@0.10.2) refuses an empty quant_method while the model
    config is built, before the parallel config checks the heads: "model", not the engine config's "quant"."""
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
              "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
              "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 32768,
              "torch_dtype": "bfloat16", "quantization_config": {"bits": 4, "group_size": 128}}
    model = spec_from_config(config, "no-quant-method", "no-quant-method")
    est = estimate(model, L40S, EngineSettings.from_flags({**SHORT, **HEADS}, "0.10.2", {}))
    assert (est.outcome, est.refused_by, est.refused_at) == (Outcome.CONFIG_REFUSED, "model", "qmethod"), est.refusal
    assert est.refusal is not None and est.refusal.startswith("ValueError: Unknown quantization method: ."), est
