"""Bounds on vLLM flags and the check drift and budget share: flag values (strings, as the command-line
parser reports them) against the policy's limits, one :class:`Violation` per broken rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from vllm_remedy.vllm.cmdline.flags import canonical_key
from vllm_remedy.vllm.cmdline.values import parse_float, parse_int

from .scalars import POLICY_ERROR, Fraction, FrozenModel, Int1, Text, fail, got

#: kv-cache-dtype values that store the KV cache in 8 bits (vLLM spells several).
FP8_PREFIX = "fp8"

parse_flag_float = parse_float


def parse_flag_int(value: str) -> int | None:
    """The project's one integer reading (:func:`parse_int`), minus negatives: vLLM reads ``-1`` as "auto",
    so a negative value is not a literal length a bound can judge."""
    number = parse_int(value)
    return number if number is not None and number >= 0 else None


def canonical_flag(name: str) -> str:
    """``--max_model_len`` / ``max-num-seq`` / ``tp`` → the canonical dashed name.

    One resolver for the whole project (the command-line parser's, with vLLM's `_`→`-`, unique prefixes
    and short aliases), so a policy, `args set` and a parsed manifest can never disagree on which flag
    a spelling means.
    """
    return canonical_key(name)


@dataclass(frozen=True)
class Violation:
    """One flag that breaks the policy. ``value`` is None when the flag is absent but required."""

    flag: str
    value: str | None
    expected: str

    def __str__(self) -> str:
        shown = f"--{self.flag} is not set" if self.value is None else f"--{self.flag}={self.value}"
        return f"{shown}: expected {self.expected}"


def _range_text(lo: object, hi: object, kind: str, lo_open: bool = False) -> str:
    if lo is not None and hi is not None:
        return f"{kind} in {'(' if lo_open else '['}{lo}, {hi}]"
    if lo is not None:
        return f"{kind} {'>' if lo_open else '≥'} {lo}"
    if hi is not None:
        return f"{kind} ≤ {hi}"
    return kind


class IntBounds(FrozenModel):
    """Limits for a count flag; ``preferred`` is what budget writes when it has to set the flag."""

    min: Int1 | None = None
    max: Int1 | None = None
    preferred: Int1 | None = None

    @model_validator(mode="after")
    def _ordered(self) -> IntBounds:
        _check_order(self.min, self.max, self.preferred)
        return self

    def describe(self) -> str:
        """The expectation in words, as Violation messages and policy errors print it."""
        return _range_text(self.min, self.max, "an integer")

    def contains(self, number: float) -> bool:
        """Inclusive on both ends; callers parse the flag first (placeholders are not numbers)."""
        return (self.min is None or number >= self.min) and (self.max is None or number <= self.max)

    def check(self, value: str) -> str | None:
        """None when ``value`` is within bounds, else the expectation it failed."""
        number = parse_flag_int(value)
        if number is None and parse_int(value) is not None:  # a literal, but negative: -1 is a choice, not a size
            return (f"{self.describe()} (a negative integer: vLLM reads --max-model-len -1 as auto-fit from 0.14.0, "
                    "a length it picks at start, which no bound can judge)")
        if number is None:
            return f"{self.describe()} (not a literal integer)"
        return None if self.contains(number) else self.describe()


class FractionBounds(FrozenModel):
    """Limits for a fraction flag such as gpu-memory-utilization, always within (0, 1]."""

    min: Fraction | None = None
    max: Fraction | None = None
    preferred: Fraction | None = None

    @model_validator(mode="after")
    def _ordered(self) -> FractionBounds:
        _check_order(self.min, self.max, self.preferred)
        return self

    def describe(self) -> str:
        """The expectation in words; an unset minimum reads as the open (0, ...] vLLM itself requires."""
        if self.min is None and self.max is None:
            return "a number in (0, 1]"
        return _range_text(self.min if self.min is not None else 0, self.max if self.max is not None else 1,
                           "a number", lo_open=self.min is None)

    def contains(self, number: float) -> bool:
        """Open at 0 when no minimum is set: a utilization of 0 would start no engine at all."""
        lo = self.min if self.min is not None else 0.0
        hi = self.max if self.max is not None else 1.0
        return (number >= lo if self.min is not None else number > lo) and number <= hi

    def check(self, value: str) -> str | None:
        """None when ``value`` is within bounds, else the expectation it failed."""
        number = parse_flag_float(value)
        if number is None:
            return f"{self.describe()} (not a literal number)"
        return None if self.contains(number) else self.describe()


def _word_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise fail("a non-empty list of values", value)
    for item in value:
        if not isinstance(item, str) or not item:
            raise fail("a list of strings", item)
    return tuple(value)


class Choices(FrozenModel):
    """The values a string flag (kv-cache-dtype) may take."""

    allowed: Annotated[tuple[str, ...], BeforeValidator(_word_list)]
    preferred: Text | None = None

    @model_validator(mode="after")
    def _preferred_allowed(self) -> Choices:
        if self.preferred is not None and self.preferred not in self.allowed:
            raise PydanticCustomError(
                POLICY_ERROR, "preferred {got} is not in allowed ({allowed})",
                {"got": got(self.preferred), "allowed": ", ".join(self.allowed)},
            )
        return self

    def describe(self) -> str:
        """The expectation in words, listing every allowed value."""
        return "one of " + ", ".join(self.allowed)

    def contains(self, value: str) -> bool:
        """Exact match: vLLM's choices are case-sensitive."""
        return value in self.allowed

    def check(self, value: str) -> str | None:
        """None when ``value`` is allowed, else the expectation it failed."""
        return None if value.strip() in self.allowed else self.describe()


Bounds = Union[IntBounds, FractionBounds, Choices]  # noqa: UP007 - a runtime alias, used with isinstance


def _check_order(lo: float | None, hi: float | None, preferred: float | None) -> None:
    if lo is not None and hi is not None and lo > hi:
        raise PydanticCustomError(POLICY_ERROR, "min {lo} is greater than max {hi}", {"lo": lo, "hi": hi})
    for name, limit, broken in (("min", lo, lambda p, x: p < x), ("max", hi, lambda p, x: p > x)):
        if preferred is not None and limit is not None and broken(preferred, limit):
            raise PydanticCustomError(
                POLICY_ERROR, "preferred {p} is outside {name} {limit}", {"p": preferred, "name": name, "limit": limit}
            )


class FlagRules(FrozenModel):
    """Per-flag limits, keyed by vLLM's own dashed flag names so a policy reads like the command line.

    A fixed set of keys (not a free mapping) so that ``max-model-length`` is an error, not a silent no-op.
    """

    max_model_len: IntBounds | None = Field(None, alias="max-model-len")
    gpu_memory_utilization: FractionBounds | None = Field(None, alias="gpu-memory-utilization")
    max_num_seqs: IntBounds | None = Field(None, alias="max-num-seqs")
    max_num_batched_tokens: IntBounds | None = Field(None, alias="max-num-batched-tokens")
    tensor_parallel_size: IntBounds | None = Field(None, alias="tensor-parallel-size")
    pipeline_parallel_size: IntBounds | None = Field(None, alias="pipeline-parallel-size")
    kv_cache_dtype: Choices | None = Field(None, alias="kv-cache-dtype")

    def get(self, flag: str) -> Bounds | None:
        """Bounds for a flag by any spelling (``max_model_len``, ``--max-model-len``), None if unbounded."""
        field = canonical_flag(flag).replace("-", "_")
        return getattr(self, field, None) if field in type(self).model_fields else None

    def items(self) -> list[tuple[str, Bounds]]:
        """(dashed flag name, bounds) for every bounded flag, in declaration order."""
        out = []
        for field, info in type(self).model_fields.items():
            bounds = getattr(self, field)
            if bounds is not None:
                out.append((info.alias or field, bounds))
        return out
