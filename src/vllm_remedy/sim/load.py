"""Offered load on a simulated vLLM pod, and what it does to the engine: KV usage, queueing,
preemptions, and the out-of-memory crash of runbook step 5.

Why a model and not a replay: game days need "KV usage above 90 %", "preemptions rising" and "OOM under
load" to follow from the pod's real budget (the memory estimate the simulator started it with), so a
remedy that lowers ``--max-num-seqs`` or ``--max-num-batched-tokens`` visibly changes the outcome.

Load is given by a scenario annotation (``sim.vllm-remedy.io/load``, on the Deployment or the pod) as
``key=value`` pairs separated by commas, or a bare number (= ``requests``):

``requests``           concurrent requests offered to the whole Deployment; each Ready replica gets an equal
                       share. Without it, the cluster's ``Cluster.set_load`` figure is used.
``prompt-tokens``      average prompt length (default 1000)
``output-tokens``      average output length (default 200)
``max-prompt-tokens``  the longest prompts in the mix (default: ``prompt-tokens``)
``prompt-logprobs``    share of requests asking for prompt logprobs, 0..1 (default 0)
``extra-gib``          per-GPU memory the load needs that no profile run sees (multimodal encoders, LoRA
                       swaps), GiB (default 0)
``prefix-hit``         prefix-cache hit rate 0..1, only reported (default 0)

Memory under load: vLLM's profile run sized the activation peak for one step of
``max-num-batched-tokens`` with last-token logits only. A step whose requests want logits for every
prompt token (prompt logprobs) materialises ``step tokens × vocab`` float32 logits plus their
log-softmax (8 bytes per entry), where step tokens = ``min(max-prompt-tokens, max-num-batched-tokens,
max-model-len)`` — long prompts cost more up to the chunk size, which is why capping the prompt length
or ``--max-num-batched-tokens`` is the runbook's fix. The engine crashes when the startup peak
(``Estimate.peak_gib``) plus that extra exceeds the GPU.

Queueing: each request holds ``prompt + output/2`` tokens of KV on average (half-way through decoding),
at most ``max-model-len``. Running = min(share, max-num-seqs, KV capacity / tokens per request); the rest
waits. When the admitted batch would need more KV than exists, vLLM preempts: the counter grows by
``PREEMPTIONS_PER_EXCESS_REQUEST_PER_S`` for every request over capacity, per simulated second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vllm_remedy.errors import UserError

GIB = 1024**3
PREEMPTIONS_PER_EXCESS_REQUEST_PER_S = 0.5
LOGIT_BYTES = 8  # float32 logits + float32 log-softmax per (token, vocab entry)
_KEYS = {"requests", "prompt-tokens", "output-tokens", "max-prompt-tokens", "prompt-logprobs", "extra-gib",
         "prefix-hit"}


@dataclass(frozen=True)
class LoadSpec:
    """What clients send a Deployment; ``requests`` None = take the cluster's ``set_load`` figure."""

    requests: float | None = None
    prompt_tokens: int = 1000
    output_tokens: int = 200
    max_prompt_tokens: int | None = None
    prompt_logprobs: float = 0.0
    extra_gib: float = 0.0
    prefix_hit: float = 0.0

    @property
    def longest_prompt(self) -> int:
        """The prompt length that sizes the worst prefill step: ``max-prompt-tokens`` if given, else the average."""
        return self.max_prompt_tokens if self.max_prompt_tokens is not None else self.prompt_tokens


def parse_load(text: str, where: str = "sim.vllm-remedy.io/load") -> LoadSpec:
    """``"requests=40, prompt-tokens=12000"`` or ``"40"`` → LoadSpec; bad text → UserError naming ``where``."""
    raw = str(text).strip()
    if not raw:
        return LoadSpec()
    try:
        return LoadSpec(requests=_non_negative(float(raw), where, "requests"))
    except ValueError:
        pass
    values: dict[str, float] = {}
    for part in raw.replace(";", ",").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip().replace("_", "-")
        if not sep or key not in _KEYS:
            raise UserError(f"{where}: {part.strip()!r} is not key=value with a key among {', '.join(sorted(_KEYS))}")
        try:
            values[key] = _non_negative(float(value), where, key)
        except ValueError:
            raise UserError(f"{where}: {key}={value.strip()!r} is not a number") from None
    for key in ("prompt-logprobs", "prefix-hit"):
        if values.get(key, 0.0) > 1:
            raise UserError(f"{where}: {key}={values[key]:g} must be a share between 0 and 1")
    spec = LoadSpec(
        requests=values.get("requests"),
        prompt_tokens=int(values.get("prompt-tokens", 1000)),
        output_tokens=int(values.get("output-tokens", 200)),
        max_prompt_tokens=int(values["max-prompt-tokens"]) if "max-prompt-tokens" in values else None,
        prompt_logprobs=values.get("prompt-logprobs", 0.0),
        extra_gib=values.get("extra-gib", 0.0),
        prefix_hit=values.get("prefix-hit", 0.0),
    )
    return spec


def _non_negative(value: float, where: str, key: str) -> float:
    if value < 0 or math.isnan(value) or math.isinf(value):
        raise UserError(f"{where}: {key}={value:g} must be a finite number >= 0")
    return value


@dataclass(frozen=True)
class EngineBudget:
    """The figures of one started engine that load is measured against (from its memory estimate)."""

    kv_cache_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    vocab_size: int
    peak_gib: float  # device memory in use once started, incl. other processes
    total_gib: float


@dataclass(frozen=True)
class LoadState:
    """One instant of the engine under load (what /metrics reports)."""

    running: int
    waiting: int
    kv_usage: float  # 0..1
    excess: int  # requests the scheduler wanted to run but had no KV for (each one preempts)


def state(budget: EngineBudget, load: LoadSpec, share: float) -> LoadState:
    """The engine's steady state with ``share`` concurrent requests offered to this pod."""
    offered = max(0, math.ceil(share - 1e-9))
    per_request = max(1, min(budget.max_model_len, load.prompt_tokens + load.output_tokens // 2))
    wanted = min(offered, budget.max_num_seqs)
    fit = budget.kv_cache_tokens // per_request
    running = min(wanted, fit)
    usage = min(1.0, running * per_request / budget.kv_cache_tokens) if budget.kv_cache_tokens else 0.0
    return LoadState(running=running, waiting=offered - running, kv_usage=usage, excess=max(0, wanted - fit))


def step_tokens(budget: EngineBudget, load: LoadSpec) -> int:
    """Tokens of the largest prefill chunk: the longest prompt, cut by the chunk size and max-model-len."""
    return max(0, min(load.longest_prompt, budget.max_num_batched_tokens, budget.max_model_len))


def oom_allocation_gib(budget: EngineBudget, load: LoadSpec, share: float) -> float | None:
    """GiB the failing allocation asks for when this load runs the GPU out of memory, else None."""
    if share <= 0:
        return None
    logits = 0.0
    if load.prompt_logprobs > 0:
        logits = step_tokens(budget, load) * budget.vocab_size * LOGIT_BYTES / GIB
    extra = logits + load.extra_gib
    if extra <= 0 or budget.peak_gib + extra <= budget.total_gib:
        return None
    return logits or load.extra_gib


@dataclass
class LoadMeter:
    """Integrates preemptions over simulated time for one container instance (counters only grow)."""

    budget: EngineBudget
    since: float
    preemptions: float = 0.0
    last: LoadState | None = None

    def advance(self, now: float, load: LoadSpec, share: float) -> LoadState:
        """Account the time since the last call at the previous state, then take the new one."""
        elapsed = max(0.0, now - self.since)
        if self.last is not None:
            self.preemptions += self.last.excess * PREEMPTIONS_PER_EXCESS_REQUEST_PER_S * elapsed
        self.since = now
        self.last = state(self.budget, load, share)
        return self.last
