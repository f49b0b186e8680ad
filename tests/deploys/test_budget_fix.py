"""deploys/budget.py runs exactly operations.budget.FIX, the list `vllm-remedy drift` plans as its fix (real
pyinfra CLI, rehearsal cluster)."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, LOCAL
from fixtures.pyinfra_run import Rehearsal

rehearsal = pyinfra_run.rehearsal


def test_drift_plans_exactly_the_operations_the_budget_deploy_runs(rehearsal: Rehearsal) -> None:
    """One list (operations.budget.FIX, what drift.runner.fix_operations returns) drives both: the operations
    pyinfra starts for deploys/budget.py are the evidence record (which drift's read-only account never writes),
    that list, in order, then the wait - a step added to the deploy's fix is a step drift plans. (The runner is
    not imported here: it needs gevent's monkey-patching first.)"""
    from vllm_remedy.operations.budget import FIX

    got = rehearsal.pyinfra(LOCAL, BUDGET, "-y")  # a healthy seed: every operation starts and changes nothing
    assert got.returncode == 0, got.stderr
    started = [line.split("Starting operation:", 1)[1].strip() for line in got.stderr.splitlines()
               if "Starting operation:" in line]
    assert started == ["Record crash-looping revisions on their ReplicaSets",
                       *[label for label, _op, _kwargs in FIX], "Wait until the new pods are Ready"]
