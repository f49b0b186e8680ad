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
  l.1332, l.1541, l.1586); before 0.12 no config compares them: the executor fails placing the workers, after every
  config check.
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
