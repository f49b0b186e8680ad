"""Live activations per token at the peak of V0's eager profile forward, counted from the model code's references.

V0 runs the dummy prefill eagerly (no torch.compile), so what is alive is what Python still references. In a dense
decoder stack (read in vLLM 0.7.2, model_executor/models/llama.py and qwen2.py) the model's loop
``hidden_states, residual = layer(positions, hidden_states, ...)`` keeps the layer's input alive until the layer
returns; the layer keeps ``residual``; during the MLP its input is alive too: 3 hidden-size rows. Then:

- at the activation: gate/up (2 x I/TP) and its output (I/TP), so 3 x (I/TP + H) (the count fitted on the RTX 3090
  Llama-3.1-8B logs, 0.103 GiB per 1k tokens);
- at down_proj: its output (H), its input (I/TP) and, where the MLP binds gate/up to a name of its own
  (``gate_up, _ = self.gate_up_proj(x); x = self.act_fn(gate_up)``), gate/up too (2 x I/TP). At TP >= 2 the
  row-parallel output is all-reduced out of place (``GroupCoordinator._all_reduce_out_place``: custom all-reduce, or
  PyNccl's ``torch.empty_like`` output, distributed/parallel_state.py@0.7.2), one more H row. That is so from 0.6.5
  (``_all_reduce_out_place`` falls back to PyNccl there, parallel_state.py@0.6.5). In 0.5.5-0.6.4 only custom
  all-reduce is out of place, and only below its 8 MiB ``max_size`` (``should_custom_ar``,
  device_communicators/custom_all_reduce.py@0.5.5), so the row it adds is under 8 MiB (not charged); a larger tensor
  is all-reduced in place by PyNccl or torch.distributed (``all_reduce``, parallel_state.py@0.5.5/0.6.0, where PyNccl
  is disabled outside graph capture; ``_all_reduce``@0.6.2, ``_all_reduce_in_place``@0.6.3/0.6.4): no extra row.

llama.py (Llama, Mistral, and Phi-3, whose class subclasses it) rebinds ``x`` and frees gate/up; the files below bind
``gate_up`` (grep ``self.act_fn(gate_up)`` in model_executor/models@0.7.2). MoE models keep the fitted count (their
routed buffers are sized elsewhere).
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import ModelSpec

# Dense architectures whose V0 MLP keeps gate/up alive through down_proj (model_executor/models/*.py@0.7.2: baichuan,
# chameleon, commandr, exaone, gemma, gemma2, granite, internlm2, minicpm, olmo, olmo2, orion, qwen, qwen2, solar,
# stablelm; qwen2_vl's language model is qwen2's Qwen2Model).
GATE_UP_KEPT = frozenset({
    "BaiChuanForCausalLM", "BaichuanForCausalLM", "ChameleonForConditionalGeneration", "CohereForCausalLM",
    "Cohere2ForCausalLM", "ExaoneForCausalLM", "GemmaForCausalLM", "Gemma2ForCausalLM", "GraniteForCausalLM",
    "InternLM2ForCausalLM", "MiniCPMForCausalLM", "OlmoForCausalLM", "Olmo2ForCausalLM", "OrionForCausalLM",
    "QWenLMHeadModel", "Qwen2ForCausalLM", "Qwen2VLForConditionalGeneration", "SolarForCausalLM",
    "StableLMEpochForCausalLM", "StableLmForCausalLM",
})
FITTED_VALUES_PER_TOKEN = 3  # x (I/TP + H): the activation point (terms.V0_FORWARD_VALUES_PER_TOKEN)
# The row-parallel output's all-reduce is out of place for any size from 0.6.5 (see the module docstring).
OUT_OF_PLACE_ALL_REDUCE_SINCE = (0, 6, 5)


def v0_forward_values_per_token(model: ModelSpec, tp: int, version: tuple[int, int, int] = (0, 7, 2)) -> float:
    """Values per token alive at the larger of the activation and down_proj points (see the module docstring), for
    the release ``version`` (the all-reduce row at TP >= 2 from ``OUT_OF_PLACE_ALL_REDUCE_SINCE``)."""
    inter, hidden = model.intermediate_size / tp, model.hidden_size
    activation = FITTED_VALUES_PER_TOKEN * (inter + hidden)
    if model.is_moe:
        return activation
    kept = 2 * inter if model.architecture in GATE_UP_KEPT else 0.0
    out_of_place = tp >= 2 and version >= OUT_OF_PLACE_ALL_REDUCE_SINCE
    down = kept + inter + 4 * hidden + (hidden if out_of_place else 0.0)
    return max(activation, down)
