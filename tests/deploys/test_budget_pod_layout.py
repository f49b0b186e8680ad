"""deploys/budget.py on a pod whose GPUs cannot hold its engine. vLLM stops before any memory is sized ("World size
(2) is larger than the number of available GPUs (1)" for ``--tensor-parallel-size 2`` on ``limits nvidia.com/gpu:
1``; "No CUDA GPUs are available" for the second of two data-parallel engines), so no budget rung is a fix. The
budget's planner split the model over ranks the pod lacks and said the pod "fits with headroom" (no change), where the
pin step did not refuse first: a policy naming no GPU product (TP 2), or DP 2 (the pin only compares TP with the
limit). Now the budget refuses with one line naming the host and the shortfall, as check and plan do, and writes
nothing — the same under ``--dry``, ``-y`` and the prompt. Through the real pyinfra CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS, LOCAL, deployment, with_args
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import HOST, host_out, vllm_runtime

rehearsal = pyinfra_run.rehearsal
MODES = pytest.mark.parametrize("mode", [("--dry",), ("-y",), ()], ids=["dry", "yes", "prompt"])
WHERE = "refused: deployment llm/llama-8b: predicted to fail: "


def _unpinned_policy(tmp: Path) -> str:
    """policies/llama-8b.yaml naming no GPU product: the pin step has nothing to pin, the template's L40S is planned."""
    policy = tmp / "no-products.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\ngpu: {{products: []}}\n")
    inventory = tmp / "inventory.py"
    inventory.write_text(f"hosts = {[(HOST, {'policy': str(policy)})]!r}\n")
    return str(inventory)


def _refused(rehearsal: Rehearsal, inventory: str, args: list[str], mode: tuple[str, ...], said: str) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(args), change_cause="an engine wider than the pod's GPUs")
    before = deployment(rehearsal)["metadata"]["generation"]
    got = rehearsal.pyinfra(inventory, BUDGET, *mode, stdin="\n")
    lines = host_out(got.stderr)
    assert got.returncode == 1, got.stderr
    said_lines = [line for line in lines if line.startswith(WHERE + said)]
    # once; the prompt's run shows it in the plan, then fails the host at execute with the same line (``refuse``)
    assert len(said_lines) == (2 if not mode else 1) and len(set(said_lines)) == 1, "\n".join(lines)
    assert not any("with headroom" in line for line in lines), "\n".join(lines)
    assert deployment(rehearsal)["metadata"]["generation"] == before


@MODES
def test_tp_2_on_one_gpu_is_refused_not_called_a_fit(rehearsal: Rehearsal, tmp_path: Path,
                                                     mode: tuple[str, ...]) -> None:
    _refused(rehearsal, _unpinned_policy(tmp_path), [*GOOD_ARGS, "--tensor-parallel-size", "2"], mode,
             "world size 2 (TP 2 × PP 1) is larger than the 1 GPU(s) of the pod (nvidia.com/gpu: 1)")


@MODES
def test_two_data_parallel_engines_on_one_gpu_are_refused(rehearsal: Rehearsal, mode: tuple[str, ...]) -> None:
    _refused(rehearsal, LOCAL, [*GOOD_ARGS, "--data-parallel-size", "2"], mode,
             "2 data-parallel engines × world size 1 (TP 1 × PP 1) need 2 GPUs, the pod has 1")


def test_a_refusal_vllm_runs_before_the_world_size_is_named_first(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """A --max-model-len above the model's 131,072 positions: the model config refuses it before the world size on
    every release, so the pod's log ends with it; the world size is what refuses next."""
    args = [*GOOD_ARGS, "--tensor-parallel-size", "2"]
    args[args.index("--max-model-len") + 1] = "200000"
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(args), change_cause="a length above the model's, wider than the pod's GPUs")
    before = deployment(rehearsal)["metadata"]["generation"]
    got = rehearsal.pyinfra(_unpinned_policy(tmp_path), BUDGET, "--dry")
    lines = [line for line in host_out(got.stderr) if line.startswith("refused: deployment llm/llama-8b: ")]
    assert got.returncode == 1 and len(lines) == 1, got.stderr
    head, _, then = lines[0].partition("; then, that fixed: ")
    assert "--max-model-len 200,000 is above the model's 131,072" in head and "world size" not in head, lines[0]
    assert then.startswith("world size 2 (TP 2 × PP 1) is larger than the 1 GPU(s) of the pod"), lines[0]
    assert deployment(rehearsal)["metadata"]["generation"] == before
