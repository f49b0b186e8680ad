"""The gateway fallback is temporary (pure): how much the route sends it, when the primary may take the traffic
back, how the route gets its rules back, and what confirm says about the route and the gateway error rate."""

from __future__ import annotations

import json
import math
from typing import Any

from vllm_remedy.kube.annotations import canonical_json, rfc3339
from vllm_remedy.policy import Fallback, GatewayErrorRate, Policy
from vllm_remedy.remedies.confirm import error_rate_check, fallback_check
from vllm_remedy.remedies.fallback import (
    fallback_share,
    primary_stable,
    shift_back_after,
    shifted_back_route,
    shifted_route,
)

NOW = 1_800_000_000.0
RULES = [{"matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}],
          "backendRefs": [{"name": "llama-8b", "port": 8000, "weight": 90}, {"name": "canary", "weight": 10}]},
         {"backendRefs": [{"name": "other"}]}]


def fallback(shift: int = 50, **extra: Any) -> Fallback:
    policy = Policy.from_mapping({"fallback": {"route": {"name": "llm", "namespace": "llm"},
                                               "primary": {"name": "llama-8b"}, "fallback": {"name": "hosted"},
                                               "shift_percent": shift, **extra}})
    assert policy.fallback is not None
    return policy.fallback


def route(rules: list[dict[str, Any]], **notes: str) -> dict[str, Any]:
    return {"metadata": {"name": "llm", "namespace": "llm", "annotations": dict(notes)},
            "spec": {"parentRefs": [{"name": "gw"}], "rules": json.loads(json.dumps(rules))}}


def test_share_counts_weights_as_the_gateway_api_does() -> None:
    fb = fallback()
    assert fallback_share(route(RULES), fb) == 0
    assert fallback_share(route([{"backendRefs": [{"name": "llama-8b"}, {"name": "hosted"}]}]), fb) == 50  # 1 and 1
    assert fallback_share(route([{"backendRefs": [{"name": "llama-8b", "weight": 0}, {"name": "hosted"}]}]), fb) == 100
    assert fallback_share(route([{"backendRefs": [{"name": "other"}, {"name": "hosted"}]}]), fb) is None
    assert fallback_share(shifted_route(route(RULES), fb), fb) == 45  # 50 / (50 + 10 + 50): the canary keeps 10


def test_shifting_back_restores_the_recorded_rules_exactly() -> None:
    fb = fallback(100)
    shifted = shifted_route(route(RULES), fb)
    back, how = shifted_back_route(shifted, fb, canonical_json(RULES))
    assert back["spec"]["rules"] == RULES and how == "the rules as they were before the shift"
    assert back["spec"]["parentRefs"] == [{"name": "gw"}]


def test_a_route_edited_since_the_shift_gets_only_its_weights_back() -> None:
    fb = fallback(100)
    shifted = shifted_route(route(RULES), fb)
    shifted["spec"]["rules"][0]["matches"][0]["path"]["value"] = "/v2"  # someone's edit since: it stays
    back, how = shifted_back_route(shifted, fb, canonical_json(RULES))
    assert how == "weights only (primary 100, fallback 0): the route was edited after the shift"
    assert back["spec"]["rules"][0] == {"matches": [{"path": {"type": "PathPrefix", "value": "/v2"}}],
                                        "backendRefs": [{"name": "llama-8b", "port": 8000, "weight": 100},
                                                        {"name": "canary", "weight": 10},
                                                        {"name": "hosted", "weight": 0}]}
    assert fallback_share(back, fb) == 0
    assert shifted_back_route(shifted, fb, None)[1] == ("weights only (primary 100, fallback 0): no record of the "
                                                        "rules before the shift")
    assert shifted_back_route(shifted, fb, "{not json")[1].startswith(
        "weights only (primary 100, fallback 0): the record of the rules before the shift is unreadable (")


def pod(name: str, ready_ago: float | None, *, new: bool = True, crash: bool = False) -> dict[str, Any]:
    return {"name": name, "new": new, "deleting": False, "ready": ready_ago is not None,
            "ready_since": rfc3339(NOW - ready_ago) if ready_ago is not None else None,
            "containers": [{"name": "vllm", "crash_looping": crash}]}


def test_the_primary_takes_the_traffic_back_only_when_every_pod_is_stable() -> None:
    def said(*pods: dict[str, Any]) -> tuple[bool, str, float | None]:
        got = primary_stable({"new_revision": 16, "pods": list(pods)}, NOW, 1800)
        return got.ok, got.reason, got.at

    assert said(pod("a", 3600), pod("b", 1800)) == (True, "2 pod(s) of revision 16 Ready for at least 30m", None)
    assert said(pod("a", 3600), pod("b", 600)) == (False, "pod(s) of revision 16 Ready for 10m of the required 30m",
                                                   NOW + 1200)
    assert said(pod("a", 3600), pod("b", None)) == (False, "pod b is not Ready", None)
    assert said(pod("a", 3600), pod("b", 3600, crash=True)) == (False, "pod b is crash-looping", None)
    assert said(pod("a", 3600), pod("old", 3600, new=False)) == (False, "the rollout is not over (1 old pod(s) "
                                                                 "running)", None)
    assert said() == (False, "no pod of revision 16 is running", None)


def test_shift_back_after_defaults_to_confirms_stable_for() -> None:
    base = {"route": {"name": "llm", "namespace": "llm"}, "primary": {"name": "a"}, "fallback": {"name": "b"}}
    assert shift_back_after(Policy.from_mapping({"fallback": base})) == 1800
    assert shift_back_after(Policy.from_mapping({"fallback": {**base, "shift_back_after": "2h"},
                                                 "confirm": {"stable_for": "10m"}})) == 7200
    assert shift_back_after(Policy.from_mapping({"confirm": {"stable_for": "10m"}})) == 600


def test_confirm_refuses_while_the_fallback_serves() -> None:
    fb = fallback()
    assert fallback_check(route(RULES), fb, 1800) == (True, "HTTPRoute llm/llm sends no traffic to the fallback hosted")
    assert fallback_check(shifted_route(route(RULES), fb), fb, 1800) == (
        False, "HTTPRoute llm/llm sends 45% of its traffic to the fallback hosted: the fallback is temporary — "
               "deploys/restore.py shifts it back once the primary has been Ready for 30m; confirm after that")
    assert fallback_check(None, fb, 1800, "HTTP 404") == (False, "HTTPRoute llm/llm: cannot read it (HTTP 404)")


def test_the_error_rate_verdict_judges_every_number_and_fails_without_one() -> None:
    rule = GatewayErrorRate.model_validate({"prometheus": "http://prom:9090/", "query": "q", "max": 0.01})
    limit = "(limit 0.01, query at http://prom:9090)"
    assert error_rate_check(rule, [("{}", 0.004)]) == (True, f"gateway error rate 0.004 {limit}")
    assert error_rate_check(rule, [('{route="a"}', 0.004), ('{route="b"}', 0.02), ('{route="c"}', math.nan)]) == (
        False, f'gateway error rate 0.02 in {{route="b"}} (worst of 3 series) {limit}')
    assert error_rate_check(rule, [("{}", 0.01)])[0] is True  # at the limit is within it
    assert error_rate_check(rule, [("{}", math.inf)])[0] is False  # errors and no successes
    # -Inf or a negative number is a broken query, never a healthy gateway (a review found -Inf confirmed)
    assert error_rate_check(rule, [("{}", -math.inf)]) == (
        False, f"gateway error rate -inf in {{}} is not a rate; check the query {limit}")
    assert error_rate_check(rule, [("{}", -0.5)])[0] is False
    assert not error_rate_check(rule, [])[0] and not error_rate_check(rule, [("{}", math.nan)])[0]
    assert error_rate_check(rule, None, "Prometheus at http://prom:9090 is unreachable (timed out)") == (
        False, f"gateway error rate unknown: Prometheus at http://prom:9090 is unreachable (timed out) {limit}")
