"""A misspelt host-data key fails its host at connect, through the real pyinfra CLI on the rehearsal cluster.

Host data is a plain dict: ``polcy`` in an inventory was never read, so budget ran under the built-in defaults
and planned ``--max-model-len 16384 → 3584`` for a service whose policy asks for a GPU pin; ``--data
eager_tl=10m`` turned ``--enforce-eager`` on for the policy's 2 hours. Every key the deploys read is now
registered (``connectors.host_data``): an unknown one is one line naming it, exit 1, nothing changed; pyinfra's own
keys pass. A host with no ``policy`` says in every run that the built-in defaults govern it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, EAGER, PIN
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import HOST, L4_TOLERATION, LOCAL, deployment, host_out, quiet, wait_until, write_inventory

rehearsal = pyinfra_run.rehearsal

POLICY = str(ROOT / "policies" / "llama-8b.yaml")


def _on_l4(dep: dict) -> None:
    """The runbook's unit moved to the 24 GB L4 pool: it starts, below the policy's peak (1.97x of 8)."""
    spec = dep["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L4"}
    spec["tolerations"] = [L4_TOLERATION]


def _rolled_out(dep: dict) -> bool:
    status, want = dep.get("status") or {}, dep["spec"].get("replicas", 1)
    return (status.get("observedGeneration") == dep["metadata"]["generation"] and status.get("replicas") == want
            and status.get("updatedReplicas") == want and status.get("readyReplicas") == want)


def test_a_misspelt_policy_key_fails_the_host_and_budget_writes_nothing(rehearsal: Rehearsal,
                                                                         tmp_path: Path) -> None:
    rehearsal.change(_on_l4)
    wait_until(lambda: _rolled_out(deployment(rehearsal)), timeout=120, what="the L4 revision rolled out")
    before = quiet(rehearsal)
    typo = write_inventory(tmp_path, polcy=POLICY)
    line = "unknown data key 'polcy' in the inventory (did you mean 'policy'?); nothing was changed"
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(typo, BUDGET, flag, timeout=300)
        said = host_out(got.stderr)
        assert (got.returncode, said) == (1, [line]), got.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_misspelt_data_key_fails_the_host_and_no_toggle_is_written(rehearsal: Rehearsal) -> None:
    before = quiet(rehearsal)
    for deploy, data, line in (
            (EAGER, "eager_tl=10m", "unknown data key 'eager_tl' in --data (did you mean 'eager_ttl'?); nothing was "
                                    "changed"),
            (BUDGET, "eager_ttl=10m", "data key 'eager_ttl' in --data is not read by deploys/budget.py (only by "
                                      "deploys/enforce_eager.py); nothing was changed")):
        got = rehearsal.pyinfra(LOCAL, deploy, "-y", "--data", data, timeout=300)
        assert (got.returncode, host_out(got.stderr)) == (1, [line]), got.stderr
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_pyinfra_own_data_keys_pass(rehearsal: Rehearsal) -> None:
    """``--user`` is pyinfra's ``ssh_user``, ``_retries`` a global argument as data: not ours to refuse."""
    got = rehearsal.pyinfra(LOCAL, EAGER, "--dry", "--user", "ops", "--data", "_retries=0", "--data",
                            "eager_ttl=10m", timeout=300)
    assert got.returncode == 0, got.stderr
    assert any(line.startswith("turn on --enforce-eager on deployment llm/llama-8b for 10m ")
               for line in host_out(got.stderr)), got.stderr


def test_a_host_without_policy_says_the_built_in_default_governs_it(rehearsal: Rehearsal, tmp_path: Path) -> None:
    got = rehearsal.pyinfra(write_inventory(tmp_path), PIN, "--dry", timeout=300)
    said = host_out(got.stderr)
    assert got.returncode == 0, got.stderr
    assert said[0] == "note: governed by the built-in default policy (no `policy` in host data)", said
    assert ("noop: no GPU product to pin: policy built-in default (no `policy` in host data) names none in "
            "gpu.products") in said, said
    assert not [line for line in said if "<mapping>" in line], said


def test_drift_reports_a_misspelt_key_as_bad_input(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """``vllm-remedy drift`` connects through the same connector: one line naming the key, exit 2 (bad input), not a
    verdict under the built-in defaults."""
    typo = write_inventory(tmp_path, polcy=POLICY)
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "drift", "-i", typo], capture_output=True, text=True,
                         env=rehearsal.env(), cwd=rehearsal.tmp, timeout=180)
    assert got.returncode == 2, got.stdout + got.stderr
    assert got.stderr.strip().splitlines() == [
        f"vllm-remedy: error: {HOST}: unknown data key 'polcy' in the inventory (did you mean 'policy'?); nothing "
        "was changed"], got.stderr
