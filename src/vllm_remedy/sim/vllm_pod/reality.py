"""What a simulated vLLM start really gets: the memory model's estimate perturbed by the model's measured error.

If the pods started exactly as ``estimate()`` says, a rehearsal could never catch the planner trusting a wrong
estimate. So by default the rehearsal's "truth" is the estimate with the KV cache scaled by a residual taken
from real startup logs (``residuals.yaml``, generated from ``tests/data/calibration`` by
``bench/residuals.py``): the mean signed error of the cases with the same model architecture, GPU and vLLM
minor release, else a seeded draw from the held-out errors. The draw depends only on the world's seed and that
key, so the same world and seed give the same truth on every start. ``exact`` keeps the estimate as the truth.
A release that sizes the KV cache from memory measured after warmup (0.34) turns the error into a different cache
size with the same peak, never an OOM (``_after_warmup``).

Pure: the only input besides the Launch is the packaged table.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.sim.vllm_pod import device
from vllm_remedy.sim.vllm_pod.launch import Launch
from vllm_remedy.vllm.memory import Estimate
from vllm_remedy.vllm.memory.terms import kv_layout
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.versions import parse_version
from vllm_remedy.yamlfile import load_packaged

MODES = ("perturbed", "exact")
DEFAULT_MODE = "perturbed"
# Outcomes decided by the KV cache's size: the ones a different KV cache can turn into one another.
_KV_DECIDED = (Outcome.FITS, Outcome.MAX_LEN_EXCEEDS_KV, Outcome.NO_CACHE_BLOCKS)


@dataclass(frozen=True)
class Residual:
    """One calibration case's signed KV error, (predicted - logged) / logged, with the key it applies to."""

    case: str
    architecture: str
    gpu: str
    band: str  # vLLM "major.minor"
    error: float
    held_out: bool


@dataclass(frozen=True)
class Reality:
    """How far the rehearsal's pods stray from the estimate: ``mode`` perturbed (default) or exact, and the
    world's ``seed`` for the draws."""

    mode: str = DEFAULT_MODE
    seed: int = 0

    @property
    def exact(self) -> bool:
        return self.mode == "exact"

    def residual(self, launch: Launch) -> tuple[float, str]:
        """(signed error, where it came from) for this launch's architecture, GPU and release band."""
        if self.exact:
            return 0.0, "exact"
        return residual_for(launch.model.architecture, launch.gpu.product, band(launch.version), self.seed)

    def apply(self, launch: Launch) -> Launch:
        """The launch as the card will really run it: ``estimate`` becomes the truth, ``predicted`` keeps the
        model's figures."""
        error, _ = self.residual(launch)
        if error == 0.0:
            return replace(launch, predicted=launch.estimate)
        return replace(launch, estimate=perturb(launch, error), predicted=launch.estimate)


EXACT = Reality("exact")  # tests that compare a pod's log with ``estimate()`` number for number


def parse_reality(mode: Any, seed: Any, where: str) -> Reality:
    """A Reality from a CLI flag or seed keys; a clear UserError naming ``where`` otherwise."""
    text = str(mode if mode is not None else DEFAULT_MODE).strip().lower()
    if text not in MODES:
        raise UserError(f"{where}: reality: expected one of {', '.join(MODES)}, got {mode!r}")
    if seed is None:
        return Reality(text)
    if isinstance(seed, bool) or not isinstance(seed, int | str) or not str(seed).strip().lstrip("-").isdigit():
        raise UserError(f"{where}: reality-seed: expected a whole number, got {seed!r}")
    return Reality(text, int(str(seed).strip()))


def band(version: str) -> str:
    """The release band a residual applies to: vLLM's "major.minor"."""
    parsed = parse_version(version)
    return f"{parsed[0]}.{parsed[1]}" if parsed else version


@cache
def residuals() -> tuple[Residual, ...]:
    """The packaged table (see ``bench/residuals.py``)."""
    text = (resources.files("vllm_remedy.sim.vllm_pod") / "residuals.yaml").read_text()
    rows = load_packaged(text).get("cases") or []
    return tuple(Residual(str(r["case"]), str(r["architecture"]), str(r["gpu"]), str(r["band"]),
                          float(r["error"]), bool(r["held_out"])) for r in rows)


def residual_for(architecture: str, gpu: str, release: str, seed: int,
                 table: tuple[Residual, ...] | None = None) -> tuple[float, str]:
    """The mean error of the cases with this key, else a draw fixed by (seed, key): a held-out error's magnitude,
    with a seeded sign. Why the sign: the held-out logs now under-predict almost everywhere, yet the planner's
    margin covers |error| (bench/estimate_accuracy.md), so a world must be able to err the dangerous way by as
    much - a game day that only ever meets more KV cache than predicted could never catch a thin plan."""
    rows = residuals() if table is None else table
    same = [r for r in rows if (r.architecture, r.gpu, r.band) == (architecture, gpu, release)]
    if same:
        return statistics.fmean(r.error for r in same), f"measured: {', '.join(r.case for r in same)}"
    pool = sorted((r for r in rows if r.held_out), key=lambda r: r.case)
    if not pool:
        return 0.0, "no residuals"
    digest = hashlib.sha256(f"{seed}|{architecture}|{gpu}|{release}".encode()).digest()
    pick = pool[int.from_bytes(digest[:8], "big") % len(pool)]
    sign = 1.0 if digest[8] & 1 else -1.0
    return sign * abs(pick.error), f"drawn (seed {seed}): {pick.case}, {'over' if sign > 0 else 'under'}"


def perturb(launch: Launch, error: float) -> Estimate:
    """The estimate with the KV cache vLLM would really find: predicted / (1 + error), whole blocks, and the
    startup outcome that KV cache decides (a fit can become max_len_exceeds_kv, and the reverse)."""
    est, res = launch.estimate, launch.resolved
    if est.outcome not in _KV_DECIDED or est.kv_cache_gib <= 0:
        return est
    scale, measured = 1.0 / (1.0 + error), dict[str, float]()
    after_warmup = res.rules.kv_sized_after_warmup
    if after_warmup:
        scale, measured = _after_warmup(est, scale)
    kv = est.kv_cache_gib * scale
    blocks = int(est.gpu_blocks * scale) if est.gpu_blocks else 0
    layout = kv_layout(launch.model, res)
    tokens = layout.tokens(blocks)  # whole blocks of the release's block size, shared out among the groups
    # one request's room: from 0.29 the check holds the null block back (``core._longest``)
    room = max(0, tokens - layout.block_size) if res.rules.max_len_check_reserves_null_block else tokens
    max_len = est.max_model_len
    if res.auto_len and tokens > 0:
        max_len = min(res.max_model_len, room)
    if blocks <= 0:
        outcome = Outcome.NO_CACHE_BLOCKS
    elif launch.model.sliding_layers:
        outcome = est.outcome  # a hybrid cache's need is per group, not max_len tokens: keep the model's verdict
    elif max_len > room:
        outcome = Outcome.MAX_LEN_EXCEEDS_KV
    else:
        outcome = Outcome.FITS
    # 0.34 sizes the cache from memory measured after warmup: the card's peak stays where vLLM's margin puts it
    fits_peak = est.peak_gib if after_warmup else device.fits_peak(launch)
    peak = fits_peak if outcome is Outcome.FITS else min(
        fits_peak, res.other_process_gib + device.held_running(launch) + est.weights_gib + est.activation_gib)
    needed = suggested = None
    if outcome is Outcome.MAX_LEN_EXCEEDS_KV:
        # one request's need is bytes per token x length: the layout's, not the cache's size
        needed = est.needed_kv_gib or est.kv_cache_gib / max(est.kv_cache_tokens, 1) * max_len
        suggested = room
    ratio = est.max_concurrency / est.kv_cache_tokens * est.max_model_len / max_len if est.kv_cache_tokens else 0.0
    return replace(est, outcome=outcome, kv_cache_gib=kv, kv_cache_tokens=tokens, gpu_blocks=blocks,
                   max_concurrency=tokens * ratio if ratio else tokens / max(max_len, 1), max_model_len=max_len,
                   peak_gib=peak, needed_kv_gib=needed, suggested_max_model_len=suggested,
                   graph_capture_oom=outcome is Outcome.FITS and peak - device.capture_excess(launch) <= est.total_gib
                   < peak, **measured)


def _after_warmup(est: Estimate, scale: float) -> tuple[float, dict[str, float]]:
    """(KV scale, the measured non-torch memory) for a release that sizes the KV cache after warmup and graph capture
    (0.34's extensible cache). The model's error is then in what the engine measured, not in a fixed budget: the cache
    shrinks or grows by what the non-torch memory really took (the log's "Actual usage", "Memory after warmup" and
    "Extended KV cache" lines follow) and the card's peak stays at vLLM's own margin, so no OOM. Weights and the
    captured graphs are logged as measured, so the cache gains at most the non-torch figure."""
    gain = min(est.kv_cache_gib * (scale - 1.0), est.non_torch_gib)
    return 1.0 + gain / est.kv_cache_gib, {"non_torch_gib": est.non_torch_gib - gain}

