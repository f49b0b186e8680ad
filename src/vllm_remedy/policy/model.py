"""The policy as a whole: sections plus the rules that tie them together, and the flag check that
drift and budget share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ..errors import UserError
from .files import resolve
from .flags import Bounds, FlagRules, IntBounds, Violation, canonical_flag
from .known_good import KnownGoodUnit
from .messages import one_line
from .scalars import DNS_SUBDOMAIN, Bool, FrozenModel, Int1, Text, fail, one_of
from .sections import (
    Alerts,
    Budget,
    Confirm,
    Drift,
    EnforceEager,
    Fallback,
    GpuPolicy,
    KvCacheFp8,
    LoadShedding,
    ModelConfig,
    Respond,
    Restore,
    Target,
    Writes,
)

API_VERSION = "vllm-remedy.io/v1alpha1"
DEFAULT_ANNOTATION_PREFIX = "vllm-remedy.io/"
#: Prefixes Kubernetes reserves for its own keys; our marks must never pose as theirs.
_RESERVED_PREFIXES = ("kubernetes.io/", "k8s.io/")


def _annotation_prefix(value: Any) -> str:
    expected = 'a DNS-subdomain prefix ending in "/", e.g. vllm-remedy.io/'
    if not isinstance(value, str) or not value.endswith("/") or not DNS_SUBDOMAIN.fullmatch(value[:-1]):
        raise fail(expected, value)
    if any(value == p or value.endswith("." + p) for p in _RESERVED_PREFIXES):
        raise fail("a prefix Kubernetes does not reserve (kubernetes.io/ and k8s.io/ are its own)", value)
    return value


def _cross(path: str, message: str, **ctx: Any) -> PydanticCustomError:
    """A rule spanning sections: the key path travels in ctx so the message can name the offending key."""
    return PydanticCustomError("policy_cross", message, {"path": path, **ctx})


class Policy(FrozenModel):
    """What a vLLM Deployment must look like and what remedies may do to it.

    Build with :func:`~vllm_remedy.policy.load_policy` or :meth:`from_mapping`; ``name`` and ``source``
    come from the file, not from its keys.
    """

    api_version: Literal["vllm-remedy.io/v1alpha1"] = Field(API_VERSION, alias="apiVersion")
    kind: Literal["Policy"] = "Policy"
    description: Text | None = None
    target: Target = Field(default_factory=Target)
    require_explicit_max_model_len: Bool = True
    flags: FlagRules = Field(default_factory=FlagRules)
    kv_cache_fp8: KvCacheFp8 = Field(default_factory=KvCacheFp8)
    gpu: GpuPolicy = Field(default_factory=GpuPolicy)
    known_good: tuple[KnownGoodUnit, ...] = ()
    peak_concurrency: Int1 = 8
    enforce_eager: EnforceEager = Field(default_factory=EnforceEager)
    budget: Budget = Field(default_factory=Budget)
    load_shedding: LoadShedding = Field(default_factory=LoadShedding)
    fallback: Fallback | None = None
    restore: Restore = Field(default_factory=Restore)
    writes: Writes = Field(default_factory=Writes)
    respond: Respond = Field(default_factory=Respond)
    confirm: Confirm = Field(default_factory=Confirm)
    alerts: Alerts = Field(default_factory=Alerts)
    drift: Drift = Field(default_factory=Drift)
    config_source: ModelConfig = Field(default_factory=ModelConfig, alias="model_config")
    gitops: Annotated[str, BeforeValidator(one_of("warn", "refuse", "apply"))] = "refuse"
    annotation_prefix: Annotated[str, BeforeValidator(_annotation_prefix)] = DEFAULT_ANNOTATION_PREFIX

    _name: str = PrivateAttr("")
    _source: str = PrivateAttr("<mapping>")

    @property
    def name(self) -> str:
        """The file's stem (``llama-8b``), the name host data uses to pick a policy."""
        return self._name

    @property
    def source(self) -> str:
        """Where the policy was read from, for messages."""
        return self._source

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<mapping>", *, name: str | None = None) -> Policy:
        """Validate already-parsed data; ``extends`` resolves relative to ``source``'s directory.

        ``name`` defaults to the file's stem (or ``source`` when it is not a file). Errors are one
        UserError line naming the file that set the offending key.
        """
        resolved = resolve(data, source)
        try:
            policy = cls.model_validate(resolved.data)
        except ValidationError as exc:
            raise UserError(one_line(exc, cls, resolved.blame, resolved.data)) from None
        policy._name = name if name is not None else resolved.default_name
        policy._source = source
        return policy

    # --- accessors remedies read -------------------------------------------------------------------------
    def flag_bounds(self, name: str) -> Bounds | None:
        """Bounds for a flag (any spelling), None when the policy does not limit it."""
        return self.flags.get(name)

    def preferred(self, name: str) -> int | float | str | None:
        """The value budget writes for a flag (any spelling), None when the policy has no preference."""
        bounds = self.flag_bounds(name)
        return None if bounds is None else bounds.preferred

    @property
    def max_model_len(self) -> int | None:
        """Shortcut for deploys (`policy.max_model_len`), as a deploy's budget reads it."""
        return self.flags.max_model_len.preferred if self.flags.max_model_len else None

    @property
    def gpu_memory_utilization(self) -> float | None:
        """Shortcut for deploys, the preferred --gpu-memory-utilization."""
        return self.flags.gpu_memory_utilization.preferred if self.flags.gpu_memory_utilization else None

    @property
    def max_num_seqs(self) -> int | None:
        """Shortcut for deploys, the preferred --max-num-seqs."""
        return self.flags.max_num_seqs.preferred if self.flags.max_num_seqs else None

    @property
    def gpu_product(self) -> str | None:
        """The first pinned product: the one pin_gpu writes into nodeSelector."""
        return self.gpu.products[0] if self.gpu.products else None

    def preferred_flags(self) -> dict[str, str]:
        """Every flag with a preferred value, as strings ready for ``args set``."""
        return {flag: str(b.preferred) for flag, b in self.flags.items() if b.preferred is not None}

    def check_flags(self, flags: Mapping[str, str]) -> list[Violation]:
        """Every way ``flags`` (effective flags, string values) breaks this policy; [] when it complies."""
        given = {canonical_flag(k): v for k, v in flags.items()}
        out: list[Violation] = []
        if self.require_explicit_max_model_len and "max-model-len" not in given:
            out.append(Violation("max-model-len", None, "an explicit value (never the model's default)"))
        for flag, bounds in self.flags.items():
            if flag in given:
                expected = bounds.check(given[flag])
                if expected is not None:
                    out.append(Violation(flag, given[flag], expected))
        dtype = given.get("kv-cache-dtype")
        if dtype is not None and not self.kv_cache_fp8.allowed and KvCacheFp8.is_fp8(dtype):
            out.append(Violation("kv-cache-dtype", dtype, "not fp8 (kv_cache_fp8 is forbidden by policy)"))
        return out

    # --- rules across sections ---------------------------------------------------------------------------
    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        kv = self.flags.kv_cache_dtype
        if kv is not None and not self.kv_cache_fp8.allowed:
            fp8 = [v for v in kv.allowed if KvCacheFp8.is_fp8(v)]
            if fp8:
                raise _cross("flags.kv-cache-dtype.allowed", "lists {v} but kv_cache_fp8 is forbidden",
                             v=", ".join(fp8))
        shed = self.load_shedding
        for key, flag in (("max_num_seqs", "max-num-seqs"), ("max_model_len", "max-model-len"),
                          ("max_num_batched_tokens", "max-num-batched-tokens")):
            value = getattr(shed, key)
            bounds = self.flags.get(flag)
            if value is None or not isinstance(bounds, IntBounds):
                continue
            if not bounds.contains(value):
                raise _cross(f"load_shedding.{key}", "{v} is outside flags.{flag} ({d})", v=value, flag=flag,
                             d=bounds.describe())
            if bounds.preferred is not None and value > bounds.preferred:
                raise _cross(f"load_shedding.{key}", "{v} is above flags.{flag}.preferred {p}: shedding must lower it",
                             v=value, flag=flag, p=bounds.preferred)
        if shed.max_prompt_tokens is not None:
            limit, where = self._max_len_in_force()
            if limit is not None and shed.max_prompt_tokens >= limit:
                raise _cross("load_shedding.max_prompt_tokens", "{v} must be below {where} ({limit})",
                             v=shed.max_prompt_tokens, where=where, limit=limit)
        for i, unit in enumerate(self.known_good):
            broken = self.check_flags(unit.flags)
            if broken:
                where = f"known_good[{i}].flags" + (f".{broken[0].flag}" if broken[0].value is not None else "")
                raise _cross(where, "{v}", v=str(broken[0]))
        return self

    def _max_len_in_force(self) -> tuple[int | None, str]:
        if self.load_shedding.max_model_len is not None:
            return self.load_shedding.max_model_len, "load_shedding.max_model_len"
        bounds = self.flags.max_model_len
        if bounds is not None and bounds.preferred is not None:
            return bounds.preferred, "flags.max-model-len.preferred"
        if bounds is not None and bounds.max is not None:
            return bounds.max, "flags.max-model-len.max"
        return None, ""

