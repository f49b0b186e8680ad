"""drift on a rehearsal Deployment whose --max-model-len the release's parser refuses (``16Ki``; the seed runs
v0.8.5): drift, and the fix deploys/budget.py would make is the literal it means, not a refused fix (exit 3) for a
one-token fix (review 3, M8c)."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.drift_world import MODEL, as_json, inventory, policy, set_args
from fixtures.pyinfra_run import Rehearsal

rehearsal = pyinfra_run.rehearsal
FIX = "Smallest change that restores headroom"


def test_a_refused_spelling_is_drift_whose_fix_writes_the_literal(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    set_args(rehearsal, [MODEL, "--max-model-len", "16Ki", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"])
    got = cli("drift", "-i", inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path)), "-o", "json")
    doc = as_json(got)
    assert got.returncode == 1, (got.stdout, got.stderr)
    host = doc["hosts"][0]
    assert (host["status"], host["fix"]["refused"]) == ("Drifted", None), host
    ops = {op["operation"]: op for op in host["fix"]["operations"]}
    budget = ops[FIX]
    assert budget["changes"] and budget["refused"] is None, budget
    assert "-    - 16Ki" in budget["lines"] and "+    - '16384'" in budget["lines"], budget["lines"]
    checks = {c["check"]: c for c in host["checks"]}
    assert checks["prediction"]["status"] == "drift" and checks["prediction"]["detail"].startswith(
        "predicted to fail: vLLM refuses the start at argument parsing (exit 2): max-model-len: vLLM 0.8.5 refuses "
        "'16Ki'"), checks["prediction"]
    assert checks["max-model-len"]["status"] == "drift", checks["max-model-len"]  # not "ok" as written (review 4, M4)
    human = cli("drift", "-i", inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))).stdout.splitlines()
    assert not any("ok max-model-len" in line for line in human), human
    # the rehearsal pod refused it as vLLM does (exit 2), and the crash loop's log is classified so
    assert any("(last exit 2, Error); startup log: argument_refused" in line for line in human), human
