"""The estimator's inputs as a calibration case states them (``tests/data/calibration/*.yaml``), and the
held-out split its accuracy is reported on.

The accuracy test and ``bench/estimate_accuracy.py`` must hand the estimator exactly the same inputs, or the
test's bars and the published table would measure different things; so the mapping from a case to an
``Estimate`` is written once, here. Pure: callers read and parse the YAML and pass the dicts in.

Held out means "no fitted constant saw anything from this source": the constants of ``terms.py`` and
``weights.py`` were fitted by hand, so the honest split is by source (one GitHub thread, or one repository of
logs), decided by the cases' ``fit`` keys alone and never by their errors. A source with any fitted case is in
sample as a whole, because its other logs share its machine, version and launcher.

A case of a release older than any whose source was read (``version_labels.OLDEST_MODELLED``) is neither: every output
flags its rules as extrapolated, and 0.2.x-0.4.x differ from 0.5.5 in ways not modelled (no CUDA graphs before 0.2.7,
device-wide budgets, chunked prefill never on by default). Such cases are measured and reported apart
(``older_release``), never in the held-out figures the targets are judged on.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.vllm import catalog, engine_env, model_len, runner_env, sampler_env
from vllm_remedy.vllm.memory.core import Estimate, estimate
from vllm_remedy.vllm.memory.kv_margin import percentile
from vllm_remedy.vllm.memory.settings import EngineSettings
from vllm_remedy.vllm.version_labels import OLDEST_MODELLED
from vllm_remedy.vllm.versions import parse_version

Case = Mapping[str, Any]
# A prediction more than this far above the logged KV cache is the dangerous direction (the target is none).
OVER_TOLERANCE = 0.02
# The environment variables a case's ``env`` may set: those the tools read from a pod (``engine_env.env_inputs``).
ENV_READ = frozenset({engine_env.USE_V1, sampler_env.ENV, runner_env.ENV, model_len.ENV})
_GITHUB = re.compile(r"^https://github\.com/(?P<repo>[^/]+/[^/]+)(?:/(?P<kind>issues|pull|discussions)/(?P<n>\d+))?")


def estimate_case(case: Case) -> Estimate:
    """Estimate a case from what its log shows: model (catalog id or inline HF config), GPU (and the total
    the log reports, when it differs from the catalog's), vLLM version, flags and other processes' GiB."""
    if "model_config" in case:
        model = catalog.ModelSpec.from_hf_config(case["model_config"], case["model"], case.get("model_params_b"))
    else:
        model = catalog.model(case["model"])
    gpu = catalog.gpu(case["gpu"])
    if case.get("gpu_memory_gib"):
        gpu = gpu.with_total(float(case["gpu_memory_gib"]))
    flags = {k: str(v) for k, v in case["flags"].items()}
    inputs = {"other-process-gib": str(case.get("other_process_gib", 0.0))}
    if "flashinfer" in case:  # the log's "Using FlashInfer for top-p & top-k sampling" (or its fallback warning)
        inputs["flashinfer"] = str(bool(case["flashinfer"])).lower()
    if "p2p" in case:  # the log's own P2P line ("... your platform lacks GPU P2P capability" for no)
        inputs["p2p"] = str(bool(case["p2p"])).lower()
    if case.get("wsl"):  # the log's "Using 'pin_memory=False' as WSL is detected" (``wsl_evidence``)
        inputs["wsl"] = "true"
    if case.get("compile_cache") == "warm":  # the log's "Directly load AOT compilation" line
        inputs["compile-cache-warm"] = "true"
    if case.get("image_max_pixels"):  # the checkpoint's preprocessor_config.json size.longest_edge / max_pixels
        inputs["image-max-pixels"] = str(case["image_max_pixels"])
    if case.get("env"):  # the launch's environment as the log shows it, read as a pod's env is (``engine_env``)
        if stray := sorted(set(case["env"]) - ENV_READ):
            raise ValueError(f"env: {stray} are not variables the tools read ({sorted(ENV_READ)})")
        inputs.update(engine_env.env_inputs({"env": [{"name": k, "value": str(v)} for k, v in case["env"].items()]}))
    return estimate(model, gpu, EngineSettings.from_flags(flags, str(case["vllm_version"]), inputs))


def source_group(case: Case) -> str:
    """The source a case came from: its ``holdout_group``, else the GitHub thread (owner/repo#N) or repository
    its URL names, else the URL's host and path."""
    if case.get("holdout_group"):
        return str(case["holdout_group"])
    url = str(case["source"])
    m = _GITHUB.match(url)
    if m:
        return f"{m['repo']}#{m['n']}" if m["n"] else m["repo"]
    return url.split("#", 1)[0]


def older_release(case: Case) -> bool:
    """Whether the case's vLLM is older than any release whose source was read (see the module docstring)."""
    version = parse_version(str(case["vllm_version"]))
    return version is not None and version < OLDEST_MODELLED


def held_out(cases: Iterable[tuple[str, Case]]) -> list[str]:
    """Names of the cases whose source informed no fitted constant, of releases whose source was read (see the module
    docstring)."""
    cases = list(cases)
    fitted = {source_group(c) for _, c in cases if c.get("fit")}
    return [name for name, c in cases if source_group(c) not in fitted and not older_release(c)]


# What a case's excerpt shows of the start after the KV cache (its ``capture:`` key, read from ``log_excerpt`` by
# ``capture_evidence``): ``finished`` when a vLLM line printed after graph capture or after the whole start appears
# (V1/MRv2's "Graph capturing finished", the post-capture memory advisory, custom all-reduce registering graph
# addresses, "init engine (profile, create kv cache, warmup model) took", the API server starting or serving);
# ``oom`` when it died of CUDA OOM there; ``not_shown`` otherwise (the excerpt stops at the KV lines, the start failed
# before, or it ran eager). A nvidia-smi table or a benchmark figure is not read as evidence: only vLLM's own lines.
CAPTURE_KEYS = ("finished", "oom", "not_shown")
_AFTER_CAPTURE = re.compile(
    r"Graph capturing finished|for\s+CUDAGraph\s+memory|Registering \d+ cuda graph addresses"
    r"|init engine \(profile, create kv cache, warmup model\) took|Starting vLLM API server"
    r"|Application startup complete|Uvicorn running|Available routes are|Avg prompt throughput")
_CAPTURE_OOM = re.compile(
    r"(?s)(Capturing CUDA graph|capture_model|_dummy_sampler_run).*(OutOfMemoryError|CUDA out of memory)")


def capture_evidence(excerpt: str) -> str:
    """The ``capture:`` key a log excerpt supports (``CAPTURE_KEYS``; the rule is written above them)."""
    if _CAPTURE_OOM.search(excerpt):
        return "oom"
    return "finished" if _AFTER_CAPTURE.search(excerpt) else "not_shown"


def wsl_evidence(excerpt: str) -> bool:
    """Whether a log excerpt shows vLLM found itself under WSL (platforms/interface.py@0.10.2 ``in_wsl``, logged by
    ``is_pin_memory_available``; utils.py in 0.6): what a case's ``wsl:`` key must say."""
    return "as WSL is detected" in excerpt


def logged_start(case: Case) -> str:
    """The start as its log shows it, in the words ``Estimate.start`` uses: the logged outcome (vLLM's checks), or
    ``cudagraph_capture_oom`` when the case's ``capture:`` key says it died there."""
    capture = case.get("capture")
    if capture not in CAPTURE_KEYS:
        raise ValueError(f"capture: {capture!r} is not one of {CAPTURE_KEYS}")
    return "cudagraph_capture_oom" if capture == "oom" else str(case["logged"]["outcome"])


def outcome_right(case: Case, est: Estimate | None = None) -> bool:
    """Whether the start the product shows (``Estimate.start``: vLLM's checks, then a graph-capture or KV-allocation
    OOM) is the start the log shows (``logged_start``). A case logged as a fit whose excerpt stops before the capture
    (``not_shown``) keeps its logged fit: a capture OOM predicted there counts as a miss, never as unverifiable."""
    est = est if est is not None else estimate_case(case)
    return est.start == logged_start(case)


def kv_error(case: Case) -> float | None:
    """Signed relative KV-token error (predicted - logged) / logged; None when the log sized no KV cache."""
    logged = case["logged"].get("kv_cache_tokens")
    if not logged:
        return None
    return (estimate_case(case).kv_cache_tokens - logged) / logged


@dataclass(frozen=True)
class Accuracy:
    """How the estimator did on a set of cases: outcome classes, and KV-token errors where the log sized it."""

    cases: int
    outcomes_right: int
    errors: tuple[float, ...]  # signed, one per sized case

    @property
    def median_abs(self) -> float:
        return statistics.median(abs(e) for e in self.errors) if self.errors else 0.0

    @property
    def p90_abs(self) -> float:
        return percentile([abs(e) for e in self.errors], 90)

    @property
    def max_abs(self) -> float:
        return max((abs(e) for e in self.errors), default=0.0)

    @property
    def over(self) -> int:
        """Cases predicting more than OVER_TOLERANCE above the logged KV cache (the dangerous direction)."""
        return sum(e > OVER_TOLERANCE for e in self.errors)


def accuracy(cases: Iterable[Case]) -> Accuracy:
    """Outcome matches (the start as shown, ``outcome_right``) and KV errors over ``cases``."""
    total = right = 0
    errors: list[float] = []
    for case in cases:
        total += 1
        right += outcome_right(case)
        err = kv_error(case)
        if err is not None:
            errors.append(err)
    return Accuracy(total, right, tuple(errors))
