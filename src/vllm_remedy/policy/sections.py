"""The sections of a policy other than flag bounds and known-good units (``known_good``): what it targets, the GPU,
load shedding, the gateway fallback, confirmation, alerts. Each is a frozen model; cross-section
rules live on :class:`~vllm_remedy.policy.model.Policy`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from ..vllm.catalog import find_gpu
from .durations import parse_duration
from .flags import FP8_PREFIX
from .scalars import (
    POLICY_ERROR,
    ApiGroup,
    AsDict,
    Bool,
    Duration,
    FrozenMapping,
    FrozenModel,
    Int1,
    LabelKey,
    LabelValue,
    LabelValueList,
    Margin,
    Namespace,
    NamespaceList,
    NonNegativeFloat,
    ObjectName,
    ObjectNameList,
    Percent,
    Port,
    PositiveFloat,
    Text,
    TextList,
    UsagePercent,
    fail,
    one_of,
)


class Target(FrozenModel):
    """Which Deployments the policy is meant for; an empty list means "any"."""

    namespaces: NamespaceList = ()
    deployments: ObjectNameList = ()
    models: TextList = ()
    match_labels: Annotated[Mapping[LabelKey, LabelValue], FrozenMapping, AsDict] = Field(
        default_factory=lambda: MappingProxyType({}))

    def matches(self, namespace: str, deployment: str, model: str | None = None,
                labels: Mapping[str, str] | None = None) -> bool:
        """True when a Deployment falls under this policy (model/labels unknown → not held against it)."""
        if self.namespaces and namespace not in self.namespaces:
            return False
        if self.deployments and deployment not in self.deployments:
            return False
        if self.models and model is not None and model not in self.models:
            return False
        labels = labels or {}
        return all(labels.get(k) == v for k, v in self.match_labels.items()) if self.match_labels else True

    @property
    def specificity(self) -> int:
        """How narrowly the target names its Deployments: names beat models and labels, which beat namespaces."""
        return 4 * bool(self.deployments) + 2 * bool(self.models) + 2 * bool(self.match_labels) + bool(self.namespaces)


#: Label keys whose values the GPU catalog (``vllm/data/gpus.yaml`` ``labels``) holds.
_CATALOG_LABEL_KEYS = frozenset({"nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
                                 "karpenter.k8s.aws/instance-gpu-name"})


class GpuPolicy(FrozenModel):
    """The GPU type to pin (GPU feature discovery label) and how many GPUs a pod asks for."""

    products: LabelValueList = ()
    label: LabelKey = "nvidia.com/gpu.product"
    resource: LabelKey = "nvidia.com/gpu"
    per_pod: Int1 = 1
    #: Time-sliced nodes advertise "<product>-SHARED"; they share memory, so they do not count unless allowed.
    allow_shared: Bool = False

    @property
    def pinned(self) -> bool:
        """Whether the policy pins a GPU type at all (an empty list leaves scheduling alone)."""
        return bool(self.products)

    @model_validator(mode="after")
    def _known_products(self) -> GpuPolicy:
        """A product the GPU catalog lacks, under a label key whose values the catalog knows (GFD, GKE, Karpenter),
        is a typo the pin would write into every pod's affinity (no node then matches): one line naming it. A custom
        label key's values are the cluster's own and are not judged."""
        if self.label.lower() not in _CATALOG_LABEL_KEYS:
            return self
        for i, product in enumerate(self.products):
            if find_gpu(product) is None:
                raise PydanticCustomError(
                    "policy_cross", "unknown GPU product {product} (no card of that {label} value in the GPU catalog)",
                    {"path": f"gpu.products[{i}]", "product": repr(product), "label": self.label})
        return self


class LoadShedding(FrozenModel):
    """Values for shedding load: step 1 (restart with fewer, shorter sequences) and step 5 (caps)."""

    max_num_seqs: Int1 | None = None
    max_model_len: Int1 | None = None
    max_num_batched_tokens: Int1 | None = None
    #: Enforced at the gateway; must stay below the max-model-len in force.
    max_prompt_tokens: Int1 | None = None
    #: --limit-mm-per-prompt for multimodal models, e.g. {image: 2}.
    limit_mm_per_prompt: Annotated[Mapping[Text, Int1], FrozenMapping, AsDict] | None = None
    max_loras: Int1 | None = None

    def flags(self) -> dict[str, str]:
        """The vLLM flags to set when shedding (gateway-only values excluded)."""
        out = {}
        for flag, value in (("max-num-seqs", self.max_num_seqs), ("max-model-len", self.max_model_len),
                            ("max-num-batched-tokens", self.max_num_batched_tokens), ("max-loras", self.max_loras)):
            if value is not None:
                out[flag] = str(value)
        if self.limit_mm_per_prompt:
            out["limit-mm-per-prompt"] = json.dumps(dict(self.limit_mm_per_prompt), separators=(",", ":"))
        return out


class RouteRef(FrozenModel):
    """The Gateway API HTTPRoute whose backend weights are shifted."""

    name: ObjectName
    namespace: Namespace


class BackendRef(FrozenModel):
    """A Gateway API backendRef; kind/group default to a core Service as the Gateway API does."""

    name: ObjectName
    namespace: Namespace | None = None
    port: Port | None = None
    kind: Text = "Service"
    group: ApiGroup = ""

    def key(self) -> tuple[str, str, str, str | None]:
        """Identity of the referenced object, for comparing references regardless of port."""
        return (self.group, self.kind, self.name, self.namespace)


class Fallback(FrozenModel):
    """Shift part of the traffic from the vLLM backend to another model or hosted API."""

    route: RouteRef
    primary: BackendRef
    fallback: BackendRef
    #: Percent of traffic the fallback gets while shedding (primary keeps the rest).
    shift_percent: Percent = 50
    #: How long every primary pod must have been Ready before ``restore`` shifts the traffic back; null means
    #: ``confirm.stable_for`` (the fallback is temporary: nothing leaves it on for good).
    shift_back_after: Duration | None = None

    @model_validator(mode="after")
    def _distinct(self) -> Fallback:
        if self.primary.key() == self.fallback.key():
            raise PydanticCustomError(POLICY_ERROR, "primary and fallback name the same backend {name}",
                                      {"name": self.primary.name})
        return self


class KvCacheFp8(FrozenModel):
    """Whether remedies may switch the KV cache to fp8 — only after its quality was evaluated."""

    status: Annotated[str, BeforeValidator(one_of("allowed", "forbidden"))] = "forbidden"
    #: Who evaluated fp8 KV cache for this model, how and when; required when status is allowed.
    evaluated: Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"status": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _evaluated(self) -> KvCacheFp8:
        if self.status == "allowed" and not self.evaluated:
            raise PydanticCustomError(
                POLICY_ERROR, "status allowed needs an `evaluated` note (who checked fp8 quality, how, when)", {})
        return self

    @property
    def allowed(self) -> bool:
        """Only an evaluated `allowed` lets remedies switch the KV cache to fp8."""
        return self.status == "allowed"

    @staticmethod
    def is_fp8(dtype: str) -> bool:
        """vLLM spells 8-bit KV caches fp8, fp8_e4m3, fp8_e5m2...: all are fp8 for the policy."""
        return dtype.strip().lower().startswith(FP8_PREFIX)


class EnforceEager(FrozenModel):
    """--enforce-eager is a timed toggle: it costs throughput, so it must revert itself."""

    allowed: Bool = True
    max_duration: Duration = timedelta(hours=2)

    @model_validator(mode="after")
    def _temporary(self) -> EnforceEager:
        if self.max_duration > timedelta(days=7):
            raise PydanticCustomError(POLICY_ERROR, "max_duration may be at most 7d (the toggle is temporary)", {})
        return self


class Budget(FrozenModel):
    """Runbook step 4's planner. ``kv_margin``: the share of the predicted KV cache a change must be able to lose
    and still hold max-model-len and the target concurrency. null (the default) uses the margin derived from
    the estimator's held-out error; a number overrides it (0 trusts the point estimate)."""

    kv_margin: Margin | None = None


class Restore(FrozenModel):
    """Step 1: how long to wait for the rolled-back revision (the runbook's --timeout=15m), how long shed pods must
    stay up after their rollout (``shed_settle``), and whether the
    Deployment-level fields confirm recorded with the target's known-good mark (strategy, minReadySeconds,
    progressDeadlineSeconds) are put back with its template (``restore``) or only shown in the diff (``show``)."""

    rollout_timeout: Duration = timedelta(minutes=15)
    deployment_fields: Annotated[str, BeforeValidator(one_of("restore", "show"))] = "restore"
    #: After shedding load, how long the shed pods must stay up (no restart) before the run says it worked: the
    #: load that killed them is still there, and Ready for a moment is not restored.
    shed_settle: Duration = timedelta(minutes=2)
    #: StatefulSets: a rollback reaches a pod the controller will not replace itself (OnDelete; a crash-looping pod
    #: under OrderedReady) only when it is deleted. ``blocking``: delete exactly those; ``never``: say so and stop.
    delete_pods: Annotated[str, BeforeValidator(one_of("never", "blocking"))] = "never"


def _respond_mode(value: Any) -> str:
    """YAML 1.1 reads an unquoted ``off`` as false; that is what the user wrote, so it means ``off``."""
    return one_of("off", "dry-run", "auto")("off" if value is False else value)


class Respond(FrozenModel):
    """What ``vllm-remedy respond`` may do when Alertmanager pages for this policy's Deployments: ``off`` (log
    the alert, nothing else), ``dry-run`` (run the deploy with ``--dry``: the note says what it would change,
    the cluster is not written) or ``auto`` (run it with ``-y``). ``cooldown``: after an action on a host, alerts
    for that host do nothing for this long — a rollback needs time to show whether it helped."""

    mode: Annotated[str, BeforeValidator(_respond_mode)] = "off"
    cooldown: Duration = timedelta(minutes=15)
    #: The manual path's delay before step 1 starts: page → acknowledged → someone at a keyboard running the
    #: restore deploy. Never acted on; the game day compares time to restore with the responder against it.
    human_response: Duration = timedelta(minutes=10)


class Writes(FrozenModel):
    """How long a write whose answer was lost (a timeout, a 5xx, a dropped connection) is watched for: the API
    server may still commit it after answering 504, so its outcome is read off the object, not the error."""

    unanswered_grace: Duration = timedelta(seconds=30)


def _prometheus_url(value: Any) -> str:
    expected = "an http(s) URL of a Prometheus server, e.g. http://prometheus.monitoring.svc:9090"
    if not isinstance(value, str):
        raise fail(expected, value)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise fail(expected, value)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise fail(expected, value) from None
    return value.rstrip("/")


def _query_timeout(value: Any) -> timedelta:
    expected = 'a duration from 1s to 1m, such as "10s"'
    try:
        seconds = parse_duration(value) if isinstance(value, str) else None
    except ValueError:
        seconds = None
    if seconds is None or not 1 <= seconds <= 60:
        raise fail(expected, value)
    return timedelta(seconds=seconds)


class GatewayErrorRate(FrozenModel):
    """Step 6's "error rate normal" at the gateway: the policy's own PromQL, run as an instant query."""

    #: The Prometheus server confirm asks (``/api/v1/query``); a path prefix (``/prometheus``) is kept.
    prometheus: Annotated[str, BeforeValidator(_prometheus_url)]
    #: PromQL returning the gateway's error rate for this model's traffic, one number per series.
    query: Text
    #: Every series the query returns must be at or below this (in the query's unit, e.g. 0.01 = 1 %).
    max: NonNegativeFloat
    #: How long the query may take (the HTTP request and Prometheus's own evaluation).
    timeout: Annotated[timedelta, BeforeValidator(_query_timeout)] = timedelta(seconds=10)


class Confirm(FrozenModel):
    """Step 6: when a revision may be marked known-good."""

    stable_for: Duration = timedelta(minutes=30)
    #: The startup log's maximum concurrency must be at least this multiple of peak_concurrency.
    min_concurrency_ratio: PositiveFloat = 1.0
    #: null: no Prometheus; else the gateway's error rate must be at or below ``max`` to confirm.
    gateway_error_rate: GatewayErrorRate | None = None


class Alerts(FrozenModel):
    """Thresholds for the rendered PrometheusRule (and "normal" for confirm)."""

    kv_cache_usage_percent: UsagePercent = 90.0
    preemptions_per_minute: PositiveFloat = 1.0
    for_: Duration = Field(timedelta(minutes=5), alias="for")


class Drift(FrozenModel):
    """How ``vllm-remedy drift`` judges a check it cannot decide (``unknown``: a model or GPU outside the catalogs).

    ``drift`` (the default): not in sync, exit and alert as drift — silence must not read as health. ``in-sync``:
    for teams that run models the catalogs do not know and want the alert for what can be judged; the check stays
    ``unknown`` in the report and in ``vllm_remedy_drift_unknown``.
    """

    unknown: Annotated[str, BeforeValidator(one_of("drift", "in-sync"))] = "drift"

    @property
    def accepts_unknown(self) -> bool:
        """Whether an unknown check leaves the host in sync."""
        return self.unknown == "in-sync"


class ModelConfig(FrozenModel):
    """Where the model's config.json is when neither the catalog, the Hugging Face cache nor the Hub has it (a
    cluster that reaches no Hub, a private fine-tune): a file beside the policy, or a ConfigMap in the
    Deployment's namespace. Tried last, so a reachable Hub's config for the pinned ``--revision`` wins."""

    path: Text | None = None
    config_map: ObjectName | None = None
    key: Text = "config.json"
    # The model (repository id) the config is of: it stands in for that model only, not for any pod the policy
    # covers (a 70B repository sized from a 1.7B config). Unset: ``target.models``, else the config's own
    # ``_name_or_path``; a local path model (``--model /models/x``) is always the policy's.
    model: Text | None = None

    @model_validator(mode="after")
    def _model_with_a_source(self) -> ModelConfig:
        """A ``model`` with neither ``path`` nor ``config_map`` names a config that is not there: one line."""
        if self.model is not None and not (self.path or self.config_map):
            raise PydanticCustomError(
                "policy_cross", "model_config.model {model} needs model_config.path or model_config.config_map (the "
                "config.json of that model)", {"path": "model_config.model", "model": repr(self.model)})
        return self
