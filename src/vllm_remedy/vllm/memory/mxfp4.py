"""mxfp4 MoE experts (gpt-oss): which kernel backend vLLM picks on a GPU, and what its weights and forward take.

Read from ``vllm/model_executor/layers/quantization/mxfp4.py`` (``get_mxfp4_backend``, ``create_weights``,
``process_weights_after_loading``) through 0.18, ``fused_moe/oracle/mxfp4.py`` from 0.19, and the vendored
``third_party/triton_kernels`` layouts. Exact sizes, nothing fitted.
"""

from __future__ import annotations

from typing import Literal

from vllm_remedy.vllm.catalog import ModelSpec

Backend = Literal["marlin", "triton", "flashinfer"]

# Backend by GPU and release, with no VLLM_MXFP4_USE_MARLIN / VLLM_USE_FLASHINFER_MOE_* set:
# - Blackwell (capability 10.x): FlashInfer's TRTLLM kernel in bf16 (``SM100_FI_MXFP4_BF16``; from 0.19 the first
#   supported backend of ``_get_priority_backends``). FlashInfer is a dependency of vllm from 0.11.1 (an extra
#   before: a bare 0.10.1-0.11.0 install has none and takes Triton only with triton_kernels installed).
# - Hopper (9.0): OpenAI's Triton ``matmul_ogs`` kernels once vllm vendors ``triton_kernels``
#   (``vllm/third_party/triton_kernels`` from 0.12.0; ``has_triton_kernels`` accepts it), for capabilities
#   9.0 <= cc < 11.0 (v0.12.0-v0.18.1 ``triton_kernels_supported``, v0.19.0 ``OAITritonMxfp4ExpertsMonolithic``).
#   Before 0.12 the kernels had to be installed separately, so a pip install ran Marlin ("Using Marlin backend",
#   vllm#23278 on 0.10.1). The SM90 FlashInfer backend is opt-in (VLLM_USE_FLASHINFER_MOE_MXFP4_BF16).
# - Ampere, Ada, and 12.x consumer Blackwell: Marlin.
TRITON_VENDORED_SINCE = (0, 12, 0)
# Padding each backend's ``create_weights`` gives the expert shapes (hidden, per-rank intermediate):
# Marlin hidden to 256 and intermediate to 128 (its n % 256, k % 128 rule); TRTLLM both to 256; Triton (CUDA) only
# the intermediate, to 64.
PAD: dict[Backend, tuple[int, int]] = {"marlin": (256, 128), "flashinfer": (256, 256), "triton": (1, 64)}
MXFP4_BLOCK = 32  # one 8-bit scale per 32 values
# The Triton path swizzles each scale tensor into ``HopperMXScaleLayout`` (triton_kernels
# ``tensor_details/layout_details/hopper_scale.py``): rows (the output dim) padded to 2 x num_warps x 2 x 8 = 256 at
# the 8 warps vLLM passes, the scale columns to 2. The values' Hopper layout pads to 16 x 32 tiles, which gpt-oss's
# 2880-wide shapes fill exactly. ``process_weights_after_loading`` deletes the original values but leaves the
# layer's ``w13_weight_scale`` / ``w2_weight_scale`` registered, so the checkpoint's scales stay beside their
# swizzled copy until 0.25.0 deletes them after swizzling (v0.25.0 fused_moe/oracle/mxfp4.py; v0.24.0 still keeps
# them; v0.34.0 swizzles into the parameters' own storage). It also turns the expert biases from bf16 to float32
# (2 B more per bias).
TRITON_SCALE_ROW_ALIGN = 256
TRITON_FREES_SCALES_SINCE = (0, 25, 0)


def backend(capability: tuple[int, int] | None, version: tuple[int, int, int]) -> Backend:
    """The backend vLLM picks for mxfp4 experts on this GPU (see the table above). An unknown card is taken as
    Marlin, whose padded weights are the larger of the two common paths (less KV predicted)."""
    if capability is None:
        return "marlin"
    if (10, 0) <= capability < (11, 0):
        return "flashinfer"
    if capability >= (9, 0) and capability < (10, 0) and version >= TRITON_VENDORED_SINCE:
        return "triton"
    return "marlin"


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def expert_bytes(model: ModelSpec, tp: int, kind: Backend, version: tuple[int, int, int]) -> float:
    """Bytes of every routed expert on one TP rank after ``process_weights_after_loading``: gate/up (2 x I x H) and
    down (H x I) at 4 bits with a scale per 32 values, padded as the backend pads them; the Triton path adds its
    swizzled, row-padded scales (and keeps the originals before 0.25) and float32 biases."""
    hidden = model.hidden_size
    inter = max(1, (model.moe_intermediate_size or model.intermediate_size) // tp)
    matrices = model.expert_params_b * 1e9 / (3 * hidden * (model.moe_intermediate_size or model.intermediate_size))
    pad_h, pad_i = PAD[kind]
    h, i = _round_up(hidden, pad_h), _round_up(inter, pad_i)
    values = 3 * h * i  # w13 is 2i x h, w2 is h x i
    per_expert = values / 2 + values / MXFP4_BLOCK
    if kind == "triton":
        swizzled = (_round_up(2 * i, TRITON_SCALE_ROW_ALIGN) * _round_up(h // MXFP4_BLOCK, 2)
                    + _round_up(h, TRITON_SCALE_ROW_ALIGN) * _round_up(i // MXFP4_BLOCK, 2))
        kept = 0.0 if version >= TRITON_FREES_SCALES_SINCE else values / MXFP4_BLOCK
        per_expert = values / 2 + kept + swizzled + (2 * i + h) * 2
    return matrices * per_expert


def triton_forward_bytes(model: ModelSpec, mnbt: int, tp: int, dtype_bytes: int) -> float:
    """The Triton MoE's own buffers for one layer's forward over ``mnbt`` tokens (``triton_kernel_fused_experts``):
    the intermediate cache of top-k rows of the activated intermediate, and the output. The monolithic path
    allocates them per call, outside vLLM's persistent MoE workspace, so they are gone before the sampler warm-up
    (v0.16.0 ``apply_monolithic``; v0.19.0 prefers ``OAITritonMxfp4ExpertsMonolithic``)."""
    inter = _round_up(max(1, (model.moe_intermediate_size or model.intermediate_size) // tp), PAD["triton"][1])
    return mnbt * (max(1, model.experts_per_token) * inter + model.hidden_size) * dtype_bytes
