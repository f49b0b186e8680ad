"""drift on a rehearsal Deployment that repeats --max-model-len, the first value one v0.8.5 refuses: vLLM's argparse
types every occurrence, so the start is refused (exit 2) and the fix writes the flag once with the kept value
(third review H2)."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.drift_world import MODEL, as_json, inventory, policy, set_args
from fixtures.pyinfra_run import Rehearsal

rehearsal = pyinfra_run.rehearsal
FIX = "Smallest change that restores headroom"


def test_a_refused_overridden_value_is_drift_whose_fix_writes_the_flag_once(rehearsal: Rehearsal, tmp_path: Path,
                                                                             cli) -> None:
    set_args(rehearsal, [MODEL, "--max-model-len", "16Ki", "--max-model-len", "8192", "--gpu-memory-utilization",
                         "0.90", "--max-num-seqs", "64"])
    doc = as_json(cli("drift", "-i", inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path)), "-o", "json"))
    host = doc["hosts"][0]
    checks = {c["check"]: c for c in host["checks"]}
    assert checks["prediction"]["status"] == "drift" and "an earlier --max-model-len 16Ki, overridden by a later " \
        "one" in checks["prediction"]["detail"], checks["prediction"]
    budget = {op["operation"]: op for op in host["fix"]["operations"]}[FIX]
    assert budget["changes"] and budget["refused"] is None, budget
    assert "-    - 16Ki" in budget["lines"], budget["lines"]
