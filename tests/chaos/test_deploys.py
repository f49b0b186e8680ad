"""Every deploy with ``-y`` under a seeded fault plan (lost and doubled writes, resets, delays, a colleague's
concurrent edit): the invariants of ``fixtures.chaos_world`` hold on the cluster after each run.

A seeded subset for CI; ``bench/chaos_soak.py`` runs the same thing a thousand times.
"""

from __future__ import annotations

import pytest

from fixtures import pyinfra_run
from fixtures.chaos_world import SCENARIOS, run_once
from fixtures.pyinfra_run import Rehearsal

rehearsal = pyinfra_run.rehearsal
SEEDS = (11, 12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_invariants_hold_under_faults(rehearsal: Rehearsal, name: str, seed: int) -> None:
    out = run_once(rehearsal, name, seed)
    assert out.checks >= 5
    assert out.violations == [], out
