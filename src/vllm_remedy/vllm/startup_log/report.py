"""What a vLLM startup log says, as one typed record (the parser fills it, the CLI prints it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from vllm_remedy.vllm.outcomes import Failure


@dataclass
class StartupReport:
    """Figures and failure read from one container's log; ``None`` means "not printed".

    GiB figures are as vLLM printed them (vLLM ≤0.8.3 says "GB" but computes GiB). Per-rank figures
    take rank 0, KV-capacity figures the minimum over ranks — the value vLLM itself uses.
    """

    vllm_version: str | None = None
    engine: str | None = None  # "v0" / "v1"
    model: str | None = None
    tp_size: int | None = None
    weights_gib: float | None = None
    activation_gib: float | None = None
    non_torch_gib: float | None = None
    kv_cache_gib: float | None = None
    gpu_blocks: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    concurrency_max_len: int | None = None
    cudagraph_gib: float | None = None
    max_model_len: int | None = None
    total_gpu_gib: float | None = None
    gpu_memory_utilization: float | None = None
    free_at_start_gib: float | None = None  # free GPU memory vLLM saw as it started (its post-start advisory line)
    # The post-start advisory's figures from 0.27.0: weights + non-torch as one mem_get_info sum, and the peak
    # activation, which there includes the CUDA-graph estimate the budget applied (gpu_worker.py@0.27.0), so it is
    # not comparable with ``activation_gib`` (torch's peak increase alone).
    consumed_gib: float | None = None
    peak_activation_gib: float | None = None
    # 0.34's extensible KV cache: the capacity "Available KV cache memory" reserved, when a later line gave the size
    # committed (then ``kv_cache_gib``).
    kv_reserved_gib: float | None = None
    runner: str | None = None  # "v2" when the log says "Using V2 Model Runner" (0.21-0.33); None when not said
    # The V1 sampler's line: True for "Using FlashInfer for top-p & top-k sampling", False when it falls back
    # to the PyTorch sort (FlashInfer absent, or present but disabled); feeds EngineSettings.flashinfer.
    flashinfer: bool | None = None
    failure: Failure = Failure.UNKNOWN
    failure_detail: dict[str, Any] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    server_was_up: bool = False
    truncated: bool = False  # ended mid-start: neither up nor a fatal error in the log
    # A rehearsal pod's record of a start it does not play (``startup_log.unplayed``): why, in its words. No failure
    # of vLLM's: ``failure`` stays unknown (not predicted), and no rollback is advised.
    unplayed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the failure as its string value) for `diagnose -o json`."""
        out = asdict(self)
        out["failure"] = self.failure.value
        return out
