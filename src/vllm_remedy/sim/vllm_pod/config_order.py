"""The order a rehearsal pod's vLLM runs its config-time refusals in, so that a pod failing several prints the first
one's words, as the release does. The pod's own reading, kept apart from the tools' (``vllm.memory``), from the
wheels (engine/arg_utils.py ``create_engine_config``; config.py@0.6.3, @0.8.5, @0.9.0, @0.9.2; config/model.py and
config/__init__.py@0.11.0; config/vllm.py@0.20.0, @0.34.0):

- VLLM_USE_V1 text ``int()`` refuses, read in ``ModelConfig``'s first lines from 0.9.0 through 0.11.0 (``if
  envs.VLLM_USE_V1 and self.seed is None``, config.py@0.9.0 l.451, config/model.py@0.11.0 l.368): before it checks
  anything (0.8.x read it after the model config; before 0.8 the pod does not read the variable, ``engine_select``).
- ``ModelConfig`` first: through 0.9.0 the max length before the architecture (config.py@0.8.5 l.508 / l.517), from
  0.9.2 the architecture first (``inspect_model_cls`` config.py@0.9.2 l.561 before l.614; config/model.py@0.11.0
  l.544 / l.602, @0.34.0 l.758 / l.844); then ``_verify_quantization``, ``--quantization`` against the checkpoint
  (``qmethod``; config/model.py@0.11.0 l.643).
- ``env``: VLLM_USE_V1 read right after the model config (engine/arg_utils.py@0.8.5 l.1107, @0.11.0 l.1150).
- the world size against the GPUs: ``ParallelConfig.__post_init__`` from 0.12.0 (config/parallel.py@0.12.0 l.564,
  "Tensor parallel size (N) cannot be larger than the number of available GPUs"; @0.13.0 and @0.34.0 "World size
  (N) is larger than ..."), built after the model config and before the scheduler config (engine/arg_utils.py@0.13.0
  l.1332, l.1541, l.1586); ParallelConfig is a pydantic dataclass, so its ValueError is printed as pydantic's
  ValidationError ("Value error, ..."). Before 0.12 no config compares them: Ray's executor fails placing the
  workers, after every config check (``world_size_error``, ``ray_wait_logs``).
- ``batch``: ``SchedulerConfig``, before ``VllmConfig`` (engine/arg_utils.py@0.11.0 l.1360 / l.1431).
- ``heads``: ``VllmConfig.__post_init__``'s ``verify_with_parallel_config`` (config/__init__.py@0.11.0 l.309), then
  ``qconfig``, its ``_get_quantization_config`` (l.320; the model loader's before 0.6.4, model_loader/loader.py@0.6.3).
- ``env_late``: 0.11.0's ``assert envs.VLLM_USE_V1`` once the engine config is built (api_server.py@0.11.0).
- then the executor (the GPUs the world size needs) and the workers, which refuse the other TP splits as they create
  the weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from vllm_remedy.vllm import engine_env

T = TypeVar("T")
ENV_IN_MODEL_CONFIG = ((0, 9, 0), (0, 11, 1))  # the releases whose ModelConfig reads VLLM_USE_V1 first
WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE = (0, 12, 0)  # config/parallel.py@0.12.0; 0.11.0's config has no such check
ARCH_BEFORE_LENGTH_SINCE = (0, 9, 2)  # config.py@0.9.2 (0.9.1 not read: taken as 0.9.0)
MODEL_CONFIG = ("qmethod", "env")  # after the length and the architecture, before the scheduler config
ENGINE_CONFIG = ("batch", "heads", "qconfig", "env_late")  # then the executor and the workers
_MISMATCH = "ValueError: Quantization method specified in the model config"
WORLD_SIZE_WORDS_SINCE = (0, 13, 0)  # "World size (N) is larger ..." (config/parallel.py@0.13.0 l.565)
# Ray's placement group: from 0.6.5 a warning, then a wait of PG_WAIT_TIMEOUT for GPUs that never come
# (executor/ray_utils.py@0.6.5 l.193, @0.11.0 l.252); 0.6.4.post1 raised the warning's words at once (l.281-283)
RAY_WAIT_SINCE = (0, 6, 5)
PG_WAIT_TIMEOUT = 1800
RAY_HOST_IP_HINT_SINCE = (0, 7, 3)  # the wait's line names VLLM_HOST_IP (ray_utils.py@0.7.3 l.221; @0.7.0 does not)
RAY_LIST_NODES_SINCE = (0, 8, 0)  # `ray list nodes` too (ray_utils.py@0.11.0; 0.7.3 lacks it; 0.8.0-0.8.4 not read)
POD_IP = "<pod IP>"  # where the pod's own IP goes (``get_ip()``), filled in by the runtime that knows it
_PARALLEL_INPUT = "ArgsKwargs((), {'pipeline_parallel_size': 1, ..., '_api_process_rank': 0})"  # arg_utils@0.13.0


def architecture_before_length(v: tuple[int, int, int], words: str) -> bool:
    """Whether the registry's refusal (``registry.refusal``) speaks before a length the model config refuses too: an
    architecture from 0.9.2; a quantization method the release lacks never (``_verify_quantization`` comes after)."""
    return v >= ARCH_BEFORE_LENGTH_SINCE and "Unknown quantization method" not in words


def env_before_model_config(v: tuple[int, int, int], inputs: Mapping[str, str]) -> str | None:
    """The ``int()`` refusal of a VLLM_USE_V1 text on a release whose model config reads it first, or None."""
    value = inputs.get(engine_env.INPUT)
    if value is None or not ENV_IN_MODEL_CONFIG[0] <= v < ENV_IN_MODEL_CONFIG[1]:
        return None
    try:
        int(value)
    except ValueError:
        return f"ValueError: invalid literal for int() with base 10: {value!r}"
    return None


def env_stage(variable: str, line: str) -> str:
    """0.11.0's bare assert on VLLM_USE_V1=0 comes after the engine config; every other env refusal right after the
    model config."""
    return "env_late" if variable == engine_env.USE_V1 and line == "AssertionError" else "env"


def quant_stage(line: str) -> str:
    """``--quantization`` against the checkpoint is the model config's; the card, the file, the dtype the engine
    config's."""
    return "qmethod" if line.startswith(_MISMATCH) else "qconfig"


def first(found: Mapping[str, T], stages: Sequence[str]) -> T | None:
    """The refusal of the first of ``stages`` that ``found`` holds, or None."""
    return next((found[s] for s in stages if s in found), None)


def _specs(world: int, ip: str) -> str:
    """Ray's bundle specs as vLLM prints them: one GPU each, the first pinned to this node."""
    return "[" + ", ".join([f"{{'GPU': 1.0, 'node:{ip}': 0.001}}", *["{'GPU': 1.0}"] * (world - 1)]) + "]"


def world_size_error(v: tuple[int, int, int], world: int, available: int) -> str:
    """The exception a single pod's vLLM ends with when TP x PP (``world``) is above its ``available`` GPUs, by
    release: ParallelConfig's refusal inside pydantic's ValidationError from 0.12.0 (0.13.0's three-line message,
    0.12's one line), Ray's placement-group ValueError before (after ``ray_wait_logs``), 0.6.4's at once."""
    if v >= WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE:
        if v >= WORLD_SIZE_WORDS_SINCE:
            words = (f"World size ({world}) is larger than the number of available GPUs ({available}) in this node. "
                     "If this is intentional and you are using:\n  - ray, set '--distributed-executor-backend ray'."
                     "\n  - multiprocessing, set '--nnodes' appropriately.")
        else:
            words = f"Tensor parallel size ({world}) cannot be larger than the number of available GPUs ({available})."
        shown = f"{_PARALLEL_INPUT[:25]}...{_PARALLEL_INPUT[-25:]}"  # pydantic shortens long inputs
        return ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig\n"
                f"  Value error, {words} [type=value_error, input_value={shown}, input_type=ArgsKwargs]\n"
                "    For further information visit https://errors.pydantic.dev/2.11/v/value_error")
    if v < RAY_WAIT_SINCE:
        return ("ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement "
                "group.")
    see = "`ray status` and `ray list nodes`" if v >= RAY_LIST_NODES_SINCE else "`ray status`"
    return (f"ValueError: Cannot provide a placement group of placement_group_specs={_specs(world, POD_IP)} within "
            f"{PG_WAIT_TIMEOUT} seconds. See {see} to make sure the cluster has enough resources.")


def ray_wait_logs(v: tuple[int, int, int], world: int) -> tuple[tuple[float, str, str], ...]:
    """What Ray's executor logs before ``world_size_error`` on 0.6.5-0.11 (seconds after it starts waiting, level,
    message): the warning, then ``_wait_until_pg_ready``'s line each time its doubling wait (10 s, 20 s, ...) ends;
    the loop only checks the 1800 s after a wait, so the last ends at 2550 s, when the ValueError is raised."""
    if v >= WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE or v < RAY_WAIT_SINCE:
        return ()
    out: list[tuple[float, str, str]] = [(0.0, "WARNING", "The number of required GPUs exceeds the total number of "
                                          "available GPUs in the placement group.")]
    check = "`ray status` and `ray list nodes`" if v >= RAY_LIST_NODES_SINCE else "`ray status`"
    hint = (", and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP environment variable "
            "specified in each node if you are running on a multi-node." if v >= RAY_HOST_IP_HINT_SINCE else ".")
    waited, interval = 0, 10
    while waited < PG_WAIT_TIMEOUT:
        waited += interval
        interval *= 2
        out.append((float(waited), "INFO", f"Waiting for creating a placement group of specs for {waited} seconds. "
                    f"specs={_specs(world, POD_IP)}. Check {check} to see if you have enough resources{hint}"))
    return tuple(out)
