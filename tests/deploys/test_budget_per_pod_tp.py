"""A running tensor-parallel size the policy's GPUs per pod do not allow is said and brought within them, by
``plan --policy``, ``check --policy`` and ``deploys/budget.py`` alike.

policies/llama-8b.yaml pins NVIDIA-L40S with one GPU per pod (``gpu.per_pod: 1``, TP at most 2). The runbook's
Deployment is edited to ``--tensor-parallel-size 2`` with two GPUs per pod (its new pods cannot schedule on the
one-GPU L40S nodes; the old ones keep serving). ``plan`` called that "no change needed" (the planner's base kept any
TP within the flag's bound), and the deploy's pin step refused ("gpus=1 is fewer than --tensor-parallel-size 2
needs"), so nothing was changed. Now the plan's problem names the policy's GPUs per pod, its first rung sets TP 1
with one GPU, and the deploy writes that change (real pyinfra CLI on the rehearsal cluster: ``--dry`` then ``-y``,
and at the confirmation prompt), its dry run's diff being the object after the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS, prompted_run
from fixtures.dry_run import apply, diffs, dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, NAME, NS, deployment, host_out, quiet
from vllm_remedy.kube.diff import template_yaml
from vllm_remedy.vllm.cmdline import find_server

rehearsal = pyinfra_run.rehearsal

POLICY = str(Path(__file__).resolve().parents[2] / "policies" / "llama-8b.yaml")
PER_POD = "tensor-parallel-size 2 needs 2 GPUs, the policy pins 1 GPU(s) per pod (gpu.per_pod)"


def _tp2(rehearsal: Rehearsal) -> dict[str, Any]:
    """The Deployment at TP 2 with two GPUs per pod (the revision is written; its pods stay Pending)."""
    def edit(dep: dict[str, Any]) -> None:
        container = dep["spec"]["template"]["spec"]["containers"][0]
        container["args"] = [*GOOD_ARGS, "--tensor-parallel-size", "2"]
        container["resources"]["limits"]["nvidia.com/gpu"] = "2"
    rehearsal.change(edit, change_cause="tensor-parallel-size 2")
    return quiet(rehearsal)


def _shape(template: dict[str, Any]) -> tuple[dict[str, str], str]:
    """vLLM's flags and the GPUs a pod asks for."""
    server = find_server(template["spec"], "vllm")
    return dict(server.flags), str(server.container["resources"]["limits"]["nvidia.com/gpu"])


def _manifest(rehearsal: Rehearsal, live: dict[str, Any]) -> str:
    path = rehearsal.tmp / "live.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment",
                                    "metadata": {"name": NAME, "namespace": NS},
                                    "spec": {k: live["spec"][k] for k in ("replicas", "selector", "template")}}))
    return str(path)


def test_plan_check_and_budget_bring_tp_within_the_policys_gpus_per_pod(rehearsal: Rehearsal, cli) -> None:
    before = _tp2(rehearsal)
    manifest = _manifest(rehearsal, before)
    planned = cli("plan", "-f", manifest, "--policy", POLICY, "-o", "json")
    assert planned.returncode == 1, planned.stdout + planned.stderr
    plan = json.loads(planned.stdout)
    assert PER_POD in plan["problem"], plan["problem"]
    first = plan["steps"][0]
    assert first["set"]["tensor-parallel-size"] == "1", first
    assert first["template"]["resources"]["limits"] == {"nvidia.com/gpu": 1}, first
    assert all(s["set"].get("tensor-parallel-size", "1") == "1" for s in plan["steps"]), plan["steps"]
    checked = cli("check", "-f", manifest, "--policy", POLICY, "-o", "json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    fix = json.loads(checked.stdout)["items"][0]["fix"]
    assert (fix["set"], fix["template"]) == (first["set"], first["template"]), (fix, first)

    dry, applied = dry_then_apply(rehearsal, LOCAL, BUDGET, expect_diffs=1)  # the dry run's diff is the object after
    assert applied.returncode == 0, applied.stderr
    # the deploy reads the nodes too: one GPU per L40S node bounds the flag's range as well ("outside [1, 1]")
    said = [line for line in host_out(dry.stderr) if line.startswith("problem: tensor-parallel-size 2 ")]
    assert len(said) == 1 and said[0].endswith(PER_POD.removeprefix("tensor-parallel-size 2")), host_out(dry.stderr)
    flags, gpus = _shape(deployment(rehearsal)["spec"]["template"])
    assert (flags, gpus) == ({**_shape(before["spec"]["template"])[0], **first["set"]}, "1"), (flags, gpus)


def test_the_confirmation_prompt_path_writes_what_dry_showed(rehearsal: Rehearsal) -> None:
    before = _tp2(rehearsal)
    dry = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    assert dry.returncode == 0, dry.stderr
    shown = diffs(dry.stderr)
    assert [d.name for d in shown] == [f"deployment {NS}/{NAME} template"], dry.stderr
    got = prompted_run(rehearsal, BUDGET, lambda: None)
    assert got.returncode == 0, got.stderr
    after = deployment(rehearsal)
    assert template_yaml(after["spec"]["template"]) == apply(template_yaml(before["spec"]["template"]), shown[0])
    assert _shape(after["spec"]["template"])[1] == "1"
