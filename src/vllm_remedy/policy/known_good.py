"""A known-good unit: the model, vLLM image and flags that were tested together - the runbook's one versioned unit -
and how a running pod is matched against it (flag names canonical, numbers compared as numbers).

Apart from the other sections because its input is vLLM's own vocabulary - flag names and values as a command
line spells them, image references - rather than policy knobs, and ``kube.rollout`` matches revisions against it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from .flags import canonical_flag, parse_flag_float, parse_flag_int
from .scalars import POLICY_ERROR, AsDict, FrozenMapping, FrozenModel, Text, fail, got


def _flag_value(value: Any) -> str:
    """A YAML scalar as the command-line parser would report it: booleans true/false, JSON compact."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, (Mapping, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    raise fail("a flag value (string, number, boolean or JSON mapping)", value)


def _flag_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise fail("a mapping of vLLM flag names to values", value)
    out: dict[str, str] = {}
    for name, raw in value.items():
        if not isinstance(name, str) or not re.fullmatch(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_-]*", name):
            raise fail("a vLLM flag name such as max-model-len", name)
        flag = canonical_flag(name)
        if flag in out:
            raise PydanticCustomError(
                POLICY_ERROR, "flag {flag} is given twice (as {name})", {"flag": flag, "name": got(name)}
            )
        out[flag] = _flag_value(raw)
    return out


FlagMap = Annotated[Mapping[str, str], BeforeValidator(_flag_map), FrozenMapping, AsDict]

_IMAGE = re.compile(r"(?P<name>[^\s@]+?)(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?")


def _image(value: Any) -> str:
    expected = "an image reference with a version tag or digest, e.g. vllm/vllm-openai:v0.8.5"
    if not isinstance(value, str):
        raise fail(expected, value)
    match = _IMAGE.fullmatch(value)
    if not match or "/" in (match["tag"] or "") or not (match["tag"] or match["digest"]):
        raise fail(expected, value)
    if match["tag"] == "latest" and not match["digest"]:
        raise fail(expected + ' ("latest" moves, so it cannot be known-good)', value)
    return value


class KnownGoodUnit(FrozenModel):
    """Model + vLLM image + flags that were tested together: the runbook's one versioned unit."""

    name: Text | None = None
    image: Annotated[str, BeforeValidator(_image)]
    model: Text | None = None
    model_revision: Text | None = None
    flags: FlagMap = Field(default_factory=dict)

    def matches(self, image: str, flags: Mapping[str, str], model_revision: str | None = None) -> bool:
        """Same image, same revision (when the unit pins one), and every unit flag set to the same value.

        Flags the unit does not name (ports, served-model-name) are not part of the unit.
        """
        if image != self.image or (self.model_revision is not None and model_revision != self.model_revision):
            return False
        running = {canonical_flag(k): v for k, v in flags.items()}
        return all(k in running and _same_value(running[k], v) for k, v in self.flags.items())

    def serves(self, model: str | None) -> bool:
        """Whether a server of ``model`` runs this unit's model: any model when the unit names none, else the same
        repository id compared as the Hub compares them (case-insensitively: ``meta-llama/llama-3.1-8b-instruct``
        resolves to ``meta-llama/Llama-3.1-8B-Instruct``). An unknown model (None: in a ``--config`` file not read
        here) is not this unit's: a unit is model + image + flags, and image and flags alone pin nothing."""
        if self.model is None:
            return True
        return model is not None and same_model(model, self.model)


def same_model(a: str, b: str) -> bool:
    """Two model ids naming the same Hub repository (ids are case-insensitive there; a trailing slash is not part of
    a local path's meaning either)."""
    return a.rstrip("/").casefold() == b.rstrip("/").casefold()


def _same_value(a: str, b: str) -> bool:
    if a == b:
        return True
    ia, ib = parse_flag_int(a), parse_flag_int(b)
    if ia is not None and ib is not None:
        return ia == ib
    fa, fb = parse_flag_float(a), parse_flag_float(b)
    return fa is not None and fb is not None and fa == fb
