"""vLLM `serve` flag table, derived from vLLM 0.34.0, 0.11.0 and 0.7.3 sources (engine args + frontend args).

Generated statically (AST of vllm/engine/arg_utils.py, the OpenAI frontend args and the config dataclasses), then
frozen here so parsing needs no vLLM install. The newest release that has a flag decides its arity; flags only
older releases know (``--use-v2-block-manager``, ``--disable-log-requests``...) are kept so old manifests parse.
Whether a release has an option at all (an unknown or ambiguous option, exit 2) and how many words it takes there
are decided by that release's own parser, not by this union: ``release_flags`` (``data/vllm_flags.json``,
``scripts/vllm_flags.py``; ``flags.kind_in``). This table decides arity only where no release read says (older than
the oldest read) and for version-less uses (``flags.is_boolean``, ``has_no_form``, edits); its arities agree with the
newest release read that has each flag (``tests/vllm/cmdline/test_release_arity.py``; --long-lora-scaling-factors,
``tuple[float, ...]`` to 0.9.2, moved to MULTI_VALUE when that was checked).
"""

from __future__ import annotations

# BooleanOptionalAction in the newest release: `--x` / `--no-x`, no value (`--x=true` is refused: ``refused``).
BOOLEAN: frozenset[str] = frozenset({
    "allow-credentials", "allow-deprecated-quantization", "async-scheduling", "calculate-kv-scales",
    "checkpoint-prepare-on-startup", "cohere-is-reasoning-model", "cudagraph-metrics",
    "data-parallel-external-lb", "data-parallel-hybrid-lb", "dcp-q-replicate", "disable-cascade-attn",
    "disable-chunked-mm-input", "disable-custom-all-reduce", "disable-fastapi-docs",
    "disable-frontend-multiprocessing", "disable-hybrid-kv-cache-manager", "disable-log-requests",
    "disable-logprobs-during-spec-decoding", "disable-nccl-for-dp-synchronization", "disable-sliding-window",
    "disable-uvicorn-access-log", "enable-auto-tool-choice", "enable-batch-sharded-sampling",
    "enable-chunked-prefill", "enable-cumem-allocator", "enable-dbo", "enable-elastic-ep",
    "enable-ep-weight-filter", "enable-eplb", "enable-expert-parallel", "enable-extensible-kv-cache",
    "enable-fault-tolerance", "enable-flash-late-interaction", "enable-flashinfer-autotune",
    "enable-force-include-usage", "enable-hc-sp", "enable-layerwise-nvtx-tracing", "enable-log-deltas",
    "enable-log-outputs", "enable-log-requests", "enable-logging-iteration-details", "enable-lora",
    "enable-lora-bias", "enable-mamba-cache-stochastic-rounding", "enable-mamba-shared-prefix-checkpoint",
    "enable-mfu-metrics", "enable-mixed-moe-lora-format", "enable-mm-embeds", "enable-moe-shared-loras",
    "enable-nccl-comm-suspend", "enable-offline-docs", "enable-per-request-metrics", "enable-prefix-caching",
    "enable-prompt-embeds", "enable-prompt-tokens-details", "enable-request-id-headers",
    "enable-return-routed-experts", "enable-scale-out", "enable-server-load-tracking",
    "enable-shm-tensor-arena", "enable-sleep-mode", "enable-ssl-refresh", "enable-tokenizer-info-endpoint",
    "enable-tower-connector-lora", "enable-trace-replay", "enforce-eager", "eplb-log-balancedness",
    "exclude-tools-when-tool-choice-none", "fail-on-environ-validation", "fully-sharded-loras",
    "interleave-mm-strings", "jit-monitor-verbose", "kv-cache-metrics", "kv-sharing-fast-prefill",
    "language-model-only", "log-error-stack", "long-prefill-token-threshold-adaptive", "mm-device-do-normalize",
    "mm-encoder-only", "monokernel", "multi-step-stream-outputs", "numa-bind", "ray-workers-use-nsight",
    "return-sampling-mask", "return-tokens-as-token-ids", "scheduler-reserve-full-isl",
    "shuffle-safetensors-files", "skip-mm-profiling", "skip-tokenizer-init", "sleep-mode-offload-cudagraph",
    "specialize-active-lora", "swa-bounded-replay", "tokens-only", "trust-remote-code",
    "trust-request-chat-template", "trust-request-mm-kwargs", "use-fp64-gumbel", "use-replayssm",
    "use-tqdm-on-load",
})

# store_true only: bare `--x`, no `--no-x` form.
STORE_TRUE: frozenset[str] = frozenset({
    "aggregate-engine-logging", "data-parallel-multi-port-external-lb", "disable-async-output-proc",
    "disable-log-stats", "disable-mm-preprocessor-cache", "enable-multimodal-encoder-data-parallel",
    "enable-prompt-adapter", "enable-reasoning", "grpc", "headless", "speculative-disable-mqa-scorer",
    "use-v2-block-manager", "worker-use-ray",
})

# nargs='?': bare or with one value.
OPTIONAL_VALUE: frozenset[str] = frozenset({
    "hf-token",
})

# nargs='+': every following non-option token.
MULTI_VALUE: frozenset[str] = frozenset({
    "allowed-media-domains", "api-key", "collect-detailed-traces", "cpu-offload-params", "cuda-graph-sizes",
    "cudagraph-capture-sizes",
    "ignore-patterns", "kv-cache-dtype-skip-layers", "logits-processors", "long-lora-scaling-factors", "lora-modules",
    "lora-target-modules",
    "numa-bind-cpus", "numa-bind-nodes", "offload-params", "prompt-adapters", "served-model-name",
    "sleep-preserve-parameter-names",
})

# exactly one value. --allowed-origins/-methods/-headers (``type=json.loads``, the dataclass's ``nargs`` deleted) and
# --middleware (``action="append"``) take one word per occurrence in every release read (entrypoints/openai/
# cli_args.py@0.6.5, 0.8.5, 0.9.2 explicit, 0.10.1-0.20.0 and 0.34.0 ``del frontend_kwargs[...]["nargs"]``).
SINGLE_VALUE: frozenset[str] = frozenset({
    "allowed-headers", "allowed-methods", "allowed-origins", "middleware",
    "additional-config", "all2all-backend", "allowed-local-media-path", "anthropic-disabled-thinking-effort",
    "api-server-count", "attention-backend", "attention-config", "aux-output-config", "block-size",
    "cache-aware-admission-threshold", "cache-aware-admission-window", "chat-template",
    "chat-template-content-format", "code-revision", "cohere-format", "compilation-config", "config",
    "config-format", "convert", "cp-kv-cache-interleave-size", "cpu-distributed-timeout-seconds",
    "cpu-offload-gb", "custom-histogram-buckets", "data-parallel-address", "data-parallel-backend",
    "data-parallel-rank", "data-parallel-rpc-port", "data-parallel-size", "data-parallel-size-local",
    "data-parallel-start-rank", "data-parallel-supervisor-port", "dbo-decode-token-threshold",
    "dbo-prefill-token-threshold", "dcp-comm-backend", "dcp-kv-cache-interleave-size",
    "decode-context-parallel-size", "default-chat-template-kwargs", "default-mm-loras", "device", "device-ids",
    "diffusion-config", "disable-access-log-for-endpoints", "distributed-executor-backend",
    "distributed-timeout-seconds", "download-dir", "dp-supervisor-probe-failure-threshold",
    "dp-supervisor-probe-interval-s", "dp-supervisor-probe-timeout-s", "dp-sync-interval", "dtype",
    "ec-manager-config", "ec-transfer-config", "elastic-ep-max-dp-size", "engram-config", "eplb-config",
    "eplb-step-interval", "eplb-window-size", "expert-placement-strategy", "fault-tolerance-config",
    "fingerprint-mode", "fingerprint-value", "gdn-prefill-backend", "generation-config",
    "gpu-memory-utilization", "grpc-port", "guided-decoding-backend", "h11-max-header-count",
    "h11-max-incomplete-event-size", "headless-client-handshake-address", "hf-config-path", "hf-overrides",
    "host", "io-processor-plugin", "ir-op-priority", "jit-monitor-mode", "kda-decode-backend",
    "kda-prefill-backend", "kernel-config", "kv-cache-dtype", "kv-cache-memory-bytes",
    "kv-cache-metrics-sample", "kv-events-config", "kv-offloading-backend", "kv-offloading-size",
    "kv-transfer-config", "limit-mm-per-prompt", "linear-backend", "load-format", "log-config-file",
    "log-level", "logging-config", "logits-processor-pattern", "logprobs-mode",
    "long-prefill-token-threshold", "lora-dtype", "lora-extra-vocab-size", "mamba-backend", "mamba-block-size",
    "mamba-cache-dtype", "mamba-cache-mode", "mamba-cache-philox-rounds", "mamba-ssm-cache-dtype",
    "mamba-ssu-algorithm", "master-addr", "master-port", "max-cpu-loras", "max-cudagraph-capture-size",
    "max-log-len", "max-logprobs", "max-long-partial-prefills", "max-lora-cls-labels", "max-lora-rank",
    "max-loras", "max-model-len", "max-num-active-seqs", "max-num-batched-tokens", "max-num-inflight-kv-loads",
    "max-num-partial-prefills", "max-num-queued-reqs", "max-num-queued-tokens", "max-num-scheduled-tokens",
    "max-num-seqs", "max-parallel-loading-workers", "max-prompt-adapter-token", "max-prompt-adapters",
    "max-seq-len-to-capture", "media-io-kwargs", "mm-encoder-attn-backend", "mm-encoder-attn-dtype",
    "mm-encoder-fp8-scale-path", "mm-encoder-fp8-scale-save-margin", "mm-encoder-fp8-scale-save-path",
    "mm-encoder-tp-mode", "mm-hasher-algorithm", "mm-ipc-gpu-memory-gb", "mm-processor-cache-gb",
    "mm-processor-cache-type", "mm-processor-device", "mm-processor-kwargs", "mm-shm-cache-max-object-size-mb",
    "mm-tensor-ipc", "model", "model-class-overrides", "model-impl", "model-loader-extra-config", "moe-backend",
    "ngram-prompt-lookup-max", "ngram-prompt-lookup-min", "nnodes", "node-rank", "num-gpu-blocks-override",
    "num-lookahead-slots", "num-redundant-experts", "num-scheduler-steps", "num-speculative-tokens",
    "offload-backend", "offload-group-size", "offload-num-in-group", "offload-prefetch-step",
    "optimization-level", "otlp-traces-endpoint", "override-attention-dtype", "override-generation-config",
    "override-neuron-config", "override-pooler-config", "per-request-spec-decode-metrics", "performance-mode",
    "pipeline-parallel-size", "pooler-config", "port", "preemption-mode", "prefill-context-parallel-size",
    "prefill-schedule-interval", "prefix-cache-retention-interval", "prefix-caching-hash-algo",
    "prefix-match-unit", "profiler-config", "pt-load-map-location", "qlora-adapter-name-or-path",
    "quantization", "quantization-config", "reasoning-config", "reasoning-effort-map", "reasoning-parser",
    "reasoning-parser-plugin", "renderer-num-workers", "replayssm-buffer-len", "response-role", "revision",
    "root-path", "rope-scaling", "rope-theta", "runner", "safetensors-load-strategy",
    "safetensors-prefetch-block-size", "safetensors-prefetch-num-threads", "scheduler-cls",
    "scheduler-delay-factor", "scheduling-policy", "seed", "show-hidden-metrics-for-version",
    "shutdown-timeout", "sleep-mode-backend", "sparse-indexer-topk-backend", "spec-decoding-acceptance-method",
    "spec-method", "spec-model", "spec-tokens", "speculative-config", "speculative-disable-by-batch-size",
    "speculative-draft-tensor-parallel-size", "speculative-max-model-len", "speculative-model",
    "speculative-model-quantization", "sse-keep-alive-interval", "ssl-ca-certs", "ssl-cert-reqs",
    "ssl-certfile", "ssl-ciphers", "ssl-keyfile", "stream-interval", "structured-outputs-config", "swap-space",
    "task", "tensor-parallel-size", "tokenizer", "tokenizer-mode", "tokenizer-pool-extra-config",
    "tokenizer-pool-size", "tokenizer-pool-type", "tokenizer-revision", "tool-call-parser",
    "tool-parser-plugin", "tool-server", "tool-strict-level", "typical-acceptance-sampler-posterior-alpha",
    "typical-acceptance-sampler-posterior-threshold", "ubatch-size", "uds", "uvicorn-log-level",
    "video-pruning-method", "video-pruning-rate", "watchdog-config", "watermark", "watermark-config",
    "weight-transfer-config", "worker-cls", "worker-extension-cls",
})

# StoreBoolean (nargs='?', true/false) in old releases (engine/arg_utils.py@0.6.5-0.8.3): `--x False` and
# `--x=false` took the value; the only flags that ever took a boolean word (``refused.store_boolean`` by release).
LEGACY_OPTIONAL_BOOLEAN: frozenset[str] = frozenset({
    "disable-logprobs-during-spec-decoding", "enable-chunked-prefill", "multi-step-stream-outputs",
})

# Booleans that default to False in every release read: absent means false.
OFF_BY_DEFAULT: frozenset[str] = frozenset({
    "aggregate-engine-logging", "allow-credentials", "allow-deprecated-quantization", "calculate-kv-scales",
    "checkpoint-prepare-on-startup", "cudagraph-metrics", "data-parallel-external-lb",
    "data-parallel-hybrid-lb", "data-parallel-multi-port-external-lb", "disable-chunked-mm-input",
    "disable-fastapi-docs", "disable-frontend-multiprocessing", "disable-log-stats",
    "disable-mm-preprocessor-cache", "disable-sliding-window", "disable-uvicorn-access-log",
    "enable-auto-tool-choice", "enable-cumem-allocator", "enable-dbo", "enable-elastic-ep",
    "enable-ep-weight-filter", "enable-eplb", "enable-expert-parallel", "enable-fault-tolerance",
    "enable-force-include-usage", "enable-hc-sp", "enable-layerwise-nvtx-tracing", "enable-log-outputs",
    "enable-logging-iteration-details", "enable-lora", "enable-lora-bias",
    "enable-mamba-cache-stochastic-rounding", "enable-mamba-shared-prefix-checkpoint", "enable-mfu-metrics",
    "enable-mixed-moe-lora-format", "enable-mm-embeds", "enable-moe-shared-loras",
    "enable-multimodal-encoder-data-parallel", "enable-nccl-comm-suspend", "enable-offline-docs",
    "enable-per-request-metrics", "enable-prompt-adapter", "enable-prompt-embeds",
    "enable-prompt-tokens-details", "enable-reasoning", "enable-request-id-headers",
    "enable-return-routed-experts", "enable-scale-out", "enable-server-load-tracking",
    "enable-shm-tensor-arena", "enable-sleep-mode", "enable-ssl-refresh", "enable-tokenizer-info-endpoint",
    "enable-tower-connector-lora", "enable-trace-replay", "enforce-eager", "eplb-log-balancedness",
    "exclude-tools-when-tool-choice-none", "fail-on-environ-validation", "fully-sharded-loras", "grpc",
    "headless", "interleave-mm-strings", "jit-monitor-verbose", "kv-cache-metrics", "kv-sharing-fast-prefill",
    "language-model-only", "mm-encoder-only", "monokernel", "ray-workers-use-nsight", "return-sampling-mask",
    "return-tokens-as-token-ids", "shuffle-safetensors-files", "skip-mm-profiling", "skip-tokenizer-init",
    "sleep-mode-offload-cudagraph", "specialize-active-lora", "speculative-disable-mqa-scorer", "tokens-only",
    "trust-remote-code", "trust-request-chat-template", "trust-request-mm-kwargs", "use-fp64-gumbel",
    "use-replayssm", "worker-use-ray",
})

# Short and alternate spellings -> canonical long name. `-O` is handled by the parser (-O3, -O=3, -O 3).
ALIASES: dict[str, str] = {
    "-ac": "attention-config",
    "-asc": "api-server-count",
    "-cc": "compilation-config",
    "-dc": "diffusion-config",
    "-dcp": "decode-context-parallel-size",
    "-dp": "data-parallel-size",
    "-dpa": "data-parallel-address",
    "-dpb": "data-parallel-backend",
    "-dpe": "data-parallel-external-lb",
    "-dph": "data-parallel-hybrid-lb",
    "-dpl": "data-parallel-size-local",
    "-dpm": "data-parallel-multi-port-external-lb",
    "-dpn": "data-parallel-rank",
    "-dpp": "data-parallel-rpc-port",
    "-dpr": "data-parallel-start-rank",
    "-ep": "enable-expert-parallel",
    "-n": "nnodes",
    "-pcp": "prefill-context-parallel-size",
    "-pp": "pipeline-parallel-size",
    "-q": "quantization",
    "-r": "node-rank",
    "-sc": "speculative-config",
    "-spec-draft-tp": "speculative-draft-tensor-parallel-size",
    "-tp": "tensor-parallel-size",
    "device-memory-utilization": "gpu-memory-utilization",
}
