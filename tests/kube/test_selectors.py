"""Label selector strings read back into LabelSelectors: a list read once per namespace is filtered locally with
the API server's rules, so every form kubectl and the verbs send must mean the same thing here."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.kube.selectors import matches, parse_selector, selector_string

SELECTOR = {"matchLabels": {"app": "llama-8b", "tier": "gpu"},
            "matchExpressions": [{"key": "track", "operator": "In", "values": ["stable", "canary"]},
                                 {"key": "zone", "operator": "NotIn", "values": ["eu-1"]},
                                 {"key": "team", "operator": "Exists"},
                                 {"key": "paused", "operator": "DoesNotExist"}]}
LABELS = [{}, {"app": "llama-8b"}, {"app": "llama-8b", "tier": "gpu", "track": "stable", "team": "a"},
          {"app": "llama-8b", "tier": "gpu", "track": "canary", "team": "a", "zone": "eu-1"},
          {"app": "llama-8b", "tier": "gpu", "track": "beta", "team": "a"},
          {"app": "llama-8b", "tier": "gpu", "track": "stable", "team": "a", "paused": "1"},
          {"app": "llama-8b-canary", "tier": "gpu", "track": "stable", "team": "a"}]


@pytest.mark.parametrize("labels", LABELS)
def test_a_rendered_selector_reads_back_to_the_same_matches(labels: dict[str, str]) -> None:
    assert matches(parse_selector(selector_string(SELECTOR)), labels) == matches(SELECTOR, labels)


@pytest.mark.parametrize(("text", "labels", "expected"), [
    ("app=a", {"app": "a"}, True), ("app==a", {"app": "a"}, True), ("app=a", {"app": "b"}, False),
    ("app!=a", {}, True), ("app!=a", {"app": "a"}, False), ("", {"x": "y"}, True),
    ("app in (a, b),!gone", {"app": "b"}, True), ("app in (a, b),!gone", {"app": "b", "gone": ""}, False)])
def test_the_other_forms_the_api_server_accepts(text: str, labels: dict[str, str], expected: bool) -> None:
    assert matches(parse_selector(text), labels) is expected


def test_an_unreadable_selector_is_one_error_line() -> None:
    with pytest.raises(UserError, match="cannot read 'app in a'"):
        parse_selector("app in a")
