"""What vLLM is predicted to do with a pod template: KV tokens, maximum concurrency, outcome (pure).

Every write an operation proposes is shown with this prediction next to its diff, so an operator sees
"fits, 197,840 KV tokens, 12.1× at 16384" before approving — and a rollback onto a card that cannot
hold the model is visible as such. The GPU is the one the template pins (nodeSelector or a required
node affinity on a product label); an unpinned template gets no number, only the reason.
Here, below operations/ and drift/, because both print it: the deploys next to a write, drift next to a check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.gpus import affinity_products
from vllm_remedy.remedies.budget import spelling
from vllm_remedy.remedies.budget.limits import margin_shortfall
from vllm_remedy.vllm import (
    catalog,
    dtype_support,
    engine_env,
    hf_dotted,
    hf_overrides,
    kv_auto,
    manifest_flags_file,
    model_len,
    resolved,
)
from vllm_remedy.vllm.catalog import PRODUCT_LABELS, GpuSpec, ModelSpec
from vllm_remedy.vllm.cmdline import ServerCommand, canonical_key, find_server, unrecognized
from vllm_remedy.vllm.memory import EngineSettings, Estimate, estimate
from vllm_remedy.vllm.memory.config_values import ConfigRefused
from vllm_remedy.vllm.memory.core import RefusedBy
from vllm_remedy.vllm.memory.kv_margin import KV_ESTIMATE_MARGIN
from vllm_remedy.vllm.memory.occurrences import overridden_refusal
from vllm_remedy.vllm.outcomes import Failure, Outcome, has_cache, no_cache, sized_json
from vllm_remedy.vllm.parallel import (
    container_gpus,
    group_flags,
    pod_shortfall,
    refused_before_world_size,
)
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, rules, version_from_image


@dataclass(frozen=True)
class Prediction:
    """The memory model's verdict for one template, or ``note`` saying why there is none (with a max-length refusal,
    ``note`` is its words: the model's maximum and the env var, ``model_len.refusal``)."""

    gpu: str | None
    estimate: Estimate | None
    note: str = ""
    #: Where the version's rules come from when they were not modelled (``vLLM 0.25.0: rules extrapolated from
    #: 0.21``); empty for a modelled release, so a number is never printed as if it were modelled.
    rules: str = ""
    #: No estimate because vLLM's argument parser refuses a flag's value (``note`` says which): a certain failure
    #: (exit 2), not an unknown.
    refused: bool = False
    #: No estimate because vLLM's config classes refuse a literal value (``memory.config_values``; ``note`` quotes
    #: them): ``config_refused``, a certain failure before anything loads.
    config_refused: bool = False
    #: vLLM stops before sizing any memory because the pod's GPUs cannot hold its engine (``vllm.parallel``'s
    #: ``pod_shortfall``, in words): a certain failure, whatever the card.
    layout: str = ""
    #: ``--kv-cache-dtype auto`` resolved to fp8 from the checkpoint's ModelOpt KV scheme (``kv_auto.note``), in
    #: words; empty otherwise: the cache the policy's kv_cache_fp8 rule judges (``drift.kv_auto_rule``).
    kv_auto: str = ""
    #: The template's options a release past the newest read may have added, each in check's words
    #: (``unjudged``: "not judged: --foo-bar is not an option of vLLM 0.34.0, ..."): said wherever the rules are, so
    #: a prediction is never printed as if it had weighed them.
    unjudged: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        """The predicted start (``Estimate.start``: a graph-capture OOM after vLLM's checks pass is named, not called
        ``fits``), ``argument_refused`` when vLLM's parser stops it, ``unknown`` without an estimate otherwise, so JSON
        always carries a string."""
        if self.layout:
            return Failure.WORLD_SIZE_EXCEEDS_GPUS.value
        if self.estimate is None:
            if self.config_refused:
                return Failure.CONFIG_REFUSED.value
            return Failure.ARGUMENT_REFUSED.value if self.refused else "unknown"
        return self.estimate.start

    def line(self) -> str:
        """One line for the operator, e.g. ``prediction on NVIDIA-L40S: fits — 197,840 KV tokens, ...``, each option
        not judged in parentheses at its end."""
        unjudged = "".join(f" ({n})" for n in self.unjudged)
        if self.layout:
            return f"prediction{f' on {self.gpu}' if self.gpu else ''}: {self.outcome} — {self.layout}{unjudged}"
        if self.estimate is None:
            return f"no prediction: {self.note}{unjudged}"
        e = self.estimate
        rules = f" ({self.rules})" if self.rules else ""
        rules += unjudged
        if not has_cache(e.outcome):  # refused before a KV cache exists, so none is shown
            why = f" ({self.note})" if self.note else ""
            return f"prediction on {self.gpu}: {self.verdict} — {no_cache(e.outcome)}{why}{rules}"
        return (f"prediction on {self.gpu}: {self.verdict} — KV cache {e.kv_cache_tokens:,} tokens, "
                f"maximum concurrency {e.max_concurrency:.2f}x at max-model-len {e.max_model_len}{rules}")

    @property
    def verdict(self) -> str:
        """The outcome as the line prints it: a ``fits`` whose KV cache could lose less than the estimate margin and
        still hold one max-model-len request says so as the planner does (``fits by 11 %, below the 16 % estimate
        margin``), so an operator approving a write sees that the fit is within the estimator's own error."""
        e = self.estimate
        if e is None or not e.fits or e.max_concurrency <= 0:
            return self.outcome
        spare = 1 - 1 / e.max_concurrency
        return margin_shortfall(spare, KV_ESTIMATE_MARGIN) if spare < KV_ESTIMATE_MARGIN else self.outcome

    def to_json(self) -> dict[str, Any]:
        """The prediction for the drift report, the estimate's every term included (null without one; the sizing
        figures null for a start refused at config time, ``outcomes.sized_json``); ``not_judged`` only when an option
        was not (check's JSON says it in its ``notes`` and builds its prediction without it)."""
        said = {"not_judged": list(self.unjudged)} if self.unjudged else {}
        return {"gpu": self.gpu, "outcome": self.outcome, "note": self.note, "rules": self.rules or "modelled", **said,
                "estimate": sized_json(self.estimate) if self.estimate else None}


def pinned_gpu(spec: Mapping[str, Any]) -> str | None:
    """The GPU product label value a pod spec pins: nodeSelector first, else the smallest affinity choice.

    Planning for the smallest card the scheduler may pick is the safe side; among equal sizes the
    first one the affinity lists wins, so every caller names the same card.
    """
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        for key in PRODUCT_LABELS:
            if selector.get(key):
                return str(selector[key])
    choices = [(g.total_gib, v) for v in affinity_products(spec) if (g := catalog.find_gpu(v)) is not None]
    return min(choices, key=lambda c: c[0])[1] if choices else None


def predict_template(template: Mapping[str, Any], container: str | None = None,
                     gpu: str | None = None, other_process_gib: float | None = None, *, group: bool | None = None,
                     resource: str = "nvidia.com/gpu") -> Prediction:
    """Predict the start of ``template``'s vLLM server on its pinned GPU (or ``gpu`` when given).

    ``other_process_gib`` is GPU memory another process already holds on the card, when known (a game
    day knows what its fault holds; a live cluster does not say). ``group``: the leader of a multi-node group
    (LeaderWorkerSet), whose pipeline stages are sized as tensor-parallel ranks over the group's GPUs
    (``vllm.parallel.group_flags``); None reads it from the template (:func:`ray_group`). A single pod is judged as
    vLLM starts it: an engine wider than the pod's ``resource`` limit (or no limit) fails before any memory is sized
    (``layout``), unless a check vLLM runs before the world size refuses the start (:func:`before_world_size`), and
    pipeline stages are "cannot predict" (``vllm.memory.pipeline``).
    """
    spec = dict(template.get("spec") or {})
    try:
        server = find_server(spec, container)
    except UserError as exc:
        return Prediction(None, None, f"no vLLM server: {exc}")
    group = ray_group(server.flags) if group is None else group
    found = replace(_predict_server(spec, server, gpu, other_process_gib, group), unjudged=unjudged(server))
    if group or (short := _shortfall(server, resource)) is None:
        return found
    if before_world_size(found, version_from_image(server.image)):
        return found
    return Prediction(gpu or pinned_gpu(spec), None, short, rules=found.rules, layout=short, unjudged=found.unjudged)


def unjudged(server: ServerCommand) -> tuple[str, ...]:
    """What check and plan say of each option of ``server``'s argv a release past the newest read may have added
    (``cmdline.unrecognized.unjudged``, worded by its ``note``): the deploys, drift, diagnose and the game-day report
    say it beside their prediction, from the one wording."""
    version = version_from_image(server.image)
    return tuple(unrecognized.note(words, version) for words in unrecognized.unjudged(server, version))


def caveats(server: ServerCommand) -> dict[str, Any]:
    """The ``rules`` and ``unjudged`` of every prediction of ``server``, as Prediction's keywords: for a prediction
    made from a plan's estimate rather than by :func:`predict_template`."""
    return {"rules": rules_note(version_from_image(server.image)), "unjudged": unjudged(server)}


def before_world_size(prediction: Prediction, version: str | None) -> bool:
    """Whether vLLM stops on ``prediction``'s refusal before it compares the world size with the pod's GPUs (then the
    pod's log ends with that refusal): argparse, a literal the config classes refuse, or a check
    ``parallel.refused_before_world_size`` places first for the release (``Estimate.refused_at``)."""
    if prediction.refused or prediction.config_refused:
        return True
    return prediction.estimate is not None and refused_before_world_size(
        prediction.estimate.refused_at, parse_version(version) if version else None)


def _predict_server(spec: Mapping[str, Any], server: ServerCommand, gpu: str | None,
                    other_process_gib: float | None, group: bool) -> Prediction:
    """:func:`predict_template` for its server, without the pod's GPU count (the caller orders the world size among
    the refusals)."""
    # every prediction of this image names its rules, an estimate or none (JSON ``rules``: not "modelled" for 0.35.0)
    note = rules_note(version_from_image(server.image))
    label = gpu or pinned_gpu(spec)
    # Argparse's refusals first (an invalid choice, a missing value, a flag the release lacks, a model word the parser
    # has no place for, a missing model tag): vLLM stops there, before it reads a model or a card, so typing a value
    # or resolving the model here would report the wrong reason.
    parsed = next((unrecognized.why(w, rules(version_from_image(server.image)).label)
                   for w in unrecognized.unrecognized(server, version_from_image(server.image))), None)
    if parsed is not None:
        found = catalog.find_gpu(label) if label else None
        return Prediction(found.product if found else label, None, parsed, rules=note, refused=True)
    if label is None:
        return Prediction(None, None, "the template pins no GPU product, so the card is the scheduler's choice",
                          rules=note)
    try:
        card = catalog.gpu(label)
    except UserError:
        return Prediction(label, None, f"GPU {label} is not in the catalog", rules=note)
    if hf_overrides.config_source(server.flags, server.model) is None:  # never the string "None" looked up
        unread = manifest_flags_file.unread(server.flags)  # vLLM may take the model from a --config file not read here
        return Prediction(card.product, None, f"no model in argv: {unread}" if unread else
                          "the vLLM command names no model", rules=note)
    source = str(hf_overrides.config_source(server.flags, str(server.model)))  # --hf-config-path, else the model
    try:
        model = resolved.model(source, server.flags.get("revision"))
    except UserError as exc:  # said why when this run tried to resolve it (Hub, cache, policy), else the catalog's
        known = resolved.known(source, server.flags.get("revision")) is not None
        return Prediction(card.product, None, (str(exc) if known else f"model {source} is not in the catalog")
                          if source == str(server.model) else f"--hf-config-path {source}: {exc}", rules=note)
    try:  # --hf-overrides, applied to the config before vLLM derives anything from it
        release = parse_version(version_from_image(server.image)) or NEWEST_RELEASE
        hf, _ = hf_dotted.received(server, server.flags, release)  # dotted keys folded as the release folds them
        model = hf_overrides.applied(model, source, server.flags.get("revision"), hf, release)
    except UserError as exc:
        return Prediction(card.product, None, str(exc), rules=note)
    try:
        flags = _sized_flags(server.flags, group)
        inputs = {"other-process-gib": str(other_process_gib)} if other_process_gib else {}
        inputs.update(engine_env.env_inputs(server.container))  # VLLM_ALLOW_LONG_MAX_MODEL_LEN, VLLM_USE_V1
        version = version_from_image(server.image)
        settings = EngineSettings.from_flags(flags, version, inputs, server.hidden)
        earlier = overridden_refusal(server, flags, version, inputs)
        if earlier is not None:  # vLLM stops there
            return Prediction(card.product, None, earlier, rules=note, refused=True)  # exit 2, as a refused last value
        if (why := model_len.unknown(model, server.container, settings)) is not None:
            return Prediction(card.product, None, why, rules=note)  # the refusal hangs on a value not seen here
        est = estimate(model, card, settings)
        refusal = config_refusal(model, card, settings, est) or ""  # names the model's maximum and the env var
        kv = kv_auto.note(settings.kv_cache_dtype, model.kv_quant, rules(version).version) or ""
        return Prediction(card.product, est, refusal, rules=note, kv_auto=kv)
    except ConfigRefused as exc:  # a literal vLLM's config classes refuse: a certain failure, in their words
        return Prediction(card.product, None, exc.phrase, rules=note, config_refused=True)
    except UserError as exc:  # a spelling the release's parser refuses (16Ki) is a refused start, not an unknown
        refused = bool(spelling.respell(_sized_flags(server.flags, group), version_from_image(server.image))[1])
        return Prediction(card.product, None, str(exc), rules=note, refused=refused)


def _shortfall(server: ServerCommand, resource: str) -> str | None:
    """Why the pod's GPUs cannot hold its engine (``pod_shortfall``) when its container names a GPU count; a template
    without one (no limit: "No CUDA GPUs are available") keeps its memory prediction here, as before — ``check``,
    ``plan`` and ``drift`` judge that case on the manifest, and templates written without resources are common input."""
    gpus = container_gpus(server.container, resource)
    return pod_shortfall(server.flags, server.container, server.image, resource) if gpus and gpus > 0 else None


def ray_group(flags: Mapping[str, str]) -> bool:
    """Whether the template's engine spans nodes beyond its pod: ``--distributed-executor-backend ray``, how a
    LeaderWorkerSet leader runs (the vLLM docs' LWS example), or ``--nnodes`` above 1 (the multiprocessing backend's
    multi-node form). vLLM's world-size refusal names exactly these two ways out ("If this is intentional and you are
    using: - ray, set '--distributed-executor-backend ray'. - multiprocessing, set '--nnodes' appropriately."), so the
    pod's own GPU limit says nothing then. The restore and evidence paths predict a LeaderWorkerSet's leader template
    without naming its kind, hence this reading."""
    norm = {canonical_key(k): str(v).strip() for k, v in flags.items()}
    try:
        nodes = int(norm.get("nnodes", "1"))
    except ValueError:
        nodes = 1
    return norm.get("distributed-executor-backend") == "ray" or nodes > 1


def _sized_flags(flags: Mapping[str, str], group: bool) -> dict[str, str]:
    """The flags the memory model sizes: a group's pipeline stages split the model like tensor-parallel ranks (the
    existing approximation for LeaderWorkerSets); a single pod's stay as written, which the estimate calls unknown."""
    return group_flags(flags) if group else dict(flags)


# How a prediction's note introduces each config-time refusal (``Estimate.refused_by``).
_REFUSED_BY: dict[RefusedBy, str] = {
    "model": "vLLM refuses the model at config time: ",  # an architecture / quantization method the release lacks
    "env": "vLLM refuses the start: ",  # the env's VLLM_USE_V1
    "tp": "vLLM refuses the tensor-parallel size: ",  # ``memory.core.tp_refused``
    "quant": "vLLM refuses the quantization at config time: ",
    "batch": "vLLM refuses the start at config time: ",  # the scheduler config's batch below the length
}


def config_refusal(model: ModelSpec, card: GpuSpec, settings: EngineSettings, est: Estimate) -> str | None:
    """Why vLLM refuses the start ``est`` predicts, in words (None when it does not): the max-length refusal names the
    model's maximum and the env var (``model_len.refusal``); a ``config_refused`` start the words the estimate decided
    it with (``Estimate.refusal``, not the checks walked again), also when the card would refuse bfloat16 too: the
    engine config is built before any worker checks the dtype; the dtype refusal the card and the flag to set. The
    estimate's refusal speaks before the length's where the release runs it first (``refusal_order``: an architecture
    from 0.9.2, VLLM_USE_V1 text before 0.8)."""
    if est.refusal is not None and est.refused_by is not None:
        return _REFUSED_BY[est.refused_by] + est.refusal
    if (why := model_len.refusal(model, settings)) is not None:
        return why
    if dtype_support.refused(model.dtype, settings.dtype, card.capability, settings.version, model.model_types):
        return (f"vLLM refuses bfloat16 on the {card.product} (compute capability below 8.0) before loading the "
                "model; set --dtype half (float16), or pin a GPU of capability 8.0 or newer")
    return None


def rules_note(version: str | None) -> str:
    """How the rules were made when not read from the release itself, for the prediction lines: ``vLLM 0.35.0: rules
    extrapolated from 0.34.0``, ``unknown version: rules of the newest release, 0.34.0`` (no version: ``:latest``, a
    digest, a tag naming no vLLM version); empty for a release whose rules were read."""
    r = rules(version)
    if not r.known:
        return r.provenance
    return f"vLLM {r.display}: rules {r.provenance}" if r.qualified else ""


def failed_prediction(prediction: Prediction) -> str | None:
    """Why a prediction forbids a change (``None`` when it fits or cannot be judged): every operation asks this
    before it proposes a write.

    A start the estimator calls ``fits`` whose peak still exceeds the card is treated as a failure too.
    """
    if prediction.layout:
        return f"predicted {prediction.outcome}: {prediction.layout}"
    e = prediction.estimate
    if e is None:
        return None
    if e.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL and prediction.note:  # refused at config time: no KV figures
        return f"predicted {e.start}: {prediction.note}"
    if e.start != "fits":
        return f"predicted {e.start} on {prediction.gpu} ({prediction.line()})"
    if e.total_gib - e.peak_gib < 0:
        return (f"predicted peak {e.peak_gib:.2f} GiB exceeds the {e.total_gib:.2f} GiB of {prediction.gpu} "
                f"({prediction.line()})")
    return None
