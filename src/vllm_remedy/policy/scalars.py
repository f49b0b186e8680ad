"""Scalar field types for policies, each failing with a complete "expected …, got …" sentence.

Pydantic's own messages ("Input should be a valid integer") do not say what the policy wanted, so every
scalar here validates itself and raises a ``policy`` error whose text is final; ``messages.py`` only
prefixes the file and key path.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainSerializer
from pydantic_core import PydanticCustomError

from .durations import parse_duration

#: The error type messages.py recognises as already worded for users.
POLICY_ERROR = "policy"


class FrozenModel(BaseModel):
    """Base of every policy section: unknown keys are typos, and a loaded policy never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


def got(value: Any) -> str:
    """Render a YAML value the way the user wrote it, for "got …" in messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def fail(expected: str, value: Any) -> PydanticCustomError:
    """The one way scalars report a bad value."""
    ctx = {"expected": expected, "got": got(value)}
    return PydanticCustomError(POLICY_ERROR, "expected {expected}, got {got}", ctx)


def _integer(lo: int | None, hi: int | None) -> Callable[[Any], int]:
    expected = "an integer" + (f" ≥ {lo}" if lo is not None else "") + (f" ≤ {hi}" if hi is not None else "")
    if lo is not None and hi is not None:
        expected = f"an integer from {lo} to {hi}"

    def check(value: Any) -> int:
        # bool is an int in Python and YAML's `yes` is a bool: neither is a count.
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(expected, value)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise fail(expected, value)
        return value

    return check


def _number(lo: float, hi: float, lo_open: bool, what: str) -> Callable[[Any], float]:
    expected = f"{what} in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
    if math.isinf(hi):
        expected = f"{what} {'>' if lo_open else '≥'} {lo:g}"

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise fail(expected, value)
        if value < lo or (lo_open and value == lo) or value > hi:
            raise fail(expected, value)
        return float(value)

    return check


def _string(pattern: re.Pattern[str] | None, expected: str, max_len: int | None = None) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise fail(expected, value)
        if max_len is not None and len(value) > max_len:
            raise fail(f"{expected} of at most {max_len} characters", value)
        if pattern is not None and not pattern.fullmatch(value):
            raise fail(expected, value)
        return value

    return check


def _api_group(value: Any) -> str:
    if not isinstance(value, str) or (value and not DNS_SUBDOMAIN.fullmatch(value)):
        raise fail('an API group such as gateway.networking.k8s.io ("" for core)', value)
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise fail("true or false", value)
    return value


def _duration(value: Any) -> timedelta:
    if not isinstance(value, str):
        raise fail('a duration such as "30m", "2h" or "1h30m"', value)
    try:
        return timedelta(seconds=parse_duration(value))
    except ValueError as exc:
        raise fail('a duration such as "30m", "2h" or "1h30m"', value) from exc


def _is_list(expected: str) -> Callable[[Any], Any]:
    """Only the container is checked here; items carry their own validator so errors name the index."""

    def check(value: Any) -> Any:
        if isinstance(value, (str, Mapping)) or not isinstance(value, (list, tuple)):
            raise fail(expected, value)
        return value

    return check


def one_of(*choices: str) -> Callable[[Any], str]:
    """A closed set of words (gitops mode, fp8 status): the message lists them all."""
    expected = "one of " + ", ".join(choices)

    def check(value: Any) -> str:
        if value not in choices:
            raise fail(expected, value)
        return str(value)

    return check


_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
DNS_SUBDOMAIN = re.compile(rf"(?=.{{1,253}}$){_DNS_LABEL}(\.{_DNS_LABEL})*")
DNS_LABEL = re.compile(_DNS_LABEL)
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = re.compile(rf"({DNS_SUBDOMAIN.pattern}/)?{_LABEL_NAME}")
LABEL_VALUE = re.compile(rf"({_LABEL_NAME})?")

Int1 = Annotated[int, BeforeValidator(_integer(1, None))]
Int0 = Annotated[int, BeforeValidator(_integer(0, None))]
Port = Annotated[int, BeforeValidator(_integer(1, 65535))]
Percent = Annotated[int, BeforeValidator(_integer(1, 100))]
UsagePercent = Annotated[float, BeforeValidator(_number(0, 100, True, "a percentage"))]
Fraction = Annotated[float, BeforeValidator(_number(0, 1, True, "a number"))]
PositiveFloat = Annotated[float, BeforeValidator(_number(0, math.inf, True, "a number"))]
Margin = Annotated[float, BeforeValidator(_number(0, 0.5, False, "a fraction of the predicted KV cache"))]
NonNegativeFloat = Annotated[float, BeforeValidator(_number(0, math.inf, False, "a number"))]
Bool = Annotated[bool, BeforeValidator(_bool)]
ApiGroup = Annotated[str, BeforeValidator(_api_group)]
Text = Annotated[str, BeforeValidator(_string(None, "a non-empty string"))]
Duration = Annotated[timedelta, BeforeValidator(_duration)]
Namespace = Annotated[str, BeforeValidator(_string(DNS_LABEL, "a Kubernetes namespace name (RFC 1123 label)"))]
ObjectName = Annotated[str, BeforeValidator(_string(DNS_SUBDOMAIN, "a Kubernetes object name (RFC 1123 subdomain)"))]
LabelKey = Annotated[str, BeforeValidator(_string(LABEL_KEY, "a Kubernetes label key such as nvidia.com/gpu.product"))]
LabelValue = Annotated[str, BeforeValidator(_string(LABEL_VALUE, "a Kubernetes label value", 63))]
TextList = Annotated[tuple[Text, ...], BeforeValidator(_is_list("a list of strings"))]
NamespaceList = Annotated[tuple[Namespace, ...], BeforeValidator(_is_list("a list of namespace names"))]
ObjectNameList = Annotated[tuple[ObjectName, ...], BeforeValidator(_is_list("a list of Kubernetes object names"))]
LabelValueList = Annotated[tuple[LabelValue, ...], BeforeValidator(_is_list("a list of label values"))]


def frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """Wrap a validated dict so a policy's nested mappings are read-only like the models around them."""
    return MappingProxyType(dict(value))


FrozenMapping = AfterValidator(frozen_mapping)
#: Dump read-only mappings as plain dicts (pydantic's dict serializer warns on a mappingproxy).
AsDict = PlainSerializer(dict)
