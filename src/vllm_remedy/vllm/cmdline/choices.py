"""``choices=`` and ``type=`` of the flags whose refusal matters, per release, as each release's argparse reads them.

Read in the PyPI wheels of every release from 0.5.5 to 0.34.0 (engine/arg_utils.py, and the config dataclasses whose
fields ``get_kwargs`` turns into arguments: config.py, then config/cache.py, config/model.py, config/load.py):

* up to 0.8.3 (0.8.5 for --quantization and --tokenizer-mode) ``add_argument(..., choices=[...])`` lists them in
  source order (--quantization ``[*QUANTIZATION_METHODS, None]``, --load-format ``[f.value for f in LoadFormat]``);
* from 0.8.5/0.9.0 a ``Literal`` field becomes ``choices=sorted(options)`` (``literal_to_kwargs``), with ``'None'``
  appended for an Optional one (``_compute_kwargs``); a field that also takes ``str`` gets a ``metavar``, not
  ``choices`` (--load-format from 0.10.1, --tokenizer-mode from 0.12.0, --quantization from 0.13.0: no argparse
  refusal there, later checks decide), and --block-size became a plain ``int`` in 0.18.0;
* a value is converted by ``type=`` first (``invalid int value: '7.5'``; an Optional field's
  ``optional_type(parse_type(t))`` says ``Value abc cannot be converted to <class 'int'>.`` and takes ``None``/``''``),
  then checked against ``choices`` (CPython ``_check_value``: ``invalid choice: 7 (choose from 1, 8, ...)``, reprs).

Each table is (first release read with that value, value); a release takes the newest entry at or before it.
"""

from __future__ import annotations

Version = tuple[int, int, int]
Table = tuple[tuple[Version, tuple[object, ...] | None], ...]

def _w(words: str) -> tuple[str, ...]:
    """Names in the order the release lists them, written as one string per table row to keep the rows short."""
    return tuple(words.split())


BLOCK_SIZES: Table = (
    ((0, 5, 5), (8, 16, 32, 128, 256, 512, 1024, 2048)),
    ((0, 6, 0), (8, 16, 32)),
    ((0, 6, 4), (8, 16, 32, 64, 128)),
    ((0, 6, 5), (8, 16, 32)),
    ((0, 6, 6), (8, 16, 32, 64, 128)),
    ((0, 8, 5), (1, 8, 16, 32, 64, 128)),
    ((0, 12, 0), (1, 8, 16, 32, 64, 128, 256)),
    ((0, 18, 0), None),
)
QUANTIZATIONS: Table = (
    ((0, 5, 5), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 marlin gguf gptq_marlin_24 gptq_marlin awq_marlin gptq "
        "squeezellm compressed-tensors bitsandbytes qqq experts_int8"
    ), None)),
    ((0, 6, 0), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 marlin gguf gptq_marlin_24 gptq_marlin awq_marlin gptq "
        "squeezellm compressed-tensors bitsandbytes qqq experts_int8 neuron_quant"
    ), None)),
    ((0, 6, 1), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin "
        "awq_marlin gptq compressed-tensors bitsandbytes qqq experts_int8 neuron_quant"
    ), None)),
    ((0, 6, 3), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin "
        "awq_marlin gptq compressed-tensors bitsandbytes qqq experts_int8 neuron_quant ipex"
    ), None)),
    ((0, 6, 5), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin "
        "awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex"
    ), None)),
    ((0, 7, 0), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin "
        "awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex quark"
    ), None)),
    ((0, 7, 2), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 gptq_marlin "
        "awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex quark "
        "moe_wna16"
    ), None)),
    ((0, 7, 3), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 ptpc_fp8 fbgemm_fp8 modelopt marlin gguf gptq_marlin_24 "
        "gptq_marlin awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex "
        "quark moe_wna16"
    ), None)),
    ((0, 8, 0), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 ptpc_fp8 fbgemm_fp8 modelopt nvfp4 marlin gguf gptq_marlin_24 "
        "gptq_marlin awq_marlin gptq compressed-tensors bitsandbytes qqq hqq experts_int8 neuron_quant ipex "
        "quark moe_wna16"
    ), None)),
    ((0, 8, 5), (*_w(
        "aqlm awq deepspeedfp tpu_int8 fp8 ptpc_fp8 fbgemm_fp8 modelopt nvfp4 marlin bitblas gguf "
        "gptq_marlin_24 gptq_marlin gptq_bitblas awq_marlin gptq compressed-tensors bitsandbytes qqq hqq "
        "experts_int8 neuron_quant ipex quark moe_wna16 torchao"
    ), None)),
    ((0, 9, 0), (*_w(
        "aqlm auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 "
        "fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq ipex marlin modelopt "
        "modelopt_fp4 moe_wna16 neuron_quant ptpc_fp8 qqq quark torchao tpu_int8"
    ), "None")),
    ((0, 9, 2), (*_w(
        "aqlm auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 "
        "fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq ipex marlin modelopt "
        "modelopt_fp4 moe_wna16 neuron_quant ptpc_fp8 qqq quark rtn torchao tpu_int8"
    ), "None")),
    ((0, 10, 0), (*_w(
        "aqlm auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 "
        "fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc ipex marlin modelopt "
        "modelopt_fp4 moe_wna16 neuron_quant ptpc_fp8 qqq quark rtn torchao tpu_int8"
    ), "None")),
    ((0, 10, 1), (*_w(
        "auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 "
        "fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc ipex marlin modelopt "
        "modelopt_fp4 moe_wna16 mxfp4 neuron_quant ptpc_fp8 qqq quark rtn torchao tpu_int8"
    ), "None")),
    ((0, 10, 2), (*_w(
        "auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors deepspeedfp experts_int8 "
        "fbgemm_fp8 fp8 gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc ipex modelopt modelopt_fp4 "
        "moe_wna16 mxfp4 petit_nvfp4 ptpc_fp8 quark rtn torchao tpu_int8"
    ), "None")),
    ((0, 12, 0), (*_w(
        "auto-round awq awq_marlin bitblas bitsandbytes compressed-tensors cpu_awq cpu_gptq deepspeedfp "
        "experts_int8 fbgemm_fp8 fp8 fp_quant gguf gptq gptq_bitblas gptq_marlin gptq_marlin_24 hqq inc ipex "
        "modelopt modelopt_fp4 moe_wna16 mxfp4 petit_nvfp4 ptpc_fp8 quark rtn torchao tpu_int8"
    ), "None")),
    ((0, 13, 0), None),
)
TOKENIZER_MODES: Table = (
    ((0, 5, 5), _w("auto slow")),
    ((0, 6, 0), _w("auto slow mistral")),
    ((0, 7, 3), _w("auto slow mistral custom")),
    ((0, 9, 0), _w("auto custom mistral slow")),
    ((0, 12, 0), None),
)
LOAD_FORMATS: Table = (
    ((0, 5, 5), _w("auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes")),
    ((0, 6, 1), _w("auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral")),
    ((0, 6, 6), _w(
        "auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral runai_streamer"
    )),
    ((0, 8, 3), _w(
        "auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral runai_streamer "
        "fastsafetensors"
    )),
    ((0, 8, 5), _w(
        "auto pt safetensors npcache dummy tensorizer sharded_state gguf bitsandbytes mistral runai_streamer "
        "runai_streamer_sharded fastsafetensors"
    )),
    ((0, 10, 1), None),
)
#: Each flag's choices table, its ``type`` (for the value's conversion and repr) and its option strings.
CHOICES: dict[str, tuple[Table, str]] = {
    "block-size": (BLOCK_SIZES, "--block-size"),
    "quantization": (QUANTIZATIONS, "--quantization/-q"),
    "tokenizer-mode": (TOKENIZER_MODES, "--tokenizer-mode"),
    "load-format": (LOAD_FORMATS, "--load-format"),
}
#: ``type=`` per release: ``int``/``float``, ``int?``/``float?`` for an Optional field (``optional_type``), None where
#: the release has no such flag (then not judged here). Read from the same files as above.
TYPES: dict[str, tuple[tuple[Version, str | None], ...]] = {
    "block-size": (((0, 0, 0), "int"),),
    "gpu-memory-utilization": (((0, 0, 0), "float"), ((0, 34, 0), "float?")),
    "swap-space": (((0, 0, 0), "float"), ((0, 18, 0), None)),
    "cpu-offload-gb": (((0, 0, 0), "float"),),
    "max-num-seqs": (((0, 0, 0), "int"),),
    "tensor-parallel-size": (((0, 0, 0), "int"),),
    "pipeline-parallel-size": (((0, 0, 0), "int"),),
    "num-gpu-blocks-override": (((0, 0, 0), "int"), ((0, 8, 5), "int?")),
}


def _at(table: tuple[tuple[Version, object], ...], v: Version) -> object:
    return next((value for since, value in reversed(table) if v >= since), None)


#: Option strings that changed: --device-memory-utilization joined in 0.31.0 (engine/arg_utils.py@0.31.0).
RENAMED: dict[str, tuple[Version, str]] = {
    "gpu-memory-utilization": ((0, 31, 0), "--gpu-memory-utilization/--device-memory-utilization"),
}


def _names(flag: str, v: Version) -> str:
    since, names = RENAMED.get(flag, ((0, 0, 0), f"--{flag}"))
    return names if v >= since else f"--{flag}"


def type_of(flag: str, v: Version) -> str | None:
    """The flag's ``type=`` in release ``v`` as ``TYPES`` names it, None when not judged here."""
    kind = _at(TYPES.get(flag, ()), v)
    return kind if isinstance(kind, str) else None


def refusal(flag: str, value: str, v: Version) -> str | None:
    """argparse's message refusing ``value`` for ``--flag`` in release ``v`` (type first, then choices), None when it
    takes it or the flag is not judged here."""
    kind = type_of(flag, v)
    converted: object = value
    if kind is not None:
        base = int if kind.startswith("int") else float
        if kind.endswith("?") and value in ("", "None"):
            return None
        try:
            converted = base(value)
        except ValueError:
            if kind.endswith("?"):
                return f"argument {_names(flag, v)}: Value {value} cannot be converted to {base}."
            return f"argument {_names(flag, v)}: invalid {base.__name__} value: {value!r}"
    if flag not in CHOICES:
        return None
    table, names = CHOICES[flag]
    choices = _at(table, v)
    if not isinstance(choices, tuple):
        return None
    if flag == "quantization" and value == "None":
        return None  # nullable_str / optional_type: None, which the choices hold
    if converted in choices:
        return None
    return f"argument {names}: invalid choice: {converted!r} (choose from {', '.join(map(repr, choices))})"
