"""restore never rolls a Deployment back onto a revision serving another model (hostile16 G10), through the real
pyinfra CLI on the rehearsal cluster, at the prompt and with ``-y``.

Revision 15 serves Qwen/Qwen2.5-7B-Instruct with exactly the flags of the policy's known-good unit — a unit whose
``model:`` is Llama-3.1-8B-Instruct and which pins no model revision. Revision 16 serves Llama (another
``--max-num-seqs``), revision 17 is Llama at a utilization that leaves no KV cache: it crash-loops. Before, the pin
compared image, flags and revision only, so restore chose 15 "pinned in policy" and swapped the service to Qwen;
revision 16, the same model, was passed over without a line. Now 15 is skipped saying why, 16 restored, and
``--data revision=15`` (the operator's own choice) is still possible.
"""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.budget_world import with_args
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import (
    HOST,
    RESTORE,
    crash_looping,
    deployment,
    host_out,
    newest_revision,
    replicaset,
    skipped,
    vllm_runtime,
    wait_until,
    write_inventory,
)
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal

UNIT = ["--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
QWEN = ["Qwen/Qwen2.5-7B-Instruct", *UNIT]
LLAMA = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--gpu-memory-utilization", "0.90",
         "--max-num-seqs", "32"]
DYING = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--gpu-memory-utilization", "0.30",
         "--max-num-seqs", "32"]


def _policy(tmp: Path) -> str:
    """The report's policy: one known-good unit naming Llama (in the Hub's lower case: ids are case-insensitive)
    and no model revision."""
    path = tmp / "unit.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'default'}\ntarget:\n  namespaces: [llm]\n  deployments: "
                    "[llama-8b]\ngpu:\n  products: [NVIDIA-L40S]\n  per_pod: 1\nknown_good:\n  - name: llama-unit\n"
                    "    image: vllm/vllm-openai:v0.8.5\n    model: meta-llama/llama-3.1-8b-instruct\n    flags:\n"
                    "      max-model-len: 8192\n      gpu-memory-utilization: 0.90\n      max-num-seqs: 64\n")
    return write_inventory(tmp, HOST, policy=str(path))


def test_a_revision_serving_another_model_is_skipped_never_restored(rehearsal: Rehearsal, tmp_path: Path) -> None:
    vllm_runtime(rehearsal)
    inv = _policy(tmp_path)
    base = newest_revision(rehearsal)
    qwen, llama, dying = base + 1, base + 2, base + 3
    rehearsal.change(with_args(QWEN), change_cause="Qwen with the unit's flags")
    wait_until(lambda: newest_revision(rehearsal) == qwen, 60, "the Qwen revision")
    rehearsal.change(with_args(LLAMA), change_cause="Llama, 32 sequences")
    wait_until(lambda: newest_revision(rehearsal) == llama, 60, "the Llama revision")
    rehearsal.change(with_args(DYING), change_cause="utilization 0.30")
    wait_until(lambda: crash_looping(rehearsal, 1, dying), 120, "the dying revision to crash-loop")
    good = replicaset(rehearsal, llama)

    shown = rehearsal.pyinfra(inv, RESTORE, "--dry")
    lines = host_out(shown.stderr)
    assert shown.returncode == 0, shown.stderr
    assert not any(x.startswith(f"skipped revision {qwen} ") for x in lines), lines  # outranked, never weighed
    assert any(x.startswith(f"roll back deployment llm/llama-8b from revision {dying} to revision {llama} ")
               for x in lines), lines
    assert not any("Qwen/Qwen2.5-7B-Instruct" in x and x.startswith("+") for x in lines), lines

    # the prompt (Enter) writes what --dry showed; and a -y rerun finds nothing to do
    run = rehearsal.pyinfra(inv, RESTORE, stdin="\n")
    assert run.returncode == 0, run.stderr
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])
    again = rehearsal.pyinfra(inv, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    assert templates_equal(deployment(rehearsal)["spec"]["template"], good["spec"]["template"])


def test_the_operator_may_still_name_the_other_models_revision(rehearsal: Rehearsal, tmp_path: Path) -> None:
    vllm_runtime(rehearsal)
    inv = _policy(tmp_path)
    base = newest_revision(rehearsal)
    rehearsal.change(with_args(QWEN), change_cause="Qwen with the unit's flags")
    wait_until(lambda: newest_revision(rehearsal) == base + 1, 60, "the Qwen revision")
    rehearsal.change(with_args(DYING), change_cause="Llama at utilization 0.30")
    wait_until(lambda: crash_looping(rehearsal, 1, base + 2), 120, "the dying revision to crash-loop")
    qwen_rs = replicaset(rehearsal, base + 1)["metadata"]["name"]
    shown = rehearsal.pyinfra(inv, RESTORE, "--dry")  # the newest earlier revision, weighed first: skipped, saying why
    lines = host_out(shown.stderr)
    assert shown.returncode == 0, shown.stderr
    assert skipped(lines, base + 1) == (
        f"skipped revision {base + 1} ({qwen_rs}): it serves Qwen/Qwen2.5-7B-Instruct, not meta-llama/Llama-3.1-8B-"
        f"Instruct (the model of the revision dying now): restore never swaps the served model; to restore it "
        f"anyway, name it with --data revision={base + 1}"), lines
    assert any(x.startswith(f"roll back deployment llm/llama-8b from revision {base + 2} to revision {base} ")
               for x in lines), lines
    run = rehearsal.pyinfra(inv, RESTORE, "-y", "--data", f"revision={base + 1}")
    lines = host_out(run.stderr)
    assert any(x.startswith(f"roll back deployment llm/llama-8b from revision {base + 2} to revision {base + 1} ")
               and "operator override" in x for x in lines), run.stderr
