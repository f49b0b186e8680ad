"""The order vLLM runs its config-time refusals in, release by release: when one start fails several, the words it
prints are the first one's. ``core.estimate`` and ``core.tp_refused`` walk the checks in this order (``first_refusal``).

Read from the wheels (engine/arg_utils.py ``create_engine_config``, config.py / config/model.py / config/vllm.py):

1. ``env_early``: VLLM_USE_V1 text ``int()`` refuses, where it is read before the model config checks anything: on
   0.6.5-0.7.3 by ``EngineArgs.__post_init__`` (``bool(envs.VLLM_USE_V1)`` for the unset prefix caching and
   max_num_seqs, engine/arg_utils.py@0.6.5 l.207, @0.7.3 l.220); from 0.9.0 through 0.11.0 by the first lines of
   ``ModelConfig`` (``if envs.VLLM_USE_V1 and self.seed is None``, config.py@0.9.0 l.451, @0.9.2 l.460,
   config/__init__.py@0.10.2 l.551, config/model.py@0.11.0 l.368). 0.8.x read it first after the model config.
2. ``ModelConfig``, built first (``create_model_config``): through 0.9.0 the max length (``len``) before the
   architecture (``arch``: ``_get_and_verify_max_len`` config.py@0.6.3 l.186, @0.8.5 l.508, @0.9.0 l.574, then the
   registry's ``is_multimodal_model`` l.194, l.517, l.583); from 0.9.2 the architecture first
   (``inspect_model_cls`` config.py@0.9.2 l.561 before the length l.614; config/model.py@0.11.0 l.544 / l.602,
   @0.20.0 l.552 / l.616, @0.34.0 l.758 / l.844); 0.9.1 was not read and is taken as 0.9.0. The dtype (``dtype``:
   ``--dtype float16`` on a model_type that refuses it, ``dtype_support.float16_refusal``, from 0.9.1) is resolved
   between the two from 0.9.2 (config.py@0.9.2 l.567, config/model.py@0.30.0 l.752, @0.34.0 l.826) and before both
   at 0.9.0 (l.534), where 0.9.1 is placed. Then
   ``_verify_quantization`` (``qmethod``: ``--quantization`` against the checkpoint's method, an unknown method;
   config.py@0.6.3 l.205, @0.8.5 l.546; config/model.py@0.11.0 l.643, @0.20.0 l.687, @0.34.0 l.942).
3. ``env``: VLLM_USE_V1 read right after the model config (``try_v1`` and the V1 oracle's ``_raise_or_fallback``,
   engine/arg_utils.py@0.8.5 l.1107, @0.10.2 l.1127, @0.11.0 l.1150). VLLM_USE_FLASHINFER_SAMPLER's and
   VLLM_USE_V2_MODEL_RUNNER's refusals were not read for their place and keep this one.
4. ``batch``: ``SchedulerConfig``, built before the ``VllmConfig`` that checks the rest (engine/arg_utils.py@0.8.5
   SchedulerConfig l.1196, VllmConfig l.1273; @0.11.0 l.1360, l.1431).
5. ``heads``: ``verify_with_parallel_config``, the attention heads against TP, first in the engine config's
   ``__post_init__`` (EngineConfig config.py@0.6.3 l.1889; VllmConfig config.py@0.6.4 l.2120, @0.8.5 l.3851;
   config/__init__.py@0.11.0 l.309; config/vllm.py@0.20.0 l.724, @0.34.0 l.1498).
6. ``qconfig``: ``_get_quantization_config`` after it (the card's capability, the method's config file, bfloat16;
   config.py@0.8.5 l.3866, config/__init__.py@0.11.0 l.320, config/vllm.py@0.20.0 l.745, @0.34.0 l.1555); before
   0.6.4 the model loader's ``_get_quantization_config`` (model_loader/loader.py@0.6.3 l.109), at load, still after
   the two above and before the weights are created.
7. ``env_late``: VLLM_USE_V1=0 on 0.11.0, refused by ``vllm serve``'s ``assert envs.VLLM_USE_V1`` once
   ``create_engine_config`` has returned (entrypoints/openai/api_server.py@0.11.0), before the engine is built.
8. ``weights``: the TP splits other than the heads (KV heads, widths, quantized groups and fp8 blocks), refused as
   each rank's worker creates the weights, after every config check.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Literal

from vllm_remedy.vllm import arch_release, dtype_support, engine_env, model_len, quant_support
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.memory.settings import EngineSettings
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

# Which config refuses a ``config_refused`` start (``Estimate.refused_by``), as the callers that prefix the words
# (``remedies.predict``) name it; stable whatever the stage inside it.
RefusedBy = Literal["model", "env", "tp", "quant", "batch"]
Stage = Literal["env_early", "len", "arch", "dtype", "qmethod", "env", "batch", "heads", "qconfig", "env_late",
                "weights"]
MODEL_CONFIG_READS_ENV_SINCE = (0, 9, 0)  # ModelConfig reads VLLM_USE_V1 first (config.py@0.9.0; 0.8.5 does not)
ARCH_BEFORE_LEN_SINCE = (0, 9, 2)  # config.py@0.9.2: inspect_model_cls before the max length (0.9.0: after)
# what ``_verify_quantization`` raises for --quantization against the checkpoint (``quant_support.method_run``)
MISMATCH = "ValueError: Quantization method specified in the model config"


@lru_cache(maxsize=64)
def stages(version: str | None) -> tuple[Stage, ...]:
    """The refusals in the order the release runs them (see the module's docstring); memoised, as every estimate
    asks."""
    v = parse_version(version) or NEWEST_RELEASE
    model: tuple[Stage, ...] = (
        ("arch", "dtype", "len", "qmethod") if v >= ARCH_BEFORE_LEN_SINCE else ("dtype", "len", "arch", "qmethod"))
    return ("env_early", *model, "env", "batch", "heads", "qconfig", "env_late", "weights")


def env_stage(problem: str, version: str | None) -> Stage:
    """Where an env refusal (``engine_env.Refusal``) stands: VLLM_USE_V1's text ``int()`` refuses first outside 0.8.x,
    0 on 0.11.0 after the engine config; every other one right after the model config."""
    v = parse_version(version) or NEWEST_RELEASE
    if problem.startswith(f"{engine_env.USE_V1}="):
        if "bool(int(value))" in problem and not engine_env.V1_DEFAULT_SINCE <= v < MODEL_CONFIG_READS_ENV_SINCE:
            return "env_early"
        if v >= engine_env.V0_REMOVED_SINCE and problem.startswith(f"{engine_env.USE_V1}=0:"):
            return "env_late"
    return "env"


#: A ``quant_method`` the release does not know (or an empty one: ``quant_support``): the model config's own refusal.
UNKNOWN_METHOD = "ValueError: Unknown quantization method:"


def quant_stage(words: str) -> Stage:
    """The model config's (``--quantization`` against the checkpoint, a method it does not know: ModelConfig's
    ``_verify_quantization``, config/__init__.py@0.10.2), else the engine config's quantization check."""
    return "qmethod" if words.startswith((MISMATCH, UNKNOWN_METHOD)) else "qconfig"


# Which config each stage is (the length's is ``max_len_exceeds_model``, not a ``config_refused``: None). ``qmethod``
# is "quant" for --quantization against the checkpoint, "model" for a method the release lacks (``first_refusal``).
_REFUSED_BY: dict[Stage, RefusedBy | None] = {
    "env_early": "env", "len": None, "arch": "model", "dtype": "model", "qmethod": "quant", "env": "env",
    "batch": "batch", "heads": "tp", "qconfig": "quant", "env_late": "env", "weights": "tp"}


def first_refusal(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings, split: str | None,
                  env_problem: str | None, batch: Callable[[], str | None]
                  ) -> tuple[RefusedBy | None, str, Stage] | None:
    """The refusal vLLM prints first for this start, in the release's order: (None, the length's words, "len") for
    the model config's max length (``max_len_exceeds_model``), else (the config, vLLM's words, the stage that refused:
    where it stands against later checks, such as the world size's); None when none refuses.
    ``split``: ``tp_split_problem``'s words for the TP size, None when vLLM takes it; ``batch``: the scheduler
    config's refusal in words, or None. An env that is unmodelled or unread (``env_problem``, not a refusal) raises
    ``CannotPredict`` where the env is read, unless an earlier check refused; with a TP size refused it is not judged
    (the TP refusal ends the start whatever the engine)."""
    version = settings.version
    quant: str | None = None
    quant_read = False
    heads = split is not None and model.num_heads % settings.tp != 0  # ModelConfig.verify_with_parallel_config
    env_refuses = engine_env.refuses(env_problem)
    env_at = env_stage(str(env_problem), version) if env_refuses else None
    for stage in stages(version):  # straight checks, not callables: every estimate walks them (bench_memory)
        said: str | None = None
        if stage in ("env_early", "env", "env_late"):
            if env_at == stage:
                said = str(env_problem)
            elif env_problem is not None and not env_refuses and stage == "env" and split is None:
                raise CannotPredict(env_problem)  # the env is unmodelled or unread
        elif stage == "len":
            said = model_len.refusal(model, settings)
        elif stage == "arch":
            said = arch_release.architecture_refusal(model, version)
        elif stage == "dtype":
            said = dtype_support.float16_refusal(settings.dtype, version, model.model_types)
        elif stage in ("qmethod", "qconfig"):
            if not quant_read:  # read once: the model config and the engine config each take their part
                quant, quant_read = quant_support.refusal(model, gpu, settings.quantization, version,
                                                          settings.dtype, settings.load_format), True
            said = quant if quant is not None and quant_stage(quant) == stage else None
            if said is not None and said.startswith(UNKNOWN_METHOD):
                return "model", said, stage  # as a method the release lacks (``arch_release``): the model's config
            if stage == "qmethod" and said is None and (lacking := arch_release.quantization_refusal(
                    model, version)) is not None:
                return "model", lacking, stage
        elif stage == "batch":
            said = batch()
        elif stage == "heads":
            said = split if heads else None
        elif stage == "weights":
            said = split if not heads else None
        if said is not None:
            return _REFUSED_BY[stage], said, stage
    return None
