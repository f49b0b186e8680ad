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


def _pydantic_frames(line: int) -> tuple[tuple[str, int, str, str], ...]:
    """``create_engine_config``'s call at ``line`` into a pydantic dataclass's ``__init__`` (from 0.9.1)."""
    return (("vllm/engine/arg_utils.py", line, "create_engine_config", "scheduler_config = SchedulerConfig("),
            ("pydantic/_internal/_dataclasses.py", 123, "__init__",
             "s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)"))


#: (path under site-packages, line, function, source line) of the frames from ``create_engine_config`` down to
#: ``SchedulerConfig._verify_args``'s raise, per release read (engine/arg_utils.py and config.py in each wheel);
#: a release between takes the nearest one at or below it. 0.6.3's SchedulerConfig has its own ``__init__``; from
#: 0.6.5 a dataclass's generated ``__init__`` (``<string>``) calls ``__post_init__``.
_BATCH_FRAMES: tuple[tuple[Version, tuple[tuple[str, int, str, str], ...]], ...] = (
    ((0, 5, 5), (("vllm/engine/arg_utils.py", 1021, "create_engine_config", "scheduler_config = SchedulerConfig("),
                 ("vllm/config.py", 1021, "__init__", "self._verify_args()"),
                 ("vllm/config.py", 1026, "_verify_args", "raise ValueError("))),
    ((0, 6, 5), (("vllm/engine/arg_utils.py", 1162, "create_engine_config", "scheduler_config = SchedulerConfig("),
                 ("<string>", 19, "__init__", ""),
                 ("vllm/config.py", 1369, "__post_init__", "self._verify_args()"),
                 ("vllm/config.py", 1374, "_verify_args", "raise ValueError("))),
    ((0, 7, 3), (("vllm/engine/arg_utils.py", 1269, "create_engine_config", "scheduler_config = SchedulerConfig("),
                 ("<string>", 24, "__init__", ""),
                 ("vllm/config.py", 1572, "__post_init__", "self._verify_args()"),
                 ("vllm/config.py", 1577, "_verify_args", "raise ValueError("))),
    ((0, 8, 5), (("vllm/engine/arg_utils.py", 1196, "create_engine_config", "scheduler_config = SchedulerConfig("),
                 ("<string>", 26, "__init__", ""),
                 ("vllm/config.py", 2020, "__post_init__", "self._verify_args()"),
                 ("vllm/config.py", 2025, "_verify_args", "raise ValueError("))),
    (PYDANTIC_SINCE, (("vllm/engine/arg_utils.py", 1223, "create_engine_config",
                       "scheduler_config = SchedulerConfig("),
                      ("pydantic/_internal/_dataclasses.py", 123, "__init__",
                       "s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)"))),
    # V1 from 0.11.1, where ``--no-enable-chunked-prefill`` is kept: the same pydantic frames, V1's scheduler config
    # raising from ``__post_init__``'s ``verify_max_model_len`` (config/scheduler.py@0.11.1, @0.25.0, @0.27.1, @0.34.0)
    ((0, 11, 1), _pydantic_frames(1649)),
    ((0, 25, 0), _pydantic_frames(2151)),
    ((0, 27, 1), _pydantic_frames(2270)),
    ((0, 34, 0), _pydantic_frames(2692)),
)
_BATCH_WORDS = ("max_num_batched_tokens ({max_num_batched_tokens}) is smaller than max_model_len ({max_model_len}). "
                "This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject "
                "longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")


def batch_frames(version: Version) -> list[tuple[str, int, str, str]]:
    """The scheduler config's frames of the batched-tokens refusal (``_BATCH_FRAMES``), paths under site-packages."""
    chosen = _BATCH_FRAMES[0][1]
    for since, frames in _BATCH_FRAMES:
        if version >= since:
            chosen = frames
    return [(path if path.startswith("<") else f"{_PACKAGES}/{path}", line, function, code)
            for path, line, function, code in chosen]


def batch_error(version: Version, max_num_batched_tokens: int, max_model_len: int) -> str:
    """The exception as Python prints it: a ValueError until 0.9.0, pydantic's ValidationError after."""
    words = _BATCH_WORDS.format(max_num_batched_tokens=max_num_batched_tokens, max_model_len=max_model_len)
    if version < PYDANTIC_SINCE:
        return f"ValueError: {words}"
    return ("pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n"
            f"  Value error, {words} [type=value_error, input_value=ArgsKwargs((), {{'runner_t..., "
            "'stream_interval': 1}), input_type=ArgsKwargs]\n"
            "    For further information visit https://errors.pydantic.dev/2.11/v/value_error")


def write_batch_refusal(w: Writer, max_len: int, detail: dict[str, Any]) -> None:
    """The API server's traceback for the batched-tokens refusal (V0, or V1 from 0.11.1 with chunked prefill off), with
    ``detail``'s figures or stand-ins."""
    mnbt = int(detail.get("max_num_batched_tokens", max(1, max_len // 4)))
    w.raw("api", "Traceback (most recent call last):")
    for path, line, function, code in batch_frames(w.v):
        w.raw("api", f'  File "{path}", line {line}, in {function}')
        if code:
            w.raw("api", f"    {code}")
    for part in batch_error(w.v, mnbt, int(detail.get("max_model_len", max_len))).splitlines():
        w.raw("api", part)


def env_frames(version: Version, variable: str, error: str) -> list[tuple[str, int, str, str]]:
    """The API server's frames of an environment variable's refusal, below ``run_server``: ``VLLM_USE_V1=0`` on 0.11
    fails the bare ``assert envs.VLLM_USE_V1`` in ``build_async_engine_client_from_engine_args``
    (entrypoints/openai/api_server.py@0.11.0:209, entered through ``build_async_engine_client``'s ``async with``);
    text ``int()`` refuses fails where ``create_engine_config`` first reads the variable, in envs.py's lambda
    ``bool(int(os.getenv(...)))`` (engine/arg_utils.py@0.9.2:1075, envs.py@0.9.2:965 and :638; the line numbers of
    0.9.2 stand for the releases between)."""
    site = f"{_PACKAGES}/vllm"
    if error.strip() == "AssertionError":
        return [(f"{site}/entrypoints/openai/api_server.py", 1902, "run_server_worker",
                 "async with build_async_engine_client("),
                ("/usr/lib/python3.12/contextlib.py", 210, "__aenter__", "return await anext(self.gen)"),
                (f"{site}/entrypoints/openai/api_server.py", 180, "build_async_engine_client",
                 "async with build_async_engine_client_from_engine_args("),
                ("/usr/lib/python3.12/contextlib.py", 210, "__aenter__", "return await anext(self.gen)"),
                (f"{site}/entrypoints/openai/api_server.py", 209, "build_async_engine_client_from_engine_args",
                 f"assert envs.{variable}")]
    default = "1" if variable == "VLLM_USE_V1" and version >= (0, 8, 0) else "0"  # V0 by default before 0.8
    return [(f"{site}/engine/arg_utils.py", 1075, "create_engine_config",
             f'try_v1 = envs.{variable} or not envs.is_set("{variable}")' if variable == "VLLM_USE_V1"
             else f"envs.{variable}"),
            (f"{site}/envs.py", 965, "__getattr__", "return environment_variables[name]()"),
            (f"{site}/envs.py", 638, "<lambda>", f'lambda: bool(int(os.getenv("{variable}", "{default}"))),')]
