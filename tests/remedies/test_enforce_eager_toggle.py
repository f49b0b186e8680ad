"""Timed toggles, pure: switch on records expiry and the exact argv, revert restores it, ttl within policy."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixtures.pod_templates import ARGS, KEYS, MODEL, template
from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import read_toggles
from vllm_remedy.policy import Policy
from vllm_remedy.remedies import enforce_eager as toggle


def test_switch_on_records_expiry_and_exact_argv_and_revert_restores_it() -> None:
    before = template()
    on, notes = toggle.switch_on(before, KEYS, 1_800_000_000, 3600)
    assert on["spec"]["containers"][0]["args"] == [*ARGS, "--enforce-eager"]
    prior = {"args": ARGS, "command": ["vllm", "serve"], "container": "vllm"}
    assert notes == {"vllm-remedy.io/enforce-eager-expires": "2027-01-15T09:00:00Z",
                     "vllm-remedy.io/enforce-eager-prior": json.dumps(prior, sort_keys=True, separators=(",", ":"))}
    (record,) = read_toggles(KEYS, notes)
    assert toggle.expired(KEYS, notes, 1_800_003_599) == []
    assert toggle.expired(KEYS, notes, 1_800_003_600) == [record]
    undo = toggle.revert(on, KEYS, record)
    assert undo.exact and undo.template == before
    assert undo.annotations == {"vllm-remedy.io/enforce-eager-expires": None,
                                "vllm-remedy.io/enforce-eager-prior": None,
                                "vllm-remedy.io/enforce-eager-digest": None}


def test_revert_keeps_flags_changed_meanwhile_and_drops_only_eager() -> None:
    on, notes = toggle.switch_on(template(), KEYS, 0, 60)
    (record,) = read_toggles(KEYS, notes)
    edited = copy.deepcopy(on)
    edited["spec"]["containers"][0]["args"][2] = "8192"
    undo = toggle.revert(edited, KEYS, record)
    assert not undo.exact
    assert undo.template["spec"]["containers"][0]["args"] == [MODEL, "--max-model-len", "8192",
                                                              "--gpu-memory-utilization", "0.90"]
    assert undo.message.startswith("remove --enforce-eager only: it differs from the running container in "
                                   "--max-model-len too (changed since the toggle was set")


@pytest.mark.parametrize(("ttl", "seconds"), [(None, 7200), ("30m", 1800), ("2h", 7200), (90, 90)])
def test_ttl_defaults_to_and_is_bounded_by_the_policy(ttl: Any, seconds: int) -> None:
    assert toggle.ttl_seconds(ttl, Policy()) == seconds


@pytest.mark.parametrize(("ttl", "message"), [
    ("3h", "ttl: 3h exceeds the policy's enforce_eager.max_duration 2h (<mapping>)"),
    ("soon", 'ttl: not a duration: \'soon\' (expected e.g. "30m", "2h", "1h30m")'),
])
def test_bad_ttls_are_one_line_errors(ttl: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        toggle.ttl_seconds(ttl, Policy())
    assert str(err.value) == message


@given(st.lists(st.sampled_from(["--max-num-seqs", "32", "--dtype", "auto", "--port", "8001"]), max_size=6))
def test_any_argv_round_trips_through_the_toggle(extra: list[str]) -> None:
    before = template([*ARGS, *extra])
    on, notes = toggle.switch_on(before, KEYS, 0, 60)
    (record,) = read_toggles(KEYS, notes)
    assert toggle.revert(on, KEYS, record).template == before


