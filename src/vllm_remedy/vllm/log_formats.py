"""vLLM startup-log message formats, version by version, as data.

Each ``Template`` is one message as a vLLM release prints it (read from the wheels' source,
0.6.3 … 0.34.0). The same table drives both directions: the parser compiles every template
into a regex, the rehearsal cluster renders the one that is valid for a given version. A
change in vLLM's wording is therefore a one-line edit here, not a code change.

Placeholders are ``{name:spec}``; ``spec`` says how vLLM formats the value:
``.Nf`` fixed decimals, ``d`` integer, ``,`` comma-grouped integer, ``r2`` vLLM's
``format_gib`` (``str(round(x, 2))``), ``g`` Python ``str()`` of a float, ``s`` free text, ``dev`` the KV
pool's device word at the head of a line (``GPU``, ``XPU``, ``GPU + host``). Releases 0.21-0.34 are cited as
``file@version`` (paths inside the ``vllm`` package of the PyPI sdist).
"""

from __future__ import annotations

import re
from functools import cache

from vllm_remedy.vllm.log_formats_late import (
    ADVISORY_HEAD,
    ADVISORY_TAIL,
    CPU_NOTE_BOTH,
    CPU_NOTE_UTIL,
    LATE_KV,
    USAGE_3,
    USAGE_4,
)
from vllm_remedy.vllm.log_template import OLDEST, Template, Version, v
from vllm_remedy.vllm.log_template import parse_version as parse_version  # re-exported: callers import it from here

# The "Try increasing …" tails of vLLM's errors changed often; only the head carries numbers.
_TRY_UTIL = "Try increasing `gpu_memory_utilization` when initializing the engine."
_TRY_BOTH = "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
_ESTIMATE = " Based on the available memory, the estimated maximum model length is {suggested_max_model_len:d}."
_FREE_TAIL = " Decrease GPU memory utilization or reduce GPU memory used by other processes."
_MAXLEN_HEAD = ("To serve at least one request with the {apostrophe} max seq len ({max_model_len:d}), "
                "({needed_gib:SPEC} UNIT KV cache is needed, which is larger than the available KV cache "
                "memory ({available_gib:SPEC} UNIT).")


_CAPTURE_OOM = (" If out-of-memory error occurs during cudagraph capture, consider decreasing "
                "`gpu_memory_utilization` or switching to eager mode. You can also reduce the `max_num_seqs` as "
                "needed to decrease memory usage.")


_LONG_HEAD = ("User-specified max_model_len ({max_model_len:d}) is greater than the derived max_model_len "
              "({max_len_key:s}={derived_max_model_len:s} or model_max_length={model_max_length:s} in model's "
              "config.json).")
_LONG_ENV = " To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
LONG_OLD_NOTE = " This may lead to incorrect model outputs or CUDA errors."  # part of the message until 0.10.1
LONG_CAUTION = (" VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position "
                "encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute "
                "position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds "
                "error.")  # from 0.10.2, after the error's advice and in the warning the env var turns it into
# The warning's end until 0.10.1.
LONG_OLD_WARNING = " Make sure the value is correct and within the model context size."
LONG_CAUTION_SINCE: Version = (0, 10, 2)
_LONG_OLD_TAIL = LONG_OLD_NOTE + _LONG_ENV
_LONG_TAIL = _LONG_ENV + "." + LONG_CAUTION




_BF16_HEAD = ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu_name:s} GPU has "
              "compute capability {capability:cc}.")
_BF16_TAIL = " You can use float16 instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half."
_BF16_OLD_TAIL = _BF16_TAIL.replace("the `dtype`", "the`dtype`")


def _maxlen(spec: str, unit: str, apostrophe: str = "models's") -> str:
    return (_MAXLEN_HEAD.replace("{apostrophe}", apostrophe).replace("SPEC", spec).replace("UNIT", unit))


TEMPLATES: tuple[Template, ...] = (
    # --- weights -------------------------------------------------------------------------------
    Template("weights", "Loading model weights took {weights_gib:.4f} GB", until=v("0.8.0"),
             source="model_runner.py"),
    Template("weights", "Model loading took {weights_gib:.4f} GB and {load_seconds:.6f} seconds",
             since=v("0.8.0"), until=v("0.8.3"), source="gpu_model_runner.py"),
    Template("weights", "Model loading took {weights_gib:.4f} GiB and {load_seconds:.6f} seconds",
             since=v("0.8.3"), until=v("0.11.1"), source="gpu_model_runner.py"),
    Template("weights", "Model loading took {weights_gib:.4f} GiB memory and {load_seconds:.6f} seconds",
             since=v("0.11.1"), until=v("0.14.0"), source="gpu_model_runner.py"),
    Template("weights", "Model loading took {weights_gib:r2} GiB memory and {load_seconds:.6f} seconds",
             since=v("0.14.0"), until=v("0.34.0"), source="gpu_model_runner.py", runner="v1"),
    # Model Runner V2 (v1/worker/gpu/model_runner.py): no "memory" until 0.27.x (@0.21.0-@0.27.1), then the V1
    # wording (@0.28.0); at 0.34 the only runner. Its announcement, gpu_worker.py@0.21.0-@0.33.0 (gone @0.34.0).
    Template("weights", "Model loading took {weights_gib:r2} GiB and {load_seconds:.6f} seconds", since=v("0.19.0"),
             until=v("0.28.0"), engine="v1", source="model_runner.py", runner="v2"),
    Template("weights", "Model loading took {weights_gib:r2} GiB memory and {load_seconds:.6f} seconds",
             since=v("0.28.0"), engine="v1", source="model_runner.py", runner="v2"),
    Template("runner", "Using V2 Model Runner", since=v("0.19.0"), until=v("0.34.0"), engine="v1",
             source="gpu_worker.py", runner="v2", parse=False),
    # --- V0 memory profile ---------------------------------------------------------------------
    Template("profile", "Memory profiling results: total_gpu_memory={total_gpu_gib:.2f}GiB "
             "initial_memory_usage={initial_gib:.2f}GiB peak_torch_memory={peak_torch_gib:.2f}GiB "
             "memory_usage_post_profile={post_profile_gib:.2f}Gib non_torch_memory={non_torch_gib:.2f}GiB "
             "kv_cache_size={kv_cache_gib:.2f}GiB gpu_memory_utilization={gpu_memory_utilization:.2f}",
             since=v("0.6.4"), until=v("0.6.5"), engine="v0"),
    Template("profile", "Memory profiling takes {profile_seconds:.2f} seconds", since=v("0.6.5"),
             until=v("0.11.0"), engine="v0"),
    Template("profile", "the current vLLM instance can use total_gpu_memory ({total_gpu_gib:.2f}GiB) x "
             "gpu_memory_utilization ({gpu_memory_utilization:.2f}) = {requested_gib:.2f}GiB",
             since=v("0.6.5"), until=v("0.11.0"), engine="v0"),
    Template("profile", "model weights take {profile_weights_gib:.2f}GiB; non_torch_memory takes "
             "{non_torch_gib:.2f}GiB; PyTorch activation peak memory takes {activation_gib:.2f}GiB; the rest "
             "of the memory reserved for KV Cache is {kv_cache_gib:.2f}GiB.",
             since=v("0.6.5"), until=v("0.11.0"), engine="v0"),
    # --- V1 memory profile ---------------------------------------------------------------------
    Template("profile", "Memory profiling takes {profile_seconds:.2f} seconds. Total non KV cache memory: "
             "{non_kv_gib:.2f}GiB; torch peak memory increase: {activation_gib:.2f}GiB; non-torch forward "
             "increase memory: {non_torch_gib:.2f}GiB; weights memory: {profile_weights_gib:.2f}GiB.",
             since=v("0.9.1"), until=v("0.14.0"), engine="v1", level="DEBUG", source="gpu_worker.py", render=False),
    Template("profile", "Memory profiling takes {profile_seconds:.2f} seconds. Total non KV cache memory: "
             "{non_kv_gib:r2}GiB; torch peak memory increase: {activation_gib:r2}GiB; non-torch forward "
             "increase memory: {non_torch_gib:r2}GiB; weights memory: {profile_weights_gib:r2}GiB.",
             since=v("0.14.0"), until=v("0.27.0"), engine="v1", level="DEBUG", source="gpu_worker.py", render=False),
    # utils/mem_utils.py@0.27.0 MemoryProfilingResult.__repr__: the mem_get_info total replaces non-torch.
    Template("profile", "Memory profiling takes {profile_seconds:.2f} seconds. Total non KV cache memory: "
             "{non_kv_gib:r2}GiB; torch peak memory increase: {activation_gib:r2}GiB; total consumed (from "
             "mem_get_info): {consumed_gib:r2}GiB; weights memory: {profile_weights_gib:r2}GiB.",
             since=v("0.27.0"), engine="v1", level="DEBUG", source="gpu_worker.py", render=False),
    Template("profile", "Free memory on device ({free_gib:r2}/{total_gpu_gib:r2} GiB) on startup. Desired GPU "
             "memory utilization is ({gpu_memory_utilization:g}, {requested_gib:r2} GiB). Actual usage is "
             "{profile_weights_gib:r2} GiB for weight, {activation_gib:r2} GiB for peak activation, "
             "{non_torch_gib:r2} GiB for non-torch memory, and {cudagraph_gib:r2} GiB for CUDAGraph memory.",
             since=v("0.10.2"), until=v("0.26.0"), engine="v1", level="DEBUG", source="gpu_worker.py", render=False),
    # The advisory after capture: INFO from 0.26.0 (logger.info, gpu_worker.py@0.26.0; logger.debug @0.25.1); from
    # 0.27.0 (and 0.26.1rc1 dev builds) weights + non-torch print as one mem_get_info sum and the peak activation
    # includes the applied CUDA-graph estimate (gpu_worker.py@0.27.0). @0.34.0 prints the resolved utilization.
    *(Template("advisory", ADVISORY_HEAD + usage + ADVISORY_TAIL, since=since, until=until, engine="v1",
               source="gpu_worker.py")
      for since, until, usage in ((v("0.26.0"), v("0.27.0"), USAGE_4), (v("0.27.0"), None, USAGE_3))),
    # The same line cut after its figures (logs quoted with "..."): the figures still count.
    Template("advisory_usage", ADVISORY_HEAD + USAGE_3, since=v("0.27.0"), engine="v1", source="gpu_worker.py",
             render=False),
    # The head every form of the post-start advisory shares (0.10.2 "for weight, ...", 2026 "for consumed memory
    # (weights + non-torch), ...", DEBUG or INFO): the free/total GiB torch saw before vLLM allocated anything.
    Template("startup_free", "Free memory on device ({free_gib:r2}/{total_gpu_gib:r2} GiB) on startup. Desired GPU "
             "memory utilization is ({gpu_memory_utilization:g}, {requested_gib:r2} GiB).",
             since=v("0.10.2"), engine="v1", source="gpu_worker.py", render=False),
    Template("kv_memory", "Available KV cache memory: {kv_cache_gib:.2f} GiB", since=v("0.9.1"),
             until=v("0.14.0"), engine="v1", source="gpu_worker.py"),
    Template("kv_memory", "Available KV cache memory: {kv_cache_gib:r2} GiB", since=v("0.14.0"),
             engine="v1", source="gpu_worker.py"),
    # --- blocks / tokens / concurrency ---------------------------------------------------------
    Template("blocks", "# GPU blocks: {gpu_blocks:d}, # CPU blocks: {cpu_blocks:d}", until=v("0.7.0"),
             engine="v0", source="gpu_executor.py"),
    Template("blocks", "# cuda blocks: {gpu_blocks:d}, # CPU blocks: {cpu_blocks:d}", since=v("0.7.0"),
             until=v("0.11.0"), engine="v0", source="executor_base.py"),
    Template("blocks", "# GPU blocks: {gpu_blocks:d}", since=v("0.6.4"), until=v("0.8.0"), engine="v1",
             source="kv_cache_utils.py"),
    Template("tokens", "GPU KV cache size: {kv_cache_tokens:,} tokens", since=v("0.8.0"), until=v("0.28.0"),
             engine="v1", source="kv_cache_utils.py"),
    Template("concurrency", "Maximum concurrency for {concurrency_max_len:d} tokens per request: "
             "{max_concurrency:.2f}x", until=v("0.11.0"), engine="v0", source="executor_base.py"),
    Template("concurrency", "Maximum concurrency for {concurrency_max_len:d} tokens per request: "
             "{max_concurrency:.2f}x", since=v("0.6.4"), until=v("0.8.0"), engine="v1", source="kv_cache_utils.py"),
    Template("concurrency", "Maximum concurrency for {concurrency_max_len:,} tokens per request: "
             "{max_concurrency:.2f}x", since=v("0.8.0"), until=v("0.28.0"), engine="v1", source="kv_cache_utils.py"),
    # One line from 0.28.0 (update_kv_cache_capacity, v1/core/kv_cache_utils.py@0.28.0); the pool's device word
    # from 0.30.0 ("GPU" on CUDA, @0.30.0), " + host" after it with a HiSparse host pool (@0.32.0).
    Template("tokens", "GPU KV cache size: {kv_cache_tokens:,} tokens, Maximum concurrency for "
             "{concurrency_max_len:,} tokens per request: {max_concurrency:.2f}x", since=v("0.28.0"),
             until=v("0.30.0"), engine="v1", source="kv_cache_utils.py"),
    Template("tokens", "{kv_device:dev} KV cache size: {kv_cache_tokens:,} tokens, Maximum concurrency for "
             "{concurrency_max_len:,} tokens per request: {max_concurrency:.2f}x", since=v("0.30.0"),
             engine="v1", source="kv_cache_utils.py"),
    *LATE_KV,
    # --- CUDA graphs ---------------------------------------------------------------------------
    # V0 announces the capture when it starts (the 0.6.3 log in tests/data/logs; 0.6.4 logs already use the
    # "cudagraphs for decoding" wording, 0.6.6 added the out-of-memory advice). V1 prints only tqdm's bar.
    Template("capture", "Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model "
             "is not static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in "
             "the CLI.", until=v("0.6.4"), engine="v0", source="model_runner.py", parse=False),
    *(Template("capture", "Capturing cudagraphs for decoding. This may lead to unexpected consequences if the "
               "model is not static. To run the model in eager mode, set 'enforce_eager=True' or use "
               "'--enforce-eager' in the CLI.", since=since, until=until, engine="v0", source="model_runner.py",
               parse=False, tail=tail)
      for since, until, tail in ((v("0.6.4"), v("0.6.6"), ""), (v("0.6.6"), None, _CAPTURE_OOM))),
    # ... and its second line until 0.6.6, naming max_num_seqs as the way to a smaller pool (model_runner.py@0.5.5-0.6.3
    # and @0.6.4-0.6.5 ``capture_model``: a second ``logger.info`` right after the first).
    Template("capture", "CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of memory, "
             "consider decreasing `gpu_memory_utilization` or enforcing eager mode. You can also reduce the "
             "`max_num_seqs` as needed to decrease memory usage.", until=v("0.6.4"), engine="v0",
             source="model_runner.py", parse=False),
    Template("capture", _CAPTURE_OOM.strip(), since=v("0.6.4"), until=v("0.6.6"), engine="v0",
             source="model_runner.py", parse=False),
    Template("graphs", "Graph capturing finished in {graph_seconds:.0f} secs.", until=v("0.6.4"),
             source="model_runner.py"),
    Template("graphs", "Graph capturing finished in {graph_seconds:.0f} secs, took {cudagraph_gib:.2f} GiB",
             since=v("0.6.4"), source="gpu_model_runner.py", runner="v1"),
    Template("graphs", "Graph capturing finished in {graph_seconds:.0f} secs, took {cudagraph_gib:.2f} GiB",
             since=v("0.19.0"), engine="v1", source="model_runner.py", runner="v2"),  # gpu/model_runner.py@0.22.0
    # --- errors (exception name and advice tail are rendered, not required when parsing) -------
    Template("err_no_cache", "No available memory for the cache blocks.", until=v("0.13.0"), level="ERROR",
             exception="ValueError", tail=" " + _TRY_UTIL),
    *(Template("err_no_cache", "No available memory for the cache blocks.", since=since, until=until, level="ERROR",
               exception="ValueError", tail=" " + advice + " " + _DOCS)
      for since, until, advice in ((v("0.13.0"), v("0.22.0"), _TRY_UTIL), (v("0.22.0"), v("0.34.0"), CPU_NOTE_UTIL),
                                   (v("0.34.0"), None, "{kv_hint}"))),
    Template("err_max_len", "The model's max seq len ({max_model_len:d}) is larger than the maximum number of "
             "tokens that can be stored in KV cache ({kv_cache_tokens:d}).", until=v("0.11.0"), engine="v0",
             level="ERROR", exception="ValueError", tail=" " + _TRY_BOTH),
    Template("err_max_len", _maxlen(".2f", "GB"), since=v("0.7.0"), until=v("0.8.3"), engine="v1",
             level="ERROR", exception="ValueError", tail=" " + _TRY_BOTH),
    Template("err_max_len", _maxlen(".2f", "GiB"), since=v("0.8.3"), until=v("0.8.4"), engine="v1",
             level="ERROR", exception="ValueError", tail=" " + _TRY_BOTH),
    Template("err_max_len", _maxlen(".2f", "GiB") + " Based on the available memory,", since=v("0.8.4"),
             until=v("0.9.1"), engine="v1", level="ERROR", exception="ValueError", tail="  " + _TRY_BOTH),
    Template("err_max_len", _maxlen(".2f", "GiB") + _ESTIMATE, since=v("0.9.1"), until=v("0.13.0"),
             engine="v1", level="ERROR", exception="ValueError", tail=" " + _TRY_BOTH),
    Template("err_max_len", _maxlen(".2f", "GiB") + _ESTIMATE, since=v("0.13.0"), until=v("0.14.0"),
             engine="v1", level="ERROR", exception="ValueError", tail=" " + _TRY_BOTH + " " + _DOCS),
    Template("err_max_len", _maxlen("r2", "GiB") + _ESTIMATE, since=v("0.14.0"), until=v("0.22.0"),
             engine="v1", level="ERROR", exception="ValueError", tail=" " + _TRY_BOTH + " " + _DOCS),
    *(Template("err_max_len", _maxlen("r2", "GiB", "model's") + _ESTIMATE, since=since, until=until, engine="v1",
               level="ERROR", exception="ValueError", tail=" " + advice + " " + _DOCS)
      for since, until, advice in ((v("0.22.0"), v("0.34.0"), CPU_NOTE_BOTH),
                                   (v("0.34.0"), None, "{kv_hint} Decreasing `max_model_len` also reduces what is "
                                    "needed."))),
    Template("err_free_memory", "Free memory on device ({free_gib:r2}/{total_gpu_gib:r2} GiB) on startup is "
             "less than desired GPU memory utilization ({gpu_memory_utilization:g}, {requested_gib:r2} GiB).",
             since=v("0.9.1"), until=v("0.14.0"), engine="v1", level="ERROR", exception="ValueError",
             tail=_FREE_TAIL),
    Template("err_free_memory", "Free memory on device {device:s} ({free_gib:r2}/{total_gpu_gib:r2} GiB) on "
             "startup is less than desired GPU memory utilization ({gpu_memory_utilization:g}, "
             "{requested_gib:r2} GiB).", since=v("0.14.0"), engine="v1", level="ERROR", exception="ValueError",
             tail=_FREE_TAIL),
    Template("err_sampler", "CUDA out of memory occurred when warming up sampler with {num_dummy_requests:d} "
             "dummy requests.", since=v("0.8.0"), until=v("0.34.0"), engine="v1", level="ERROR", runner="v1",
             exception="RuntimeError", tail=" Please try lowering `max_num_seqs` or `gpu_memory_utilization` "
             "when initializing the engine."),
    Template("err_cuda_oom", "CUDA out of memory. Tried to allocate {tried_size:.2f} {tried_unit:s}. GPU "
             "{gpu_index:d} has a total capacity of {total_gpu_gib:.2f} GiB of which {oom_free_size:.2f} "
             "{oom_free_unit:s} is free.", level="ERROR", exception="torch.OutOfMemoryError", parse=False,
             tail=" If reserved but unallocated memory is large try setting "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
             "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"),
    Template("err_load_oom", "Failed to load model - not enough GPU memory.", since=v("0.13.0"), engine="v1",
             level="ERROR", source="gpu_model_runner.py", tail=" Try lowering --gpu-memory-utilization to free "
             "memory for weights, increasing --tensor-parallel-size, or using --quantization. " + _DOCS),
    # vLLM's ParallelConfig refuses a world size (TP × PP) beyond the GPUs it sees, before any memory is sized
    # (since 0.11.1; earlier releases fell back to Ray or failed later with other words).
    Template("err_world_size", "World size ({world_size:d}) is larger than the number of available GPUs "
             "({available_gpus:d})", since=v("0.11.1"), level="ERROR", exception="ValueError",
             source="parallel.py", tail=" in this node."),
    # Ray's executor gives up on a placement group the cluster's GPUs cannot hold after its 1800 s wait
    # (_wait_until_pg_ready: executor/ray_utils.py@0.5.5-@0.11.0, v1/executor/ray_utils.py@0.12.0-@0.34.0, which
    # names the GPUs required when more than one): the world size beyond the GPUs it sees, on a release (or with
    # --distributed-executor-backend ray) where no config check says so first. Parse-only: the pods print their own.
    Template("err_world_size", "Cannot provide a placement group requiring {world_size:d} GPUs", since=v("0.12.0"),
             level="ERROR", exception="ValueError", source="ray_utils.py", render=False),
    Template("err_world_size", "Cannot provide a placement group of placement_group_specs=", level="ERROR",
             exception="ValueError", source="ray_utils.py", render=False),
    # vLLM's model config refuses a --max-model-len above the model's derived maximum (vllm/config.py, then
    # vllm/config/model.py, ``_get_and_verify_max_len``; see ``vllm.model_len``). A plain ValueError until 0.9.0;
    # from 0.9.1 ModelConfig is a pydantic dataclass and the same words arrive as "  Value error, <text> [type=...]"
    # (the renderer writes that frame). The derived length prints as vLLM's number (int, or float once scaled).
    *(Template("err_max_len_model", _LONG_HEAD, since=since, until=until, level="ERROR", source="config.py",
               exception=exception, tail=tail)
      for since, until, exception, tail in ((OLDEST, v("0.9.1"), "ValueError", _LONG_OLD_TAIL),
                                            (v("0.9.1"), v("0.10.2"), None, _LONG_OLD_TAIL),
                                            (LONG_CAUTION_SINCE, None, None, _LONG_TAIL))),
    # vLLM's worker refuses a bfloat16 model dtype below compute capability 8.0 as it sets its device up
    # (``_check_if_gpu_supports_dtype``, worker/worker.py@0.6.0-@0.10.1.1 and v1/worker/gpu_worker.py@0.8.5; then
    # ``check_if_supports_dtype``, platforms/cuda.py@0.10.2-@0.34.0; see ``vllm.dtype_support``). The advice's
    # missing space ("the`dtype`") until the 0.8 line (worker/worker.py@0.7.2; @0.8.5 has it) is only in the tail.
    *(Template("err_dtype", _BF16_HEAD, since=since, until=until, level="ERROR", source="worker.py",
               exception="ValueError", tail=tail)
      for since, until, tail in ((OLDEST, v("0.8.0"), _BF16_OLD_TAIL), (v("0.8.0"), None, _BF16_TAIL))),
    # argparse refusing a flag's value (``parser.error``, stderr, exit 2) before vLLM logs anything: the type's
    # ``__name__`` in "invalid ... value" (int, float, human_readable_int from 0.8.4, human_readable_int_or_auto for
    # --max-model-len from 0.14.0), or human_readable_int's ArgumentTypeError for decimals with a binary suffix.
    Template("err_argument", "error: argument {flag:s}: invalid {type_name:s} value: '{value:s}'", level="ERROR",
             source="argparse"),
    Template("err_argument", "error: argument {flag:s}: Decimals are not allowed with binary suffixes like "
             "{suffix:s}. Did you mean to use {suggested:s} instead?", since=v("0.8.4"), level="ERROR",
             source="argparse", render=False),
    # argparse's other refusals (CPython's argparse.py, the same words since 3.8): a value outside ``choices=``
    # (``%(value)r``, the choices as reprs joined by ", "), a flag without its value, a value on a store_true flag
    # (``--enable-lora=true``), and a flag the release does not define at all.
    Template("err_argument", "error: argument {flag:s}: invalid choice: '{value:s}' (choose from {choices:s})",
             level="ERROR", source="argparse", render=False),
    Template("err_argument", "error: argument {flag:s}: expected one argument", level="ERROR", source="argparse",
             render=False),
    Template("err_argument", "error: argument {flag:s}: ignored explicit argument '{value:s}'", level="ERROR",
             source="argparse", render=False),
    Template("err_argument", "error: unrecognized arguments: {unrecognized:rest}", level="ERROR",
             source="argparse", render=False),
    # vLLM's own ``parse_type`` wrapper (engine/arg_utils.py from 0.9) turns a converter's ValueError into this
    # ArgumentTypeError, naming the converter's repr; and argparse's refusal of an option prefix that matches several.
    Template("err_argument", "error: argument {flag:s}: Value {value:s} cannot be converted to {converter:rest}",
             level="ERROR", source="argparse", render=False),
    Template("err_argument", "error: ambiguous option: {flag:s} could match {matches:rest}", level="ERROR",
             source="argparse", render=False),
    # --- server up ------------------------------------------------------------------------------
    Template("up", "Starting vLLM API server on http://{host:s}:{port:d}", since=v("0.7.3"), until=v("0.9.1"),
             source="api_server.py"),
    Template("up", "Starting vLLM API server {server_index:d} on http://{host:s}:{port:d}", since=v("0.9.1"),
             until=v("0.18.0"), source="api_server.py"),
    Template("up", "Starting vLLM server on http://{host:s}:{port:d}", since=v("0.18.0"), source="api_server.py"),
)

# tqdm's bar over the CUDA-graph capture, printed by rank 0 without a logger header; a container log shows it
# only once the bar closes (a line ends at its newline). (since, until, engine, [(description, shapes)]):
# "shapes" from PR 11349 (0.6.6); V1's per-mode bars came with cudagraph_mode (0.10.2), FULL by default in 0.11.
CAPTURE_BARS: tuple[tuple[Version, Version | None, str | None, tuple[tuple[str, int], ...]], ...] = (
    ((0, 6, 6), None, "v0", (("Capturing CUDA graph shapes", 35),)),
    ((0, 8, 0), (0, 10, 2), "v1", (("Capturing CUDA graph shapes", 67),)),
    ((0, 10, 2), (0, 11, 0), "v1", (("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67),)),
    ((0, 11, 0), None, "v1", (("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67),
                              ("Capturing CUDA graphs (decode, FULL)", 35))),
)

# Model Runner V2's bars name only the mode, PIECEWISE first (v1/worker/gpu/cudagraph_utils.py@0.22.0-@0.34.0).
MRV2_CAPTURE_BARS: tuple[tuple[str, int], ...] = (("Capturing CUDA graphs (PIECEWISE)", 67),
                                                  ("Capturing CUDA graphs (FULL)", 35))

# uvicorn's own lines (not vLLM's logger, so no level/timestamp header of vLLM's kind).
UVICORN_UP = (
    "INFO:     Started server process [{pid}]",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
)
# Substrings that mean the HTTP server had come up (the engine had finished starting).
UP_MARKERS = ("Application startup complete", "Uvicorn running on", "Starting vLLM API server",
              "Starting vLLM server on", "Available routes are")

_NUM = r"-?\d[\d,]*(?:\.\d+)?"
# Non-numeric specs; ``cc`` a compute capability as torch prints it ("7.5"), kept as text.
_PATTERNS = {"s": ".+?", "rest": r"[^\n]+", "dev": r"\b[A-Z]{2,}(?: \+ host)?", "cc": r"\d+\.\d+"}
TEXT_SPECS = ("s", "rest", "dev", "cc")
_FIELD = re.compile(r"\{(\w+)(?::([^}]*))?\}")


@cache
def compiled(template: Template) -> re.Pattern[str]:
    """The template as a regex with one named group per placeholder (searched, not anchored)."""
    out, pos = [], 0
    for m in _FIELD.finditer(template.text):
        out.append(_loose(template.text[pos:m.start()]))
        name, spec = m.group(1), m.group(2) or "s"
        out.append(f"(?P<{name}>{_PATTERNS.get(spec, _NUM)})")
        pos = m.end()
    out.append(_loose(template.text[pos:]))
    return re.compile("".join(out), re.IGNORECASE)


def _loose(literal: str) -> str:
    """Escape a literal run, letting any whitespace run match any whitespace run (logs get re-wrapped)."""
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", literal))


@cache
def field_specs(template: Template) -> dict[str, str]:
    """Placeholder name → format spec (``s`` when none is given)."""
    return {m.group(1): m.group(2) or "s" for m in _FIELD.finditer(template.text)}


def to_number(text: str) -> float | int:
    """A number as vLLM printed it (``1,044,688`` or ``7.51``): int when it has no decimals."""
    clean = text.replace(",", "")
    return float(clean) if "." in clean else int(clean)


def fill(template: Template, values: dict[str, object]) -> str:
    """Render a template (exception name, text, tail) with vLLM's own number formatting."""
    head = f"{template.exception}: " if template.exception else ""
    return head + "".join(_FIELD.sub(lambda m: _one(m, values), part) for part in (template.text, template.tail))


def _one(m: re.Match[str], values: dict[str, object]) -> str:
    name, spec = m.group(1), m.group(2) or "s"
    value = values[name]
    if spec == "r2":
        return str(round(float(value), 2))  # type: ignore[arg-type]
    if spec == "g":
        return str(float(value))  # type: ignore[arg-type]
    if spec in TEXT_SPECS:
        return str(value)
    return format(value, spec)


def templates_for(kind: str, version: Version, engine: str, runner: str = "v1") -> list[Template]:
    """The renderable templates of one kind that the given version, engine and model runner print, in table order."""
    return [t for t in TEMPLATES if t.kind == kind and t.render and t.valid_for(version, engine, runner)]


def default_engine(version: Version) -> str:
    """V1 is the default engine from 0.8.0 (V0 remains a fallback until 0.11.0)."""
    return "v1" if version >= (0, 8, 0) else "v0"
