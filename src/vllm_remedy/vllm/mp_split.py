"""Whether a GPTQ or compressed-tensors wNa16 checkpoint's group straddling two TP ranks is refused, read as vLLM picks
the layer's kernel: apart from ``quant_config.packed_split_problem`` (AWQ, refused on every card) because here the
answer hangs on the card, the run dtype and the release (``SplitRun``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vllm_remedy.vllm.quant_config import AssumedGroupSize


@dataclass(frozen=True)
class SplitRun:
    """What the kernel choice reads besides the shapes: the card's compute capability (None: unknown), the dtype vLLM
    runs the model in (``dtype_support.resolved``) and the release; and whether the start distributes an MoE's
    experts whole (--enable-expert-parallel), which decides the experts' width per rank (``block_split``)."""

    capability: tuple[int, int] | None
    dtype: str
    version: tuple[int, int, int]
    expert_parallel: bool = False


def _marlin_min(v: tuple[int, int, int]) -> tuple[int, int]:
    """``GPTQMarlinConfig.get_min_capability``: 80 (gptq_marlin.py@0.6.1-@0.13.0), 75 from 0.14.0."""
    return (7, 5) if v >= (0, 14, 0) else (8, 0)


def _kernel_refusal(kind: str, act_order: bool, group: int, run: SplitRun, per_rank_in: int,
                    out: int) -> str | None:
    """Why no kernel takes a row-parallel layer whose input per rank splits a group, or None when one may (or the
    answer cannot be read from the inputs). ``kind`` is ``quant_config.mp_linear``'s.

    - GPTQ's own method (gptq.py ``create_weights``@0.6.1-@0.21.0) raises the input alignment error: it runs a GPTQ
      checkpoint Marlin cannot convert (``is_gptq_marlin_compatible``) or on a card below ``_marlin_min``. From 0.22.0
      gptq.py is gone: AutoGPTQ (auto_gptq.py@0.22.0, capability 6.0) picks a kernel like the rest.
    - Up to 0.6.1 GPTQ Marlin and compressed-tensors wNa16 call ``verify_marlin_supports_shape`` ("is not divisible
      by group_size", utils/marlin_utils.py@0.6.1): refused.
    - 0.6.2's ``MarlinLinearKernel.can_implement`` passes input and output sizes swapped (kernels/marlin.py@0.6.2,
      fixed @0.6.3) and never checks the group on the input: not judged.
    - From 0.6.3 ``choose_mp_linear_kernel`` tries, in order (kernels/__init__.py@0.6.3, @0.6.6;
      mixed_precision/__init__.py@0.12.0, @0.22.0): Machete (capability 9.0; no act order on a split input; group
      -1 or 128, machete_utils.py@0.8.5; input per rank a multiple of 64 and output of 128,
      ``check_machete_supports_shape``), Marlin (refuses the split group), from 0.6.6 Exllama (float16 activations
      only, no act order on a split input; it checks the group against the full input, exllama.py@0.6.6/@0.12.0).
      The others never take a grouped layer with 16-bit activations: AllSpark only per-channel (allspark_utils.py
      @0.12.0), CutlassW4A8 only fp8 activations; BitBLAS and Conch need packages vLLM does not install (an
      assumption: an image that adds them is not modelled).
    - From 0.24.0 HummingLinearKernel (humming.py@0.34.0) takes any layer on capability 7.5+ when the optional
      ``humming`` package is installed, which the inputs do not say: not judged.
    Capability above 9.0 is not judged either: Machete's test moved from a minimum capability (machete.py@0.6.6) to
    9.0 exactly (``is_device_capability(90)``, machete.py@0.12.0) and the release between was not read."""
    v, cap = run.version, run.capability
    if cap is None or v >= (0, 24, 0):
        return None
    if v < (0, 22, 0) and kind.startswith("gptq") and (kind == "gptq" or cap < _marlin_min(v)):
        return "GPTQ's own kernel needs whole groups per GPU (gptq.py create_weights)"
    if kind == "gptq" or v == (0, 6, 2):
        return None  # AutoGPTQ's handling of a config Marlin could not convert was not read
    if v <= (0, 6, 1):
        return "Marlin needs whole groups per GPU (verify_marlin_supports_shape)"
    if cap > (9, 0):
        return None
    if cap == (9, 0) and not act_order and group == 128 and per_rank_in % 64 == 0 and out % 128 == 0:
        return None  # Machete
    if v >= (0, 6, 6) and run.dtype == "float16" and not act_order:
        return None  # Exllama
    machete = ("Machete needs capability 9.0" if cap != (9, 0) else "Machete refuses act order on a split input"
               if act_order else "Machete does not take this shape or group")
    exllama = ("Exllama arrives in 0.6.6" if v < (0, 6, 6) else "Exllama refuses act order on a split input"
               if act_order else f"Exllama runs only float16, not {run.dtype}")
    return f"no kernel takes it: Marlin needs whole groups per GPU, {machete}, {exllama} (choose_mp_linear_kernel)"


def mp_split_problem(kind: str | None, act_order: bool, group: int | None, tp: int,
                     row_parallel: Sequence[tuple[str, int]], out: int, run: SplitRun | None) -> str | None:
    """Why vLLM refuses a GPTQ / compressed-tensors wNa16 row-parallel layer at this TP (``_kernel_refusal``), or
    None: judged only for a group the checkpoint states and a run whose card, dtype and release are known. ``out``:
    the row-parallel layers' output width (hidden size), which is not split."""
    if kind is None or group is None or isinstance(group, AssumedGroupSize) or tp <= 1 or run is None:
        return None
    for name, channels in row_parallel:
        per_rank = channels // tp
        if channels % tp == 0 and group < channels and per_rank % group:
            why = _kernel_refusal(kind, act_order, group, run, per_rank, out)
            if why:
                return (f"tensor-parallel-size: {tp} splits {name}'s {channels} input channels into {per_rank} per "
                        f"GPU, which the {kind} group size {group} does not divide: {why}")
    return None
