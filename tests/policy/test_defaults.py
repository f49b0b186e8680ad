"""policies/default.yaml is the documented mirror of DEFAULT_POLICY, and the planner reads the same values.

Why: the defaults used to be written three times (the YAML, the models, budget constants) and could
drift apart silently. The code owns them (policy/defaults.py); these tests keep the YAML honest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from vllm_remedy.policy import DEFAULT_POLICY, FlagRules, Policy, load_policy
from vllm_remedy.policy.files import read_mapping
from vllm_remedy.remedies.budget.limits import limits
from vllm_remedy.vllm import catalog

DEFAULT_YAML = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"
PROSE = {"description"}  # documentation text, not a default anyone reads


@pytest.mark.parametrize("field", sorted(set(Policy.model_fields) - PROSE))
def test_default_yaml_equals_default_policy(field: str) -> None:
    loaded = load_policy(DEFAULT_YAML)
    assert getattr(loaded, field) == getattr(DEFAULT_POLICY, field), (
        f"policies/default.yaml and policy/defaults.py disagree on {field}; change the code, then the YAML")


def test_default_policy_is_model_defaults_plus_baseline_flags() -> None:
    """Nothing but the flag bounds is stated twice: every other default is a model field default."""
    for field in set(Policy.model_fields) - {"flags"}:
        assert getattr(DEFAULT_POLICY, field) == getattr(Policy(), field), field
    assert Policy().flags == FlagRules()


def _missing_keys(model: type[BaseModel], data: Any, where: str) -> list[str]:
    """Keys of ``model`` (and of its defaulted sub-sections) that ``data`` does not spell out."""
    out = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        if not isinstance(data, dict) or key not in data:
            out.append(f"{where}{key}")
            continue
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and sub is not FlagRules:
            out += _missing_keys(sub, data[key], f"{where}{key}.")
    return out


def test_default_yaml_documents_every_key() -> None:
    """A new policy key must appear in default.yaml (with its comment), not only in the code.

    ``flags`` is exempt below the top level: an absent flag means "unbounded", which is the default.
    """
    assert _missing_keys(Policy, read_mapping(DEFAULT_YAML), "") == []


def test_planner_without_policy_is_the_default_policy() -> None:
    """No policy plans exactly as the shipped default does, except that fp8 is refused for want of a policy."""
    gpu = catalog.gpu("NVIDIA-L40S")
    bare, shipped = limits(None, gpu, None, None), limits(DEFAULT_POLICY, gpu, None, None)
    assert (bare.util_min, bare.util_max, bare.tp_min, bare.tp_max) == (0.5, 0.95, 1, 8)
    assert bare.fp8_allowed is shipped.fp8_allowed is False
    assert {**vars(bare), "fp8_why_not": None} == {**vars(shipped), "fp8_why_not": None}
