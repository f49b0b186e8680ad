"""What each release does with VLLM_USE_V1, as read from its source (``vllm.engine_env``): the engine whose rules size
the start, or why it cannot be predicted."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.engine_env import engine_rules, refuses
from vllm_remedy.vllm.versions import rules_on_device

A10, T4 = (8, 6), (7, 5)


@pytest.mark.parametrize(("version", "card", "value", "engine"), [
    ("0.7.3", A10, "0", "V0"),  # V0 is the default before 0.8
    ("0.8.0", A10, "0", "V0"), ("0.8.3", A10, "0", "V0"), ("0.9.2", A10, " 0 ", "V0"), ("0.10.2", T4, "0", "V0"),
    ("0.8.3", A10, "1", "V1"), ("0.10.2", T4, "1", "V1"),  # 0.10 has no capability fallback
    ("0.11.0", A10, "1", "V1"),
    ("0.11.1", A10, "0", "V1"), ("0.16.0", A10, "0", "V1"), ("0.34.0", A10, "0", "V1"),  # ignored from 0.11.1
    (None, A10, "0", "V1"),  # an unknown version gets the newest release's rules, which ignore it
])
def test_the_engine_each_release_runs(version, card, value, engine):
    r, why = engine_rules(version, card, value)
    assert (r.engine, why) == (engine, None)


def test_v0_is_the_capability_fallbacks_rules():
    assert engine_rules("0.9.2", A10, "0")[0] == rules_on_device("0.9.2", T4)
    assert engine_rules("0.9.2", A10, None)[0] == rules_on_device("0.9.2", A10)


@pytest.mark.parametrize(("version", "card", "value", "said"), [
    ("0.11.0", A10, "0", "vLLM 0.11.0 has no V0 engine"),
    ("0.7.3", A10, "1", "V1 alpha engine"),
    ("0.6.0", A10, "1", "releases before 0.6.5 were not read for it"),
    ("0.9.2", T4, "1", "VLLM_USE_V1=1 is not supported with Compute Capability < 8.0"),
    ("0.8.3", A10, "true", "raises \"ValueError: invalid literal"),
    ("0.8.3", A10, "", "raises \"ValueError: invalid literal"),
])
def test_refused_or_cannot_predict(version, card, value, said):
    """vLLM's refusals (int() refusing the text, 0 without V0, 1 where the oracle falls back) are ``Refusal``s, a
    prediction (config_refused); an engine not modelled or a release not read is "cannot predict"."""
    why = engine_rules(version, card, value)[1]
    assert why is not None and said in why, why
    refused = value != "1" or version == "0.9.2"
    assert refuses(why) is refused and why.startswith("VLLM_USE_V1" if refused else "cannot predict VLLM_USE_V1"), why


def test_an_unreadable_value_matters_only_where_it_is_read():
    assert "cannot be read: from a Secret" in str(engine_rules("0.8.3", A10, None, "from a Secret")[1])
    assert engine_rules("0.12.0", A10, None, "from a Secret")[1] is None
