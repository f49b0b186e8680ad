"""The quantization methods each release's ``ModelConfig`` accepts once ``--quantization`` stopped being argparse
``choices`` (0.13.0: ``QuantizationMethods | str``), and its refusal of any other name.

``ModelConfig._verify_quantization`` (config/model.py@0.13.0-0.34.0): ``supported_quantization =
me_quant.QUANTIZATION_METHODS`` (``list(get_args(QuantizationMethods))``, model_executor/layers/quantization/
__init__.py, source order) and ``raise ValueError(f"Unknown quantization method: {self.quantization}. Must be one of
{supported_quantization}.")``, inside the pydantic dataclass's ``__post_init__``, so a ``ValidationError`` ("Value
error, ..."). That is the refusal for a checkpoint without a ``quantization_config``; a quantized checkpoint's method
is compared first ("... does not match the quantization method specified in the `quantization` argument"), which needs
the model, not judged here. Each row: the first release read with that list (every release 0.13.0-0.34.0 was read).
"""

from __future__ import annotations

Version = tuple[int, int, int]
SINCE: Version = (0, 13, 0)
ROWS: tuple[tuple[Version, tuple[str, ...]], ...] = (
    ((0, 13, 0), (
        'awq deepspeedfp tpu_int8 fp8 ptpc_fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 bitblas gguf '
        'gptq_marlin_24 gptq_marlin gptq_bitblas awq_marlin gptq compressed-tensors bitsandbytes hqq '
        'experts_int8 ipex quark moe_wna16 torchao auto-round rtn inc mxfp4 petit_nvfp4 cpu_gptq cpu_awq'
    )),
    ((0, 14, 0), (
        'awq deepspeedfp fp8 ptpc_fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 bitblas gguf gptq_marlin_24 '
        'gptq_marlin gptq_bitblas awq_marlin gptq compressed-tensors bitsandbytes hqq experts_int8 ipex quark '
        'moe_wna16 torchao auto-round rtn inc mxfp4 petit_nvfp4 cpu_awq'
    )),
    ((0, 15, 0), (
        'awq fp8 ptpc_fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 bitblas gguf gptq_marlin_24 gptq_marlin '
        'gptq_bitblas awq_marlin gptq compressed-tensors bitsandbytes experts_int8 ipex quark moe_wna16 '
        'torchao inc mxfp4 petit_nvfp4 cpu_awq'
    )),
    ((0, 16, 0), (
        'awq fp8 ptpc_fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 gguf gptq_marlin '
        'awq_marlin gptq compressed-tensors bitsandbytes experts_int8 quark moe_wna16 torchao inc mxfp4 '
        'petit_nvfp4 cpu_awq'
    )),
    ((0, 17, 0), (
        'awq fp8 ptpc_fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed gguf '
        'gptq_marlin awq_marlin gptq compressed-tensors bitsandbytes experts_int8 quark moe_wna16 torchao inc '
        'mxfp4 petit_nvfp4 cpu_awq'
    )),
    ((0, 19, 0), (
        'awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed gguf gptq_marlin '
        'awq_marlin gptq compressed-tensors bitsandbytes experts_int8 quark moe_wna16 torchao inc mxfp4 mxfp8 '
        'petit_nvfp4 cpu_awq'
    )),
    ((0, 20, 0), (
        'awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed gguf gptq_marlin '
        'awq_marlin gptq humming compressed-tensors bitsandbytes experts_int8 quark moe_wna16 torchao inc '
        'mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 cpu_awq online fp8_per_tensor fp8_per_block '
        'int8_per_channel_weight_only mxfp8'
    )),
    ((0, 22, 0), (
        'awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed gguf auto_gptq gptq '
        'gptq_marlin awq_marlin humming compressed-tensors bitsandbytes experts_int8 quark moe_wna16 torchao '
        'inc mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 cpu_awq online fp8_per_tensor fp8_per_block '
        'int8_per_channel_weight_only mxfp8'
    )),
    ((0, 23, 0), (
        'awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed gguf auto_gptq gptq '
        'gptq_marlin awq_marlin humming compressed-tensors bitsandbytes experts_int8 quark moe_wna16 torchao '
        'inc mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 online fp8_per_tensor fp8_per_block '
        'int8_per_channel_weight_only mxfp8'
    )),
    ((0, 24, 0), (
        'awq auto_awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed auto_gptq '
        'gptq gptq_marlin awq_marlin humming compressed-tensors bitsandbytes experts_int8 quark moe_wna16 '
        'torchao inc mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 online fp8_per_tensor fp8_per_block fp8_per_channel '
        'int8_per_channel_weight_only mxfp8'
    )),
    ((0, 26, 0), (
        'awq auto_awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed auto_gptq '
        'gptq gptq_marlin awq_marlin humming compressed-tensors bitsandbytes experts_int8 quark moe_wna16 '
        'torchao inc mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 online fp8_per_tensor fp8_per_block fp8_per_channel '
        'int8_per_channel_weight_only nvfp4_per_token mxfp8'
    )),
    ((0, 28, 0), (
        'awq auto_awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed auto_gptq '
        'gptq gptq_marlin awq_marlin humming compressed-tensors experts_int8 quark moe_wna16 torchao inc '
        'mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 online fp8_per_tensor fp8_per_block fp8_per_channel '
        'int8_per_channel_weight_only nvfp4_per_token mxfp8'
    )),
    ((0, 34, 0), (
        'awq auto_awq fp8 w4afp8 fbgemm_fp8 modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed auto_gptq '
        'gptq gptq_marlin awq_marlin humming compressed-tensors experts_int8 quark moe_wna16 torchao inc '
        'mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 online fp8_per_tensor fp8_per_block fp8_per_channel '
        'int8_per_channel_weight_only nvfp4_per_token mxfp8 lut_b_moe mxfp4_hadamard32'
    )),
)


def methods(v: Version) -> list[str] | None:
    """``QUANTIZATION_METHODS`` of release ``v`` (None before 0.13.0, where argparse's choices refuse instead)."""
    row = next((text for since, text in reversed(ROWS) if v >= since), None)
    return "".join(row).split() if row is not None and v >= SINCE else None


def unknown(name: str, v: Version) -> str | None:
    """vLLM's exception for ``--quantization name`` in release ``v``, None when it is a method of that release."""
    known = methods(v)
    if known is None or name in known or name in ("None", ""):
        return None
    return (f"ValidationError: 1 validation error for ModelConfig\n  Value error, Unknown quantization method: {name}. "
            f"Must be one of {known}. [type=value_error]")
