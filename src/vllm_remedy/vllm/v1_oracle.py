"""The V1 engine's feature oracle on 0.8.0-0.10.2: the inputs the tools hold that make vLLM run V0 instead.

0.8.0-0.10.2 run V1 by default, but ``EngineArgs.create_engine_config`` first asks ``_is_v1_supported_oracle``
(engine/arg_utils.py); a feature V1 lacks goes through ``_raise_or_fallback(feature_name)``, which logs
"<feature> is not supported by the V1 Engine. Falling back to V0." and runs V0, or, with VLLM_USE_V1=1 set, raises
``NotImplementedError(f"VLLM_USE_V1=1 is not supported with {feature_name}.")`` before any GPU memory is used. The
checks are made in this order, and the first that fails names the feature. Read from the wheels 0.8.0, 0.8.1, 0.8.2,
0.8.3, 0.8.5, 0.9.0, 0.9.1, 0.9.2, 0.10.0, 0.10.1.1 and 0.10.2:

- "Compute Capability < 8.0": ``get_device_capability().major < 8`` on CUDA, arg_utils.py@0.8.0 through @0.10.1.1;
  gone from arg_utils.py@0.10.2.
- "--kv-cache-dtype" (any value but auto):
  * 0.8.0-0.8.1: always ("No Fp8 KV cache so far", arg_utils.py@0.8.0, @0.8.1), Hopper included.
  * 0.8.2-0.9.2: kept on V1 only for an fp8 value when FlashAttention will run (CUDA with VLLM_ATTENTION_BACKEND
    unset, or FLASH_ATTN_VLLM_V1) and ``flash_attn_supports_fp8()`` (arg_utils.py@0.8.2, @0.8.5, @0.9.2), which is
    ``get_flash_attn_version() == 3 and get_device_capability().major == 9`` (vllm_flash_attn/fa_utils.py@0.8.2,
    @0.8.3; attention/utils/fa_utils.py@0.8.5, @0.9.2, @0.10.2). FA3 is the default only on capability 9.x, and is
    forced back to 2 on 10.x: fp8 KV stays on V1 on Hopper (H100, H200, H20, GH200) only. 0.9.x also keeps ROCm on V1
    (not a card the tools size).
  * 0.10.0-0.10.1.1: ``CudaPlatform.is_kv_cache_dtype_supported(kv_cache_dtype)`` (platforms/cuda.py@0.10.0,
    @0.10.1.1): capability exactly 10.0 (``is_device_capability(100)``: B200, GB200) always, else fp8 with
    FlashAttention and ``flash_attn_supports_fp8()`` as above.
  * 0.10.2: ``is_kv_cache_dtype_supported(kv_cache_dtype, model_config)`` (platforms/cuda.py@0.10.2) adds MLA models:
    with no backend set they take FlashMLA (CUTLASS MLA on 10.0), both of which take fp8, so an MLA model stays on V1
    on any card; other models as in 0.10.0. "MLA model" is ``model_config.use_mla``: a DeepSeek config under
    VLLM_MLA_DISABLE=1 is an other model here (the caller passes what runs, ``settings.engine_rules``).
  The values vLLM accepts there are auto and fp8, fp8_e4m3, fp8_e5m2 (CacheDType, config.py@0.8.5; fp8_inc from
  0.10.0, an Intel Gaudi value): every one of them is an fp8 value.
- "--dtype torch.float32": the model dtype must be float16 or bfloat16 ("Only Fp16 and Bf16 dtypes since we only
  support FA", V1_SUPPORTED_DTYPES, arg_utils.py@0.8.0 through @0.9.1; gone from arg_utils.py@0.9.2).

Not modelled (the tools do not read these inputs, or already say "cannot predict" for them), each of which also
falls back (or, with VLLM_USE_V1=1, refuses) in some of these releases: VLLM_ATTENTION_BACKEND (XFormers and others
not in V1_BACKENDS; it also changes the kv-cache-dtype check above) and VLLM_FLASH_ATTN_VERSION (FA3 forced on or
off); --load-format tensorizer/sharded_state, --logits-processor-pattern, --preemption-mode, --disable-async-output-
proc, --scheduling-policy (to 0.8.5), --worker-cls (0.8.0), --num-scheduler-steps, --scheduler-delay-factor,
--additional-config (0.8.0), --guided-decoding-backend outside V1's, --enable-prompt-adapter, --cpu-offload-gb (to
0.8.1), --quantization gguf (bitsandbytes on 0.8.0), a --task other than generate, architectures V1 lacks (Mamba,
encoder-decoder), --model-impl transformers (0.8.0), concurrent partial prefills, OTLP tracing, --enable-prompt-embeds
(0.9.0-0.10.2), pipeline parallelism (0.8.0 experimental; 0.8.2-0.8.5 without Ray, 0.9.x-0.10.x with an executor
other than ray/mp/external_launcher); speculative decoding and LoRA, which the tools already cannot predict.
"""

from __future__ import annotations

Version = tuple[int, int, int]

ORACLE_SINCE = (0, 8, 0)  # V1 by default (envs.py@0.8.0)
ORACLE_UNTIL = (0, 11, 0)  # 0.11.0 has no V0 engine to fall back to
CAPABILITY_CHECK_UNTIL = (0, 10, 2)  # "Compute Capability < 8.0" through arg_utils.py@0.10.1.1
KV_FA3_CHECK_SINCE = (0, 8, 2)  # flash_attn_supports_fp8, arg_utils.py@0.8.2 (0.8.0-0.8.1: any value falls back)
KV_PLATFORM_CHECK_SINCE = (0, 10, 0)  # CudaPlatform.is_kv_cache_dtype_supported, platforms/cuda.py@0.10.0
KV_MLA_SINCE = (0, 10, 2)  # ... with model_config: MLA models take FlashMLA / CUTLASS MLA (platforms/cuda.py@0.10.2)
DTYPE_CHECK_UNTIL = (0, 9, 2)  # V1_SUPPORTED_DTYPES through arg_utils.py@0.9.1
HOPPER = 9  # FA3 is the default on capability 9.x only (fa_utils.py ``get_flash_attn_version``)
B200 = (10, 0)  # ``is_device_capability(100)``: exact


def fallback(version: Version, capability: tuple[int, int] | None, kv_cache_dtype: str = "auto",
             dtype: str | None = None, mla: bool = False) -> str | None:
    """The feature name ``_raise_or_fallback`` reports where this release's oracle leaves V1 for V0 on this card
    (``"--kv-cache-dtype"``), or None where V1 runs. ``dtype``: the dtype the model runs in (None: float16 or
    bfloat16); ``mla``: the release runs the model's MLA (``use_mla``; not under VLLM_MLA_DISABLE). An unknown
    capability (None) is taken as a card V1 supports: these checks are the card's, and nothing says which card it is."""
    if not ORACLE_SINCE <= version < ORACLE_UNTIL:
        return None
    if capability is not None and version < CAPABILITY_CHECK_UNTIL and capability < (8, 0):
        return "Compute Capability < 8.0"
    if kv_cache_dtype != "auto" and capability is not None and not _kv_supported(version, capability,
                                                                                 kv_cache_dtype, mla):
        return "--kv-cache-dtype"
    if dtype == "float32" and version < DTYPE_CHECK_UNTIL:
        return "--dtype torch.float32"
    return None


def _kv_supported(version: Version, capability: tuple[int, int], kv_cache_dtype: str, mla: bool) -> bool:
    """Whether V1 takes this non-auto KV cache dtype on this card (see the module docstring)."""
    if version < KV_FA3_CHECK_SINCE:
        return False
    fp8 = kv_cache_dtype.startswith("fp8")
    if version >= KV_MLA_SINCE and mla:
        return True
    if version >= KV_PLATFORM_CHECK_SINCE and capability == B200:
        return True
    return fp8 and capability[0] == HOPPER


def refusal(feature: str) -> str:
    """The exception line vLLM raises for this feature with VLLM_USE_V1=1 (``_raise_or_fallback``)."""
    return f"NotImplementedError: VLLM_USE_V1=1 is not supported with {feature}."


def fallback_line(feature: str) -> str:
    """The WARNING text vLLM logs when it falls back (``_raise_or_fallback``, recommend_to_remove=False)."""
    return f"{feature} is not supported by the V1 Engine. Falling back to V0. "
