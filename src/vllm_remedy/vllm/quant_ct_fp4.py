"""compressed-tensors' 4-bit float (NVFP4) layout as vLLM's checks read it, and the releases whose schemes take it.

Apart from ``quant_config`` (what any ``quantization_config`` says of its packing) because only this layout has
vLLM choose a scheme, dense and MoE, by a predicate that changed from release to release; the weight sizing
(``memory.nvfp4``) reads the facts kept here.

The predicates (compressed_tensors.py, each release):
- ``_is_fp4a16_nvfp4`` (weights only): 4-bit ``float`` weights, symmetric, group 16, strategy ``group`` at 0.9.0
  (compressed_tensors.py@0.9.0 l.220-233), ``tensor_group`` from 0.9.2 (@0.9.2, @0.10.1, @0.13.0). It picks
  ``CompressedTensorsW4A16Fp4``, Marlin on every card (``_get_scheme_from_parts``, @0.9.2 l.373, @0.14.0 l.571).
- ``_is_fp4a4_nvfp4``: the same for weights and input activations, both ``tensor_group`` (@0.9.2, @0.13.0; 0.14.0's
  ``_is_nvfp4_format`` reads one side at a time, the same keys). From 0.9.2; 0.9.0 has no W4A4 scheme, and a W4A4
  checkpoint there ends in ``NotImplementedError: No compressed-tensors compatible scheme was found.`` (its
  ``_get_scheme_from_parts`` knows W4A16Fp4 only, compressed_tensors.py@0.9.0 l.329-391); before 0.9.0 no FP4 scheme
  exists (compressed_tensors/schemes/@0.8.5).
- The routed experts (``CompressedTensorsMoEMethod.get_moe_method``): ``CompressedTensorsW4A4MoeMethod`` for
  ``_is_fp4a4_nvfp4`` from 0.9.2 (compressed_tensors_moe.py@0.9.2 l.84-85, @0.10.1 l.94-95; ``W4A4Nvfp4MoEMethod``
  from 0.12.0); a weight-only NVFP4 group falls through to ``RuntimeError: Unsupported FusedMoe scheme`` (@0.13.0
  l.222) until 0.14.0, where ``_is_nvfp4_format`` with no input activations takes the same method on Marlin
  (compressed_tensors_moe.py@0.14.0 l.188-198, ``use_marlin=input_quant is None``; @0.15.0 l.211 ``use_a16``).
  0.9.0 has no FP4 MoE branch (the same RuntimeError, compressed_tensors_moe.py@0.9.0 l.88). Through 0.10.1
  ``get_moe_method`` reads the scheme of the target ``Linear`` only (``target_scheme_map["Linear"]``, @0.9.2 l.64,
  @0.10.1 l.72: a KeyError for a group targeting anything else); from 0.10.2 it looks the fused layer's own names up.

- The card: ``get_scheme`` checks the dense scheme's ``get_min_capability`` as it builds each layer
  (``_check_scheme_supported``, compressed_tensors.py@0.9.2 l.522), which raises "RuntimeError: Quantization scheme
  is not supported for the current GPU. Min capability: 80. ..." below it: W4A16Fp4 80 through 0.15.x (W4A4Fp4 asks
  100 and is picked only where CUTLASS FP4 runs), 75 from 0.16.0 (schemes/compressed_tensors_w4a16_nvfp4.py@0.15.0
  l.30-32, @0.16.0 l.29-31; compressed_tensors_w4a4_nvfp4.py@0.16.0 l.31-32, @0.34.0). The config's own floor (70)
  lets a V100, and a T4 before 0.16.0, through to it.

Each of those ends the start while the layers are built: a crash, not a refusal this tool classifies, so "cannot
predict". Not read: a config with several 4-bit float groups (the first group stating ``num_bits`` is the one read,
as ``quant_config.group_size`` reads it), compressed-tensors' MXFP4 (group 32, its own MoE method from 0.15.0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Version = tuple[int, int, int]
W4A16_SINCE: Version = (0, 9, 0)  # CompressedTensorsW4A16Fp4 (schemes/@0.9.0)
TENSOR_GROUP_SINCE: Version = (0, 9, 2)  # the weight-only predicate reads tensor_group (0.9.0: group)
W4A4_SINCE: Version = (0, 9, 2)  # _is_fp4a4_nvfp4, CompressedTensorsW4A4Fp4 and CompressedTensorsW4A4MoeMethod
MOE_W4A16_SINCE: Version = (0, 14, 0)  # get_moe_method's _is_nvfp4_format with no input activations
MOE_ANY_TARGET_SINCE: Version = (0, 10, 2)  # get_moe_method no longer reads target_scheme_map["Linear"] alone
NVFP4_GROUP = 16
CAPABILITY_FLOOR: tuple[tuple[Version, int], ...] = (((0, 0, 0), 80), ((0, 16, 0), 75))  # get_min_capability


class FloatGroupSize(int):
    """The group of compressed-tensors 4-bit float weights: one float8_e4m3fn scale each, no zero points
    (``CompressedTensorsW4A4Fp4`` / ``W4A16Fp4.create_weights``), sized as ModelOpt's NVFP4 (``memory.nvfp4``), with
    what vLLM's predicates read of the group: the weights' strategy and symmetry, the input activations, the
    targets."""

    strategy: str  # weights.strategy as written, lower case
    symmetric: bool  # weights.symmetric is true
    inputs: str | None  # None: no input_activations (W4A16); "nvfp4": 4-bit float, tensor_group, symmetric, 16
    linear: bool  # the group's targets hold "Linear" (get_moe_method through 0.10.1)

    def __new__(cls, size: int, strategy: str = "tensor_group", symmetric: bool = True, inputs: str | None = "nvfp4",
                linear: bool = True) -> FloatGroupSize:
        made = super().__new__(cls, size)
        made.strategy, made.symmetric, made.inputs, made.linear = strategy, symmetric, inputs, linear
        return made

    @property
    def activations(self) -> bool:
        """Inputs quantized too: the W4A4 schemes (any other input quantization is not NVFP4's)."""
        return self.inputs is not None


def float_group(group: Mapping[str, Any], weights: Mapping[str, Any], size: int) -> FloatGroupSize:
    """The facts of a config group whose weights are 4-bit floats in groups of ``size``."""
    inputs = group.get("input_activations")
    if inputs is None:
        said = None
    elif (isinstance(inputs, Mapping) and inputs.get("num_bits") == 4
          and str(inputs.get("type", "")).lower() == "float" and inputs.get("group_size") == NVFP4_GROUP
          and str(inputs.get("strategy", "")).lower() == "tensor_group" and inputs.get("symmetric") is True):
        said = "nvfp4"
    else:
        said = "other"
    targets = group.get("targets")
    return FloatGroupSize(size, strategy=str(weights.get("strategy", "")).lower(),
                          symmetric=weights.get("symmetric") is True, inputs=said,
                          linear=isinstance(targets, list) and "Linear" in targets)


def _crash(version: Version, what: str) -> str:
    return f"vLLM {'.'.join(map(str, version))} {what}, a crash while the layers are built that this tool does not " \
           "classify"


def scheme_problem(group: FloatGroupSize, version: Version, moe: bool,
                   capability: tuple[int, int] | None = None) -> str | None:
    """Why vLLM cannot build this checkpoint's NVFP4 layers at this release on this card (None: unknown), or None
    (module docstring)."""
    if version < W4A16_SINCE:
        return _crash(version, "has no FP4 compressed-tensors scheme (compressed_tensors/schemes@0.8.5) and raises "
                               "NotImplementedError (\"No compressed-tensors compatible scheme was found.\")")
    if group.activations and version < W4A4_SINCE:
        return _crash(version, "has only the weight-only FP4 scheme (W4A16Fp4; compressed_tensors.py@0.9.0) and "
                               "raises NotImplementedError (\"No compressed-tensors compatible scheme was found.\")")
    strategy = "tensor_group" if version >= TENSOR_GROUP_SINCE else "group"
    if not (group == NVFP4_GROUP and group.symmetric and group.strategy == strategy) or group.inputs == "other":
        return _crash(version, "takes none of its NVFP4 schemes for this 4-bit float group (weights strategy "
                               f"{group.strategy or '(none)'}, group {int(group)}, symmetric {group.symmetric}, input "
                               f"activations {group.inputs or 'none'}): _is_fp4a16_nvfp4 / _is_fp4a4_nvfp4 want "
                               f"symmetric {strategy} groups of 16 (compressed_tensors.py) and it raises "
                               "NotImplementedError (No compressed-tensors compatible scheme was found) or, for the "
                               "experts, RuntimeError (Unsupported FusedMoe scheme)")
    if moe and not group.activations and version < MOE_W4A16_SINCE:
        return _crash(version, "has no MoE method for weight-only NVFP4 experts (compressed_tensors_moe.py@0.13.0 "
                               "get_moe_method; 0.14.0 adds it) and raises RuntimeError "
                               "(\"Unsupported FusedMoe scheme\")")
    floor = next(least for since, least in reversed(CAPABILITY_FLOOR) if version >= since)
    cap = None if capability is None else capability[0] * 10 + capability[1]
    if cap is not None and cap < floor:
        return _crash(version, "checks the NVFP4 scheme's capability as it builds the layers and raises RuntimeError "
                               f"(\"Quantization scheme is not supported for the current GPU. Min capability: {floor}. "
                               f"Current capability: {cap}.\")")
    if moe and not group.linear and version < MOE_ANY_TARGET_SINCE:
        return _crash(version, "reads the experts' scheme from the group targeting Linear only "
                               "(target_scheme_map[\"Linear\"], compressed_tensors_moe.py@0.10.1) and raises KeyError")
    return None
