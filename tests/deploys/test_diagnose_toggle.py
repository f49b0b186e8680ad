"""diagnose names a timed ``--enforce-eager`` toggle, and says when it expired, through the real pyinfra CLI.

README says any later run of any deploy reverts an expired toggle, but diagnose never changes the Deployment: after
expiry it showed only ``--enforce-eager: (absent) → true`` in its diff, with no word that this was our timed toggle,
expired and still costing throughput. It now says until when the toggle runs, or that it expired and what reverts
it — and still writes nothing to the Deployment."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    DIAGNOSE,
    FAST_POLL,
    LOCAL,
    deployment,
    fast_forward,
    host_out,
    quiet,
    wait_until,
)
from vllm_remedy.kube.annotations import parse_rfc3339

rehearsal = pyinfra_run.rehearsal

EXPIRES = "vllm-remedy.io/enforce-eager-expires"


def test_diagnose_says_until_when_a_toggle_runs_and_that_it_expired(rehearsal: Rehearsal) -> None:
    on = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=2h", timeout=300)
    assert on.returncode == 0, on.stderr
    expires = deployment(rehearsal)["metadata"]["annotations"][EXPIRES]
    running = host_out(rehearsal.pyinfra(LOCAL, DIAGNOSE, "--dry", timeout=300).stderr)
    assert f"timed toggle --enforce-eager until {expires}" in running, running

    clock = rehearsal.cluster.clock
    with fast_forward(clock):
        wait_until(lambda: clock.now() > parse_rfc3339(expires) + 60, 60, "the toggle's expiry", FAST_POLL)
    before = quiet(rehearsal)
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "-y", timeout=300)
    said = host_out(got.stderr)
    assert got.returncode == 0, got.stderr
    line = f"timed toggle --enforce-eager expired at {expires}; `vllm-remedy expire` or any writing deploy reverts it"
    assert line in said, said
    assert said.index("--enforce-eager: (absent) → true") < said.index(line) < said.index("step 3 — GPUs:"), said
    after = deployment(rehearsal)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # diagnose reverts nothing
    assert after["metadata"]["annotations"][EXPIRES] == expires
