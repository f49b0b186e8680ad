"""The rehearsal pod's own ``choices=`` of the vLLM flags whose values argparse refuses, per release (read by ``argv``).

Independent of the tools' table (``vllm.cmdline.choices``), as ``argv`` is of their reading: extracted from every PyPI
wheel 0.5.5-0.34.0 (engine/arg_utils.py ``choices=[...]`` to 0.8.3-0.8.5, then the config dataclasses' ``Literal``
fields, ``sorted`` by ``literal_to_kwargs`` and, when Optional, with the string ``'None'`` appended; a field that also
takes ``str`` has a metavar and no choices: None below). Each row is (first release with that list, the list as
argparse prints it, space-separated; ``~`` is Python's None, which ``[*QUANTIZATION_METHODS, None]`` held to 0.8.5).
--block-size's entries are ints (``type=int``), the others strings.
"""

from __future__ import annotations

Version = tuple[int, int, int]

ROWS: dict[str, tuple[tuple[Version, str | tuple[str, ...] | None], ...]] = {
    'block-size': (
        ((0, 5, 5), '8 16 32 128 256 512 1024 2048'),
        ((0, 6, 0), '8 16 32'),
        ((0, 6, 4), '8 16 32 64 128'),
        ((0, 6, 5), '8 16 32'),
        ((0, 6, 6), '8 16 32 64 128'),
        ((0, 8, 5), '1 8 16 32 64 128'),
        ((0, 12, 0), '1 8 16 32 64 128 256'),
        ((0, 18, 0), None),
    ),
    'quantization': (
        ((0, 5, 5), (
            'aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 marlin gguf gptq_marlin_24 gptq_marlin awq_marlin '
            'gptq squeezellm compressed-tensors bitsandbytes qqq experts_int8 ~'
        )),
        ((0, 6, 0), (
            'aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 marlin gguf gptq_marlin_24 gptq_marlin awq_marlin '
            'gptq squeezellm compressed-tensors bitsandbytes qqq experts_int8 neuron_quant ~'
        )),
        ((0, 6, 1), (
            'aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin '
            'awq_marlin gptq compressed-tensors bitsandbytes qqq experts_int8 neuron_quant ~'
        )),
        ((0, 6, 3), (
            'aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin '
            'awq_marlin gptq compressed-tensors bitsandbytes qqq experts_int8 neuron_quant ipex ~'
        )),
        ((0, 6, 5), (
            'aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin '
            'awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex ~'
        )),
        ((0, 7, 0), (
            'aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin '
            'awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex quark ~'
        )),
        ((0, 7, 2), (
            'aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin '
            'awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex quark '
            'moe_wna16 ~'
        )),
        ((0, 7, 3), (
            'aqlm awq deepspeedfp tpu_int8 fp8 ptpc_fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 '
            'gptq_marlin awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant '
            'ipex quark moe_wna16 ~'
        )),
        ((0, 8, 0), (
            'aqlm awq deepspeedfp tpu_int8 fp8 ptpc_fp8 fbgemm_fp8 modelopt nvfp4 marlin gguf gptq_marlin_24 '
            'gptq_marlin awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant '
            'ipex quark moe_wna16 ~'
        )),
        ((0, 8, 5), (
            'aqlm awq deepspeedfp tpu_int8 fp8 ptpc_fp8 fbgemm_fp8 modelopt nvfp4 marlin bitblas gguf '
            'gptq_marlin_24 gptq_marlin gptq_bitblas awq_marlin gptq compressed-tensors bitsandbytes qqq hqq '
            'experts_int8 neuron_quant ipex quark moe_wna16 torchao ~'
        )),
        ((0, 9, 0), (
            'aqlm auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 '
            'fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq ipex marlin modelopt '
            'modelopt_fp4 moe_wna16 neuron_quant ptpc_fp8 qqq quark torchao tpu_int8 None'
        )),
        ((0, 9, 2), (
            'aqlm auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 '
            'fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq ipex marlin modelopt '
            'modelopt_fp4 moe_wna16 neuron_quant ptpc_fp8 qqq quark rtn torchao tpu_int8 None'
        )),
        ((0, 10, 0), (
            'aqlm auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 '
            'fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc ipex marlin modelopt '
            'modelopt_fp4 moe_wna16 neuron_quant ptpc_fp8 qqq quark rtn torchao tpu_int8 None'
        )),
        ((0, 10, 1), (
            'auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 '
            'fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc ipex marlin modelopt '
            'modelopt_fp4 moe_wna16 mxfp4 neuron_quant ptpc_fp8 qqq quark rtn torchao tpu_int8 None'
        )),
        ((0, 10, 2), (
            'auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 '
            'fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc ipex modelopt '
            'modelopt_fp4 moe_wna16 mxfp4 petit_nvfp4 ptpc_fp8 quark rtn torchao tpu_int8 None'
        )),
        ((0, 12, 0), (
            'auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors cpu_awq cpu_gptq deepspeedfp '
            'experts_int8 fbgemm_fp8 fp8 fp_quant gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc '
            'ipex modelopt modelopt_fp4 moe_wna16 mxfp4 petit_nvfp4 ptpc_fp8 quark rtn torchao tpu_int8 None'
        )),
        ((0, 13, 0), None),
    ),
    'tokenizer-mode': (
        ((0, 5, 5), 'auto slow'),
        ((0, 6, 0), 'auto slow mistral'),
        ((0, 7, 3), 'auto slow mistral custom'),
        ((0, 9, 0), 'auto custom mistral slow'),
        ((0, 12, 0), None),
    ),
    'load-format': (
        ((0, 5, 5), 'auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes'),
        ((0, 6, 1), 'auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral'),
        ((0, 6, 6), (
            'auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral '
            'runai_streamer'
        )),
        ((0, 8, 3), (
            'auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral '
            'runai_streamer fastsafetensors'
        )),
        ((0, 8, 5), (
            'auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral '
            'runai_streamer runai_streamer_sharded fastsafetensors'
        )),
        ((0, 10, 1), None),
    ),
}


def choices(flag: str, version: Version) -> tuple[object, ...] | None:
    """``--flag``'s choices in ``version`` as argparse holds them (ints for --block-size), None without ``choices=``."""
    row = next((text for since, text in reversed(ROWS.get(flag, ())) if version >= since), None)
    if row is None:
        return None
    words = "".join(row).split()
    if flag == "block-size":
        return tuple(int(w) for w in words)
    return tuple(None if w == "~" else w for w in words)
