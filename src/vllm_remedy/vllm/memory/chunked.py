"""Whether vLLM chunks prefills, by engine and release, and the batch its scheduler config then refuses.

V0 (to 0.10.2) turns chunked prefill on by default only above 32,768 tokens, and not for every model:
``EngineArgs.create_engine_config`` (engine/arg_utils.py@0.5.5, @0.6.0, @0.6.1, @0.6.2, @0.6.3, @0.6.4, @0.6.5,
@0.7.0, @0.7.3) and ``_set_default_args_v0`` (@0.8.0, @0.8.5, @0.9.2, @0.10.0, @0.10.1.1, @0.10.2) leave it off for a
model with a sliding window (``ModelConfig.get_sliding_window``: the config's ``sliding_window`` unless
``use_sliding_window`` is false or ``--disable-sliding-window``, config.py@0.6.3, @0.8.5, @0.10.0), for a multimodal
model from 0.6.2 (``is_multimodal_model``; 0.6.5-0.7.3 write ``bool(envs.VLLM_USE_V1)``, off on V0) and for MLA from
0.8.0 ("Chunked prefill not supported for Multimodal or MLA in V0": ``model_config.use_mla``, so not for a DeepSeek
config whose MLA VLLM_MLA_DISABLE turns off, arg_utils.py@0.8.0, @0.9.2, @0.10.2), and, in 0.5.5-0.6.0, with
``--enable-prefix-caching``. LoRA and speculative decoding also keep it off;
they are unmodelled flags (``unmodelled``), so no start with them is predicted.

V1 "always uses chunked prefills" for a generative model from 0.8.0 to 0.11.0: ``_set_default_args_v1`` /
``_set_default_args`` set ``enable_chunked_prefill = True`` whatever the flag says (engine/arg_utils.py@0.8.0,
@0.8.5, @0.9.2, @0.10.2, @0.11.0), so ``--no-enable-chunked-prefill`` changes nothing there. From 0.11.1 the flag is
kept (``if self.enable_chunked_prefill is None``, engine/arg_utils.py@0.11.1, @0.25.0, @0.34.0), the default batch
becomes ``max(max_model_len, default)`` without it, and ``SchedulerConfig.verify_max_model_len`` refuses an explicit
batch below the length (config/scheduler.py@0.11.1, @0.25.0, @0.27.1, @0.34.0), with V0's words.
"""

from __future__ import annotations

from vllm_remedy.vllm.catalog import ModelSpec

#: V0's default: on above this length (``use_long_context = max_model_len > 32768``).
LONG_CONTEXT = 32768
#: Before this release chunked prefill is off unless the flag turns it on (``enable_chunked_prefill: bool = False``,
#: engine/arg_utils.py@0.4.1, @0.4.2, @0.5.0.post1; the long-context default is in @0.5.3.post1; 0.5.1 and 0.5.2 were
#: not read and are taken as off, the larger profile batch). Read post hoc, after a blind 0.4.1 L40 start.
V0_LONG_CONTEXT_DEFAULT_SINCE = (0, 5, 3)
#: V0 leaves multimodal models out of the default from 0.6.2 (engine/arg_utils.py@0.6.1 has no such test, @0.6.2 has).
V0_MULTIMODAL_OFF_SINCE = (0, 6, 2)
#: V0 leaves MLA models out of the default from 0.8.0 (``_set_default_args_v0``@0.8.0; 0.7.x turns it on, then
#: ``VllmConfig.__post_init__`` forces it off after the scheduler config has checked the batch, config.py@0.7.3).
V0_MLA_OFF_SINCE = (0, 8, 0)
#: 0.5.5 and 0.6.0 leave ``--enable-prefix-caching`` starts out of the default too (``and not
#: self.enable_prefix_caching``, engine/arg_utils.py@0.5.5, @0.6.0; gone @0.6.1).
V0_PREFIX_CACHING_KEPT_SINCE = (0, 6, 1)
#: The first V1 release that keeps ``--no-enable-chunked-prefill`` for a generative model.
V1_FLAG_KEPT_SINCE = (0, 11, 1)


def multimodal(model: ModelSpec) -> bool:
    """vLLM's ``is_multimodal_model`` (the architecture implements ``SupportsMultiModal``), read here as the config
    carrying a vision tower (``shapes.vision``; ``architectures.check_vision`` refuses a vision architecture without
    one)."""
    return model.vision_params_b > 0


def v0_default(model: ModelSpec, version: tuple[int, ...], max_len: int, disable_sliding_window: bool,
               prefix_caching: bool = False, mla: bool = False) -> bool:
    """V0's chunked prefill when no flag sets it (see the module docstring); ``mla``: the release runs the model's
    MLA (``Resolved.mla``: ``model_config.use_mla``, which VLLM_MLA_DISABLE turns off), not merely a config that has
    ``kv_lora_rank``."""
    if version < V0_LONG_CONTEXT_DEFAULT_SINCE:
        return False
    if prefix_caching and version < V0_PREFIX_CACHING_KEPT_SINCE:
        return False
    if multimodal(model) and version >= V0_MULTIMODAL_OFF_SINCE:
        return False
    if mla and version >= V0_MLA_OFF_SINCE:
        return False
    window = None if disable_sliding_window else model.sliding_window
    return max_len > LONG_CONTEXT and window is None


def v0_default_batch(model: ModelSpec, version: tuple[int, ...], chunked: bool, max_len: int, chunk: int) -> int:
    """V0's ``max_num_batched_tokens`` when no flag sets it (``SchedulerConfig.__post_init__``, config.py@0.6.0,
    @0.6.3, @0.8.5, @0.10.0): the chunk with chunked prefill, else ``max(max_model_len, 2048)``; then, for a multimodal
    model, at least ``_MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS`` (4096 in 0.6.0-0.6.2, 5120 from 0.6.3; 0.5.5 has
    none)."""
    batch = chunk if chunked else max(max_len, 2048)
    if multimodal(model) and version >= (0, 6, 0):
        batch = max(batch, 5120 if version >= (0, 6, 3) else 4096)
    return batch


def chunked_prefill(engine: str, version: tuple[int, ...], model: ModelSpec, flag: bool | None, max_len: int,
                    disable_sliding_window: bool, prefix_caching: bool = False, mla: bool = False) -> bool:
    """Whether the scheduler config sees chunked prefill on: V1 forces it before 0.11.1, keeps the flag after."""
    if engine == "V1":
        return True if flag is None or version < V1_FLAG_KEPT_SINCE else flag
    return v0_default(model, version, max_len, disable_sliding_window, prefix_caching, mla) if flag is None else flag


def refused(chunked: bool, mnbt: int, max_len: int) -> bool:
    """``SchedulerConfig``'s check: a batch below the length without chunked prefill (V0's ``_verify_args``,
    V1's ``verify_max_model_len`` from 0.11.1)."""
    return not chunked and mnbt < max_len
