"""Silence is explained: on the seed's healthy Deployment every operation of every deploy either changes
something or says why not (``[host] noop: …``), once, in ``--dry`` and ``-y`` runs alike — and shows no diff,
since nothing changes (``-y`` prints the diffs it applies: here there are none)."""

from __future__ import annotations

import pytest

from fixtures import pyinfra_run
from fixtures.dry_run import diffs
from fixtures.pyinfra_run import ROOT, Rehearsal, detected_changes
from fixtures.restore_world import HOST, LOCAL, host_out

rehearsal = pyinfra_run.rehearsal

#: deploy → the noop line each of its operations prints on the healthy seed (revision 14, L40S, 16384).
QUIET = {
    "deploys/restore.py": ["noop: no temporary toggle has expired",
                           "noop: no crash to record",
                           "noop: nothing to restore: revision 14: no pod is crash-looping",
                           "noop: no load to shed: revision 14: no pod is crash-looping",
                           "noop: no budget hand-over: revision 14: no pod is crash-looping",
                           "noop: deployment llm/llama-8b is rolled out",
                           f"noop: no traffic to shift back: policy {ROOT / 'policies' / 'llama-8b.yaml'} names no "
                           "fallback route"],
    "deploys/pin_gpu.py": ["noop: no temporary toggle has expired",
                           "noop: no crash to record",
                           "noop: deployment llm/llama-8b is already pinned to nvidia.com/gpu.product=NVIDIA-L40S "
                           "with 1 GPU(s) per pod",
                           "noop: deployment llm/llama-8b is rolled out"],
    "deploys/budget.py": ["noop: no crash to record",
                          "noop: no temporary toggle has expired",
                          "noop: deployment llm/llama-8b is already pinned to nvidia.com/gpu.product=NVIDIA-L40S "
                          "with 1 GPU(s) per pod",
                          "noop: deployment llm/llama-8b fits on NVIDIA-L40S with headroom and an explicit "
                          "--max-model-len (prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens, maximum "
                          "concurrency 12.08x at max-model-len 16384)",
                          "noop: deployment llm/llama-8b is rolled out"],
    "deploys/load_guard.py": ["noop: no temporary toggle has expired",
                              "noop: no crash to record",
                              "noop: no cap to lower on deployment llm/llama-8b: --max-num-batched-tokens: 2048 in "
                              "effect is already <= 4096",
                              "noop: deployment llm/llama-8b is rolled out"],
    "deploys/enforce_eager.py": ["noop: no temporary toggle has expired",
                                 "noop: no crash to record",
                                 "noop: --enforce-eager is off on deployment llm/llama-8b",
                                 "noop: deployment llm/llama-8b is rolled out"],
}


@pytest.mark.parametrize("mode", ["--dry", "-y"])
def test_every_operation_of_a_quiet_deploy_says_why(rehearsal: Rehearsal, mode: str) -> None:
    for deploy, expected in QUIET.items():
        extra = ("--data", "enforce_eager=false") if deploy.endswith("enforce_eager.py") else ()
        got = rehearsal.pyinfra(LOCAL, str(ROOT / deploy), mode, *extra)
        assert got.returncode == 0, got.stderr
        said = [line for line in host_out(got.stderr) if line.startswith("noop: ")]
        assert said == expected, (deploy, said)
        assert diffs(got.stderr) == [], got.stderr
        if mode == "--dry":
            assert all(cells[0] == "-" for cells in detected_changes(got.stderr).values()), got.stderr
    assert HOST  # the host the lines above were read for
