"""Deployment-level fields a bad rollout changed with the template (issue 11): confirm records them with its
known-good mark, restore puts them back (policy ``restore.deployment_fields: restore``) or only shows them.

The runbook's incident switches ``spec.strategy`` to Recreate with the bad template; a template rollback alone
would leave every later rollout taking the whole endpoint down at once.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import (
    CONFIRM,
    LOCAL,
    RESTORE,
    deployment,
    host_out,
    incident,
    replicaset,
    stable,
    write_inventory,
)
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def confirmed_then_recreated(rehearsal: Rehearsal) -> dict:
    """Revision 14 confirmed by deploys/confirm.py (recording its strategy); then the incident with Recreate."""
    stable(rehearsal)
    got = rehearsal.pyinfra(LOCAL, CONFIRM, "-y")
    assert got.returncode == 0, got.stderr
    good = replicaset(rehearsal, 14)
    recorded = json.loads(good["metadata"]["annotations"]["vllm-remedy.io/deployment-fields"])
    assert recorded["strategy"] == ROLLING and recorded["progressDeadlineSeconds"] == 600
    incident(rehearsal)
    assert deployment(rehearsal)["spec"]["strategy"] == {"type": "Recreate"}
    return good


def test_strategy_recreate_is_put_back_with_the_template(rehearsal: Rehearsal) -> None:
    good = confirmed_then_recreated(rehearsal)
    dry = rehearsal.pyinfra(LOCAL, RESTORE, "--dry")
    shown = host_out(dry.stderr)
    assert ("deployment fields recorded with revision 14's known-good mark, put back (policy "
            "restore.deployment_fields: restore):") in shown, shown
    assert '-  strategy: {"type":"Recreate"}' in shown
    assert '+  strategy: {"rollingUpdate":{"maxSurge":1,"maxUnavailable":0},"type":"RollingUpdate"}' in shown
    assert deployment(rehearsal)["spec"]["strategy"] == {"type": "Recreate"}  # --dry changed nothing
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    assert any("chosen by rule: known-good mark" in line for line in host_out(got.stderr))
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["spec"]["strategy"] == ROLLING
    assert "vllm-remedy.io/deployment-fields" not in after["metadata"]["annotations"]  # a ReplicaSet's record only


def test_policy_show_leaves_the_strategy_and_says_so(rehearsal: Rehearsal, tmp_path: Path) -> None:
    good = confirmed_then_recreated(rehearsal)
    policy = tmp_path / "show.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\nrestore:\n  deployment_fields: show\n")
    got = rehearsal.pyinfra(write_inventory(tmp_path, policy=str(policy)), RESTORE, "-y", "--diff")
    assert got.returncode == 0, got.stderr
    assert ("deployment fields recorded with revision 14's known-good mark differ, shown only (policy "
            "restore.deployment_fields: show):") in host_out(got.stderr)
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert after["spec"]["strategy"] == {"type": "Recreate"}
