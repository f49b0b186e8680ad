"""The rendered log of vLLM's model config refusing a --max-model-len above the model's maximum (``vllm.model_len``),
and the worker's frames of its bfloat16 refusal below compute capability 8.0 (``vllm.dtype_support``).

The check runs in the API server while it builds the engine config, before any engine or GPU exists, so the log is
the banner, the arguments and the server's own traceback on stderr: a ValueError until 0.9.0, pydantic's
ValidationError around the same words from 0.9.1 (ModelConfig became a pydantic dataclass). With
VLLM_ALLOW_LONG_MAX_MODEL_LEN set, the same words are a WARNING and the start goes on.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from vllm_remedy.vllm.log_formats import (
    LONG_CAUTION,
    LONG_CAUTION_SINCE,
    LONG_OLD_NOTE,
    LONG_OLD_WARNING,
    Version,
    fill,
    templates_for,
)

_PACKAGES = "/usr/local/lib/python3.12/dist-packages"
PYDANTIC_SINCE: Version = (0, 9, 1)


class Writer(Protocol):
    """What of the renderer's writer this module uses (``writer.Writer``)."""

    v: Version
    engine: str

    def raw(self, role: str, text: str, rank: int = 0) -> None: ...

    def log(self, role: str, message: str, *, level: str = "INFO", source: str = "worker.py", rank: int = 0,
            step: float = 0.4) -> None: ...


def write_warning(w: Writer, figures: dict[str, Any]) -> None:
    """The warning vLLM's model config logs instead of refusing when VLLM_ALLOW_LONG_MAX_MODEL_LEN is set."""
    tpl = templates_for("err_max_len_model", w.v, w.engine)[-1]
    head = fill(dataclasses.replace(tpl, exception=None, tail=""), figures)
    tail = LONG_CAUTION if w.v >= LONG_CAUTION_SINCE else LONG_OLD_NOTE + LONG_OLD_WARNING
    w.log("api", head + tail, level="WARNING", source="config.py")


def write_refusal(w: Writer, model: str, max_len: int, detail: dict[str, Any]) -> None:
    """The API server's traceback for the refusal, with ``detail``'s figures (``model_len.detail``) or stand-ins."""
    figures = {"max_model_len": detail.get("max_model_len", max_len),
               "max_len_key": detail.get("max_len_key", "max_position_embeddings"),
               "derived_max_model_len": detail.get("derived_max_model_len", max(1, max_len // 2)),
               "model_max_length": detail.get("model_max_length", "None")}
    tpl = templates_for("err_max_len_model", w.v, w.engine)[-1]
    pydantic = w.v >= PYDANTIC_SINCE
    w.raw("api", "Traceback (most recent call last):")
    frames = [("vllm/engine/arg_utils.py", "create_engine_config", "model_config = self.create_model_config()"),
              ("vllm/engine/arg_utils.py", "create_model_config", "return ModelConfig(")]
    if pydantic:
        frames.append(("pydantic/_internal/_dataclasses.py", "__init__",
                       "s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)"))
    else:
        frames += [("vllm/config.py", "__init__" if w.v < (0, 9, 0) else "__post_init__",
                    "self.max_model_len = _get_and_verify_max_len("),
                   ("vllm/config.py", "_get_and_verify_max_len", "raise ValueError(")]
    for path, function, code in frames:
        w.raw("api", f'  File "{_PACKAGES}/{path}", line {120 + len(function) * 7}, in {function}')
        w.raw("api", f"    {code}")
    text = fill(tpl, figures)
    if not pydantic:
        w.raw("api", text)
        return
    kwargs = f"ArgsKwargs((), {{'model': '{model}', 'runner': 'auto', 'convert': 'auto', 'task': None, ...}})"
    shown = kwargs if len(kwargs) <= 50 else f"{kwargs[:25]}...{kwargs[-25:]}"  # pydantic shortens long inputs
    w.raw("api", "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig")
    w.raw("api", f"  Value error, {text} [type=value_error, input_value={shown}, input_type=ArgsKwargs]")
    w.raw("api", "    For further information visit https://errors.pydantic.dev/2.11/v/value_error")


def dtype_frames(version: Version, engine: str) -> list[tuple[str, str]]:
    """The worker's frames of the bfloat16 refusal (``vllm.dtype_support``): V0's and 0.8-0.10.1 V1's own
    ``_check_if_gpu_supports_dtype``, the CUDA platform's ``check_if_supports_dtype`` from 0.10.2."""
    if engine != "v1":
        return [("worker/worker.py", "init_device"), ("worker/worker.py", "_check_if_gpu_supports_dtype")]
    if version >= (0, 10, 2):
        return [("v1/worker/gpu_worker.py", "init_device"), ("platforms/cuda.py", "check_if_supports_dtype")]
    return [("v1/worker/gpu_worker.py", "init_device"), ("v1/worker/gpu_worker.py", "_check_if_gpu_supports_dtype")]


def argument_error(v: Version, detail: dict[str, Any]) -> str:
    """argparse's refusal as ``vllm serve`` prints it on stderr (usage, then the error), with ``detail``'s figures
    (``flag``, ``type_name``, ``value``) or stand-ins: nothing else, vLLM has not started."""
    tpl = templates_for("err_argument", v, "v1")[0]
    figures = {"flag": detail.get("flag", "--max-model-len"), "value": detail.get("value", "16Ki"),
               "type_name": detail.get("type_name", "human_readable_int" if v >= (0, 8, 4) else "int")}
    return f"usage: vllm serve [model_tag] [options]\nvllm serve: {fill(tpl, figures)}\n"
