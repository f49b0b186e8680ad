"""The Deployment-level fields confirm records with a mark (remedies/deployment_fields.py): read back, validated."""

from __future__ import annotations

import json

from fixtures.pod_templates import KEYS
from vllm_remedy.remedies.deployment_fields import field_problems, recorded_fields


def test_recorded_fields_keep_only_the_deployment_fields() -> None:
    notes = {KEYS.deployment_fields: json.dumps({"strategy": {"type": "Recreate"}, "replicas": 9})}
    assert recorded_fields(KEYS, notes) == {"strategy": {"type": "Recreate"}}
    assert recorded_fields(KEYS, {KEYS.deployment_fields: "{"}) == {}


def test_recorded_deployment_fields_are_validated_before_they_are_written_back() -> None:
    """A review forged minReadySeconds 86400 and progressDeadlineSeconds 1 and restore wrote them: every later
    rollout then "exceeded its progress deadline" while serving."""
    assert (
        field_problems({"strategy": {"type": "Recreate"}, "minReadySeconds": 30, "progressDeadlineSeconds": 600}) == []
    )
    assert (
        field_problems(
            {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}}
        )
        == []
    )
    forged = field_problems(
        {
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "100%", "maxUnavailable": "100%"}},
            "minReadySeconds": 86400,
            "progressDeadlineSeconds": 1,
        }
    )
    assert forged == [
        "minReadySeconds 86400 is above 3600",
        "progressDeadlineSeconds 1 is below 60",
        "progressDeadlineSeconds 1 is not above minReadySeconds 86400",
    ]
    assert field_problems({"strategy": {"type": "Banana"}}) == [
        "strategy.type 'Banana' is neither RollingUpdate nor Recreate"
    ]
    assert field_problems({"minReadySeconds": -3}) == ["minReadySeconds -3 is not a non-negative integer"]
    assert field_problems(
        {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}}
    )
