"""A pod pinned to a GPU product the policy allows keeps it: ``deploys/budget.py`` pins and plans on the product
``check`` and ``plan --policy`` keep (``policy_gpu.product``), not the policy's first one; ``deploys/pin_gpu.py`` pins
it, and check's GPU-pin fix names it.

The policy lists ``[NVIDIA-A10G, NVIDIA-L40S]``; the runbook's Deployment runs on the L40S with max-model-len
implicit. check's smallest fix and plan's first rung keep the L40S pin and set ``--max-model-len 16384``; the deploy
re-pinned the pods to the A10G (the policy's first product) and planned the budget there. Here the deploy, run with
the real pyinfra CLI on the rehearsal cluster (``--dry`` then ``-y``, and at the confirmation prompt), makes the
change check and plan name, and its dry run's diff is the object after the run.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS, MODEL, PIN, policy_file, prompted_run, quiet, scenario, with_args
from fixtures.dry_run import apply, diffs, dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import NAME, NS, deployment, host_out, write_inventory
from vllm_remedy.kube.diff import template_yaml
from vllm_remedy.remedies.predict import pinned_gpu
from vllm_remedy.vllm.cmdline import find_server

rehearsal = pyinfra_run.rehearsal

#: Two products allowed, the pod's L40S second: the first product is not the one to plan on.
TWO_PRODUCTS = "gpu: {products: [NVIDIA-A10G, NVIDIA-L40S]}\n"
#: max-model-len implicit (the model's 131,072): it starts on the L40S but holds 1.51 requests.
IMPLICIT_ARGS = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]


def _on_l40s_implicit(rehearsal: Rehearsal) -> tuple[dict[str, Any], str, str]:
    """The runbook's Deployment on the L40S with max-model-len implicit; the policy file and an inventory using it."""
    before = scenario(rehearsal, with_args(IMPLICIT_ARGS), "drop --max-model-len")
    assert pinned_gpu(before["spec"]["template"]["spec"]) == "NVIDIA-L40S"
    policy = policy_file(rehearsal.tmp, TWO_PRODUCTS)
    return before, policy, write_inventory(rehearsal.tmp, policy=policy)


def _manifest(rehearsal: Rehearsal, deployment_: dict[str, Any]) -> str:
    """The live Deployment as a manifest file, for ``check -f`` and ``plan -f``."""
    path = rehearsal.tmp / "live.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment",
                                    "metadata": {"name": NAME, "namespace": NS},
                                    "spec": {k: deployment_["spec"][k] for k in ("replicas", "selector", "template")}}))
    return str(path)


def _shape(template: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """vLLM's flags and the nodeSelector: what a budget change decides about the pod."""
    spec = template["spec"]
    return dict(find_server(spec, "vllm").flags), dict(spec.get("nodeSelector") or {})


def test_budget_keeps_the_allowed_pin_check_and_plan_keep(rehearsal: Rehearsal, cli) -> None:
    before, policy, inv = _on_l40s_implicit(rehearsal)
    manifest = _manifest(rehearsal, before)
    planned = cli("plan", "-f", manifest, "--policy", policy, "-o", "json")
    assert planned.returncode == 1, planned.stdout + planned.stderr
    first = json.loads(planned.stdout)["steps"][0]
    checked = cli("check", "-f", manifest, "--policy", policy, "-o", "json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    fix = json.loads(checked.stdout)["items"][0]["fix"]
    assert (first["set"], first["template"].get("nodeSelector")) == (fix["set"], fix["template"].get("nodeSelector"))
    assert first["set"] == {"max-model-len": "16384"} and not first["template"].get("nodeSelector"), first

    dry, applied = dry_then_apply(rehearsal, inv, BUDGET)  # the dry run's diffs are the object after the run
    assert applied.returncode == 0, applied.stderr
    lines = host_out(dry.stderr)
    assert not any("NVIDIA-A10G" in line for line in lines), lines  # neither pinned nor planned on the first product
    assert any(line.startswith("prediction on NVIDIA-L40S: ") for line in lines), lines
    after = deployment(rehearsal)["spec"]["template"]
    flags, selector = _shape(after)
    assert selector == {"nvidia.com/gpu.product": "NVIDIA-L40S"}, selector
    assert flags == {**_shape(before["spec"]["template"])[0], **first["set"]}, flags


def test_the_confirmation_prompt_path_writes_what_dry_showed(rehearsal: Rehearsal) -> None:
    before, _policy, inv = _on_l40s_implicit(rehearsal)
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert dry.returncode == 0, dry.stderr
    shown = [d for d in diffs(dry.stderr) if d.name == f"deployment {NS}/{NAME} template"]
    assert len(shown) == 1, dry.stderr
    got = prompted_run(rehearsal, BUDGET, lambda: None, inventory=inv)
    assert got.returncode == 0, got.stderr
    after = deployment(rehearsal)
    assert template_yaml(after["spec"]["template"]) == apply(template_yaml(before["spec"]["template"]), shown[0])
    assert after["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}



def test_the_pin_deploy_and_checks_pin_fix_keep_the_allowed_product(rehearsal: Rehearsal, cli) -> None:
    """Two GPUs per pod where the policy pins one (the new pods stay Pending on the one-GPU nodes): check's fix named
    "nodeSelector nvidia.com/gpu.product: NVIDIA-A10G", the policy's first product, for a pod on the L40S it allows;
    the pin deploy keeps the L40S and sets one GPU, as the fix now says."""
    def two_gpus(dep: dict[str, Any]) -> None:
        container = dep["spec"]["template"]["spec"]["containers"][0]
        container["args"] = list(GOOD_ARGS)
        container["resources"]["limits"]["nvidia.com/gpu"] = "2"
    rehearsal.change(two_gpus, change_cause="two GPUs per pod")
    before = quiet(rehearsal)
    policy = policy_file(rehearsal.tmp, TWO_PRODUCTS)
    checked = cli("check", "-f", _manifest(rehearsal, before), "--policy", policy, "-o", "json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    pinned = [f for f in json.loads(checked.stdout)["items"][0]["findings"] if f["check"] == "gpu-pinned"]
    assert [f["fix"] for f in pinned] == ["nodeSelector nvidia.com/gpu.product: NVIDIA-L40S with limits "
                                          "nvidia.com/gpu: 1"], pinned
    _dry, applied = dry_then_apply(rehearsal, write_inventory(rehearsal.tmp, policy=policy), PIN, expect_diffs=1)
    assert applied.returncode == 0, applied.stderr
    after = deployment(rehearsal)["spec"]["template"]["spec"]
    assert after["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}, after["nodeSelector"]
    assert after["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] in (1, "1"), after["containers"][0]
