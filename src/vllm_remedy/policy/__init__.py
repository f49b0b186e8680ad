"""Policies: ``policies/*.yaml`` → validated, immutable :class:`Policy` objects.

A policy says what a vLLM Deployment must look like (flag bounds, explicit max-model-len, pinned GPU,
known-good versioned units) and what remedies may do (fp8 KV cache, enforce-eager duration, load
shedding, gateway fallback, GitOps stance). Errors are one line: ``<file>: <key.path>: expected …``.
"""

from __future__ import annotations

from .defaults import BASELINE_FLAGS, DEFAULT_POLICY
from .durations import format_duration, parse_duration
from .flags import Bounds, Choices, FlagRules, FractionBounds, IntBounds, Violation, canonical_flag, parse_flag_int
from .known_good import KnownGoodUnit
from .loader import load_policies, load_policy, policy_for
from .model import API_VERSION, DEFAULT_ANNOTATION_PREFIX, Policy
from .sections import (
    Alerts,
    BackendRef,
    Budget,
    Confirm,
    EnforceEager,
    Fallback,
    GatewayErrorRate,
    GpuPolicy,
    KvCacheFp8,
    LoadShedding,
    Respond,
    Restore,
    RouteRef,
    Target,
    Writes,
)

__all__ = [
    "API_VERSION",
    "BASELINE_FLAGS",
    "DEFAULT_ANNOTATION_PREFIX",
    "DEFAULT_POLICY",
    "Alerts",
    "BackendRef",
    "Bounds",
    "Budget",
    "Choices",
    "Confirm",
    "EnforceEager",
    "Fallback",
    "FlagRules",
    "FractionBounds",
    "GatewayErrorRate",
    "GpuPolicy",
    "IntBounds",
    "KnownGoodUnit",
    "KvCacheFp8",
    "LoadShedding",
    "Policy",
    "Respond",
    "Restore",
    "RouteRef",
    "Target",
    "Violation",
    "Writes",
    "canonical_flag",
    "format_duration",
    "load_policies",
    "load_policy",
    "parse_duration",
    "parse_flag_int",
    "policy_for",
]
