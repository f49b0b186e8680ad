"""deploys/enforce_eager.py (the timed --enforce-eager toggle) through the real pyinfra CLI on the rehearsal cluster."""

from __future__ import annotations

import json
import time

from fixtures import pyinfra_run
from fixtures.budget_world import (
    EAGER,
    GOOD_ARGS,
    LOAD_GUARD,
    LOCAL,
    args_of,
    assert_no_changes,
    deployment,
    kv_logged,
    quiet,
    rolled_out,
)
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    RESTORE,
    bad_revision,
    crash_looping,
    host_out,
    replicaset,
    vllm_runtime,
    wait_until,
)
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.remedies.predict import predict_template

rehearsal = pyinfra_run.rehearsal
exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly

EXPIRES, PRIOR = "vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior"
PRIOR_JSON = json.dumps({"args": GOOD_ARGS, "command": ["vllm", "serve"], "container": "vllm"}, sort_keys=True,
                        separators=(",", ":"))


def eager_on(rehearsal: Rehearsal, ttl: str) -> dict:
    vllm_runtime(rehearsal)
    got = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", f"eager_ttl={ttl}")
    assert got.returncode == 0, got.stderr
    return rolled_out(rehearsal)


def test_eager_toggle_records_expiry_and_exact_prior_argv(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    after = eager_on(rehearsal, "2h")
    assert args_of(after) == [*GOOD_ARGS, "--enforce-eager"]
    notes = after["metadata"]["annotations"]
    at = parse_rfc3339(notes["vllm-remedy.io/last-action-at"])
    assert parse_rfc3339(notes[EXPIRES]) == at + 7200
    assert notes[PRIOR] == PRIOR_JSON
    assert notes["vllm-remedy.io/last-action"] == "enforce-eager"
    assert notes["kubernetes.io/change-cause"] == (f"vllm-remedy enforce-eager: --enforce-eager until {notes[EXPIRES]} "
                                                   "(temporary; reverts on the next run after)")
    predicted = predict_template(after["spec"]["template"]).estimate
    assert predicted is not None and predicted.outcome.value == "fits"
    assert set(kv_logged(rehearsal).values()) == {predicted.kv_cache_tokens}

    assert_no_changes(rehearsal, EAGER, 4, "--data", "eager_ttl=2h")  # never extended, never re-applied


def test_an_expired_toggle_is_reverted_by_any_later_deploy(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    on = eager_on(rehearsal, "1m")
    expires = parse_rfc3339(on["metadata"]["annotations"][EXPIRES])
    client = rehearsal.client()
    while client.server_time() < expires:  # the rehearsal clock runs 600x: a cluster minute is 0.1 s
        time.sleep(0.05)
    got = rehearsal.pyinfra(LOCAL, LOAD_GUARD, "-y")  # a different deploy: step 5's
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith("revert expired toggles on deployment llm/llama-8b: enforce-eager: restore the exact "
                               "argv from before --enforce-eager") for line in lines), lines
    after = rolled_out(rehearsal)
    assert after["spec"]["template"]["spec"]["containers"][0]["args"] == GOOD_ARGS
    assert after["spec"]["template"]["spec"]["containers"][0]["command"] == ["vllm", "serve"]
    notes = after["metadata"]["annotations"]
    assert EXPIRES not in notes and PRIOR not in notes
    assert notes["vllm-remedy.io/last-action"] == "expire"
    assert set(kv_logged(rehearsal).values()) == {197840}


def test_running_the_eager_deploy_after_expiry_shows_in_dry_what_it_does(rehearsal: Rehearsal) -> None:
    """--dry and -y agree: the expired toggle comes off (the argv from before it), and eager mode goes on anew on
    that argv with a new expiry — two diffs, the second planned on what the first leaves."""
    on = eager_on(rehearsal, "1m")
    expires = on["metadata"]["annotations"][EXPIRES]
    client = rehearsal.client()
    while client.server_time() < parse_rfc3339(expires):
        time.sleep(0.05)
    dry, got = dry_then_apply(rehearsal, LOCAL, EAGER, "--data", "eager_ttl=30m", expect_diffs=2)
    shown, done = host_out(dry.stderr), host_out(got.stderr)
    assert any(line.startswith("revert expired toggles on deployment llm/llama-8b: enforce-eager") for line in shown)
    again = "turn on --enforce-eager on deployment llm/llama-8b for 30m"
    assert any(line.startswith(again) for line in shown) and any(line.startswith(again) for line in done), shown
    assert got.returncode == 0, got.stderr
    after = rolled_out(rehearsal)
    assert args_of(after) == [*GOOD_ARGS, "--enforce-eager"]
    assert parse_rfc3339(after["metadata"]["annotations"][EXPIRES]) > parse_rfc3339(expires)
    assert after["metadata"]["annotations"][PRIOR] == PRIOR_JSON  # the argv from before any eager mode


def test_a_ttl_above_the_policy_maximum_is_refused(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    before = quiet(rehearsal)
    got = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=3h")
    assert got.returncode == 1, got.stderr
    policy = str(pyinfra_run.ROOT / "policies" / "llama-8b.yaml")
    assert (f"refused: deployment llm/llama-8b: ttl: 3h exceeds the policy's enforce_eager.max_duration 2h ({policy})"
            in host_out(got.stderr)), got.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_dry_shows_the_toggle_and_turning_it_off_restores_the_argv(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    quiet(rehearsal)
    dry, on = dry_then_apply(rehearsal, LOCAL, EAGER, expect_diffs=1)
    assert on.returncode == 0, on.stderr
    shown = host_out(dry.stderr)
    assert "+    - --enforce-eager" in shown
    assert len([line for line in shown if line.startswith("prediction on NVIDIA-L40S: fits")]) == 1, shown
    rolled_out(rehearsal)
    rehearsal.cluster.clock.set_speed(60.0)  # 2h take 2 real minutes: the toggle does not expire under the test
    _dry, off = dry_then_apply(rehearsal, LOCAL, EAGER, "--data", "enforce_eager=false", expect_diffs=1)
    assert off.returncode == 0, off.stderr
    after = rolled_out(rehearsal)
    assert args_of(after) == GOOD_ARGS
    assert EXPIRES not in after["metadata"]["annotations"]
    assert after["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "enforce-eager-off"


def test_a_garbage_expiry_blocks_no_deploy_and_a_rollback_never_brings_it_back(rehearsal: Rehearsal) -> None:
    """Revision 15 carries `enforce-eager-expires: tomorrow` (the controller copies it onto its ReplicaSet); once the
    Deployment's own copy is gone and revision 16 crash-loops, restore rolls back to 15 - without the garbage."""
    vllm_runtime(rehearsal)

    def healthy_with_garbage(dep: dict) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "VLLM_TRY", "value": "1"})
        dep["metadata"]["annotations"][EXPIRES] = "tomorrow"

    rehearsal.change(healthy_with_garbage, change_cause="revision 15")
    rolled_out(rehearsal)
    got = rehearsal.pyinfra(LOCAL, LOAD_GUARD, "--dry")  # any deploy: it warns once and goes on
    assert got.returncode == 0, got.stderr
    warned = [line for line in host_out(got.stderr) if "tomorrow" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: ") and EXPIRES in warned[0], warned

    def bad(dep: dict) -> None:
        bad_revision(dep)
        del dep["metadata"]["annotations"][EXPIRES]

    rehearsal.change(bad, change_cause="revision 16")
    wait_until(lambda: crash_looping(rehearsal), what="revision 16 to crash-loop")
    fifteen = replicaset(rehearsal, 15)
    assert fifteen["metadata"]["annotations"][EXPIRES] == "tomorrow"  # what kubectl's undo would copy back
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    assert any("to revision 15" in line for line in host_out(got.stderr)), got.stderr
    after = deployment(rehearsal)
    assert after["spec"]["template"]["spec"]["containers"][0]["env"][-1] == {"name": "VLLM_TRY", "value": "1"}
    assert EXPIRES not in after["metadata"]["annotations"]


def test_a_garbage_expiry_does_not_block_the_restore(rehearsal: Rehearsal) -> None:
    def bad(dep: dict) -> None:
        bad_revision(dep)
        dep["metadata"]["annotations"][EXPIRES] = "tomorrow"

    vllm_runtime(rehearsal)
    rehearsal.change(bad, change_cause="revision 15")
    wait_until(lambda: crash_looping(rehearsal), what="revision 15 to crash-loop")
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert len([line for line in lines if line.startswith("warning: ") and "tomorrow" in line]) == 1, lines
    assert any("to revision 14" in line for line in lines), lines
    assert args_of(rolled_out(rehearsal)) == GOOD_ARGS


def test_turning_it_off_is_refused_like_any_write_predicted_not_to_start(rehearsal: Rehearsal) -> None:
    """At --gpu-memory-utilization 0.98 the CUDA graphs eager mode saves put the predicted peak over the L40S:
    turning it off is refused (exit 1, one line), nothing is written - as propose refuses any flag write."""
    vllm_runtime(rehearsal)
    tight = [a if a != "0.90" else "0.98" for a in GOOD_ARGS]
    prior = json.dumps({"args": tight, "command": ["vllm", "serve"], "container": "vllm"})

    def tight_and_eager(dep: dict) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = [*tight, "--enforce-eager"]
        dep["metadata"]["annotations"].update({EXPIRES: "2099-01-01T00:00:00Z", PRIOR: prior})

    rehearsal.change(tight_and_eager, change_cause="tight budget, eager on")

    def seen() -> bool:  # the controller has stamped the new revision: only then is "before" the object runs compare
        dep = deployment(rehearsal)
        return (dep.get("status") or {}).get("observedGeneration") == dep["metadata"]["generation"]
    wait_until(seen, 20, "the controller to see the tight, eager revision")
    before = deployment(rehearsal)
    for flags in ("--dry",), ("-y",):  # a refusal fails the host in both: --dry exits 1 as -y does (CI reads it)
        got = rehearsal.pyinfra(LOCAL, EAGER, *flags, "--data", "enforce_eager=false")
        assert got.returncode == 1, got.stderr
        said = "--enforce-eager off on deployment llm/llama-8b: without it predicted " \
               "cudagraph_capture_oom on NVIDIA-L40S (prediction on NVIDIA-L40S: cudagraph_capture_oom"
        assert len([line for line in host_out(got.stderr) if said in line]) == 1, got.stderr
    after = deployment(rehearsal)
    assert (after["spec"], after["metadata"]["annotations"]) == (before["spec"], before["metadata"]["annotations"])


def test_a_launch_script_dash_and_bash_read_differently_is_refused_not_planned(rehearsal: Rehearsal) -> None:
    script = f"exec vllm serve {' '.join(GOOD_ARGS)} --port 8000>>/tmp/vllm.log 2>&1"

    def mutate(dep: dict) -> None:
        c = dep["spec"]["template"]["spec"]["containers"][0]
        c["command"], c["args"] = ["/bin/sh", "-c", script], []
    rehearsal.change(mutate)
    before = deployment(rehearsal)
    got = rehearsal.pyinfra(LOCAL, EAGER, "--dry")
    assert got.returncode == 1, got.stderr  # the host fails at connect: nothing planned, nothing written
    assert "--enforce-eager" not in got.stderr + got.stdout
    assert any("8000>> means an argument then a redirect to dash but a redirect of fd 8000 to bash; put a space "
               "before >>" in line for line in host_out(got.stderr)), got.stderr
    assert deployment(rehearsal)["spec"] == before["spec"]
