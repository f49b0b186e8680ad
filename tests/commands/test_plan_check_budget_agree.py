"""One policy, one answer to "the smallest change": ``plan --policy``'s first rung, ``check --policy``'s smallest fix
and the change ``deploys/budget.py --dry`` plans (pin step included) on the runbook's revision 15.

Under policies/llama-8b.yaml (``gpu.products: [NVIDIA-L40S]``, ``gpu.per_pod: 1``) ``plan`` ranked first
``--max-model-len 14592 --tensor-parallel-size 2 limits nvidia.com/gpu: 2`` on the pod's NVIDIA-L4, a product and a
GPU count the policy forbids, while check and the deploy both pin the L40S and set ``--max-model-len 16384``. Each
answer is applied to the same pod template here and the three templates compared: flags, GPU product, GPUs per pod.
The deploy is the real pyinfra CLI on the rehearsal cluster, after the incident rolled revision 15 out there.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, LOCAL
from fixtures.dry_run import apply, diffs
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import NAME, NS, incident
from vllm_remedy.kube.diff import template_yaml
from vllm_remedy.remedies.pin_gpu import canonical_product
from vllm_remedy.remedies.predict import pinned_gpu
from vllm_remedy.vllm.cmdline import find_server

rehearsal = pyinfra_run.rehearsal
ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "data" / "manifests" / "runbook" / "bad-rev15.yaml"
POLICY = str(ROOT / "policies" / "llama-8b.yaml")
RESOURCE = "nvidia.com/gpu"


def _shape(template: dict[str, Any]) -> dict[str, Any]:
    """What a change decides about a pod: vLLM's flags, the GPU product it is pinned to and the GPUs it asks for."""
    spec = template["spec"]
    server = find_server(spec, "vllm")
    limits = (server.container.get("resources") or {}).get("limits") or {}
    return {"flags": dict(server.flags), "product": canonical_product(pinned_gpu(spec) or "none"),
            "gpus": int(limits.get(RESOURCE, 0))}


def _applied(template: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    """A plan step (``plan``/``check`` JSON) applied to the pod template: flags set and unset, nodeSelector keys set
    and dropped, the GPU limit."""
    out = copy.deepcopy(template)
    spec = out["spec"]
    container = next(c for c in spec["containers"] if c["name"] == "vllm")
    args = list(container["args"])
    for flag in [*step["set"], *step["unset"]]:  # every flag the step names is rewritten (none is repeated here)
        if f"--{flag}" in args:
            at = args.index(f"--{flag}")
            del args[at:at + 2]
    for flag, value in step["set"].items():
        args += [f"--{flag}"] if value == "true" else [f"--{flag}", value]
    container["args"] = args
    change = step["template"]
    dropped = change.get("dropNodeSelector", [])
    selector = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k not in dropped}
    spec["nodeSelector"] = {**selector, **change.get("nodeSelector", {})}
    if RESOURCE in (change.get("resources") or {}).get("limits", {}):
        container["resources"]["limits"][RESOURCE] = change["resources"]["limits"][RESOURCE]
    return out


def test_plan_check_and_budget_make_the_same_change_under_the_policy(rehearsal: Rehearsal, cli) -> None:
    deployment = incident(rehearsal)
    manifest = yaml.safe_load(BAD.read_text())
    template = manifest["spec"]["template"]
    live = deployment["spec"]["template"]
    # the three are asked about one revision: the file is what the incident rolled out
    assert _shape(live) == _shape(template) and live["spec"]["nodeSelector"] == template["spec"]["nodeSelector"]

    dry = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    assert dry.returncode == 0, dry.stderr
    planned = template_yaml(live)
    shown = [d for d in diffs(dry.stderr) if d.name == f"deployment {NS}/{NAME} template"]
    assert shown, dry.stderr
    for diff in shown:  # the pin, then the budget's change planned on the pinned template
        planned = apply(planned, diff)
    budget = _shape(yaml.safe_load(planned))

    got = cli("plan", "-f", str(BAD), "--policy", POLICY, "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    first = json.loads(got.stdout)["steps"][0]
    checked = cli("check", "-f", str(BAD), "--policy", POLICY, "-o", "json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    fix = json.loads(checked.stdout)["items"][0]["fix"]

    assert budget["product"] == "NVIDIA-L40S" and budget["gpus"] == 1, budget  # the policy's product and count
    assert _shape(_applied(template, first)) == budget, (first, dry.stderr)
    assert _shape(_applied(template, fix)) == budget, (fix, dry.stderr)
    assert (first["set"], first["template"]) == (fix["set"], fix["template"])


def test_a_policy_directory_gives_plan_the_policy_check_picks(cli) -> None:
    """``--policy policies/``: llama-8b.yaml's target names the workload, so plan ranks what the file gives."""
    by_dir = cli("plan", "-f", str(BAD), "--policy", str(ROOT / "policies"), "-o", "json")
    by_file = cli("plan", "-f", str(BAD), "--policy", POLICY, "-o", "json")
    assert by_dir.returncode == by_file.returncode == 1, by_dir.stderr + by_file.stderr
    assert json.loads(by_dir.stdout)["steps"] == json.loads(by_file.stdout)["steps"]
    checked = cli("check", "-f", str(BAD), "--policy", str(ROOT / "policies"), "-o", "json")
    assert json.loads(checked.stdout)["items"][0]["policy"] == "llama-8b", checked.stdout
    alone = cli("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L4", "--policy",
                str(ROOT / "policies"))
    assert alone.returncode == 2 and not alone.stdout, alone
    assert "a directory picks the policy covering a workload; pass -f MANIFEST" in alone.stderr, alone.stderr
