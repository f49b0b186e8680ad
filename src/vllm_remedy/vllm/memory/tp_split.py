"""Which tensor-parallel sizes vLLM refuses for a model before sizing any memory: heads, KV heads and widths that do
not divide, and quantized checkpoints whose groups or blocks a rank would split (AWQ groups, GPTQ / compressed-tensors
kernels, fp8 blocks). Apart from ``settings`` because it reads the model and the run, not the engine's flags; the
estimator (``settings.resolve``) and the planner's TP lever refuse by the same rule."""

from __future__ import annotations

from vllm_remedy.vllm import quant_config
from vllm_remedy.vllm.block_split import (
    EXPERT_PARALLEL_FROM,
    column_outputs,
    fp8_block_split_problem,
    fp8_moe_block_split_problem,
)
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.mp_split import SplitRun, mp_split_problem


def tp_split_problem(model: ModelSpec, tp: int, run: SplitRun | None = None) -> str | None:
    """Why vLLM refuses this TP size for the model, or None: the attention heads must divide evenly
    (``ModelConfig.verify_with_parallel_config``), the KV heads split or replicate evenly (``QKVParallelLinear``: one
    of TP and the KV-head count divides the other), and the MLP's (or the experts') intermediate width is divided
    exactly (``divide`` in the column-parallel layers); and an AWQ checkpoint's group size divides each row-parallel
    layer's input per rank (``quant_config.packed_split_problem``: o_proj, and a dense model's down_proj; vLLM refuses
    it while creating the weights, in the words that problem quotes); and, with the run known, a GPTQ or
    compressed-tensors wNa16 checkpoint's the same unless a kernel of that card, dtype and release takes the split
    (``mp_split.mp_split_problem``); and an fp8 checkpoint's weight blocks whole on every rank
    (``block_split.fp8_block_split_problem``), the routed experts' too (``fp8_moe_block_split_problem``: split by TP,
    or whole under --enable-expert-parallel, which also leaves their width undivided). An AWQ / GPTQ MoE's experts
    are not judged: Marlin MoE hands a shape it does not take to MoeWNA16 (awq_marlin.py, gptq_marlin.py
    ``get_quant_method``@0.8.5-@0.20.0), which halves the group until it divides the width per rank
    (moe_wna16.py ``create_weights``), refusing only below 32 with a bare assert."""
    if model.num_heads % tp:
        # ModelConfig.verify_with_parallel_config's words (config.py@0.5.5, @0.8.5; config/model.py@0.13.0, @0.34.0)
        return (f"tensor-parallel-size: {tp} does not divide the model's {model.num_heads} attention heads; vLLM: "
                f"ValueError: Total number of attention heads ({model.num_heads}) must be divisible by tensor parallel "
                f"size ({tp}).")
    kv = model.num_kv_heads
    if not model.is_mla and kv and (tp % kv if tp >= kv else kv % tp):
        return (f"tensor-parallel-size: {tp} splits the model's {kv} KV heads unevenly (vLLM needs one of the two to "
                f"divide the other)")
    expert_parallel = run is not None and run.expert_parallel and run.version >= EXPERT_PARALLEL_FROM
    inter = (model.moe_intermediate_size or model.intermediate_size) if model.is_moe else model.intermediate_size
    if inter and inter % tp and not (model.is_moe and expert_parallel):
        return f"tensor-parallel-size: {tp} does not divide the model's intermediate size {inter}"
    row_parallel = [] if model.is_mla else [("o_proj", model.num_heads * model.head_dim)]
    if not model.is_moe:  # an MoE's routed experts are FusedMoE's, not row-parallel linears
        row_parallel.append(("down_proj", model.intermediate_size))
    return (quant_config.packed_split_problem(model.quantization, model.group_size, tp, row_parallel)
            or mp_split_problem(model.mp_linear, model.act_order, model.group_size, tp, row_parallel,
                                model.hidden_size, run)
            or fp8_block_split_problem(model.weight_block_size, tp, run.version if run else None, row_parallel,
                                       column_outputs(model, tp))
            or (fp8_moe_block_split_problem(model.weight_block_size, tp, run.version if run else None,
                                            model.moe_intermediate_size or model.intermediate_size, model.hidden_size,
                                            expert_parallel) if model.is_moe else None))
