"""What you approve is what runs, for a refused host: the `--dry` of a deploy lists as changes exactly what `-y` then
changes on that host — the refusing operation and every later one count nothing, the later ones say "not run" — and
an unrefused host in the same inventory still shows (and makes) its change. Through the real pyinfra CLI, on the
GitOps stance `refuse` (deploys/restore.py on a Helm Deployment), a pin refused for want of nodes and a budget
predicted not to fit (deploys/budget.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, MODEL, prompted_run, scenario, with_args
from fixtures.drift_world import UNIT, add_vllm_deployment, set_args
from fixtures.drift_world import inventory as drift_inventory
from fixtures.drift_world import policy as drift_policy
from fixtures.pyinfra_run import ROOT, Rehearsal, detected_changes, host_lines, plain
from fixtures.restore_world import HOST, L4_TOLERATION, incident

rehearsal = pyinfra_run.rehearsal
RESTORE = str(ROOT / "deploys" / "restore.py")
OTHER = "@k8s/rehearsal/llm/llama-b"
IMPLICIT = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
HELM = {"labels": {"app.kubernetes.io/managed-by": "Helm"}, "annotations": {"meta.helm.sh/release-name": "vllm"}}
NO_H100 = "gpu: {products: [NVIDIA-H100-80GB-HBM3]}\n"
L4_ONLY = ("gpu: {products: [NVIDIA-L4], label: cloud.google.com/gke-accelerator}\n"
           "flags:\n  max-model-len: {min: 16384, max: 16384, preferred: 16384}\n"
           "  tensor-parallel-size: {min: 1, max: 1}\nenforce_eager: {allowed: false}\n"
           "load_shedding: {max_model_len: 16384}\n")


def policy(tmp: Path, name: str, extra: str = "") -> str:
    """policies/llama-8b.yaml covering llama-b too, plus ``extra`` YAML."""
    path = tmp / f"{name}.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\ntarget: {{namespaces: [llm], deployments: [llama-8b, "
                    f"llama-b], models: [{MODEL}]}}\n{extra}")
    return str(path)


def inventory(tmp: Path, hosts: dict[str, str]) -> str:
    """One inventory, each host with its own policy file."""
    path = tmp / "inventory.py"
    path.write_text(f"hosts = {[(h, {'policy': p}) for h, p in hosts.items()]!r}\n")
    return str(path)


def planned_changes(rehearsal: Rehearsal, inv: str, deploy: str, host: str) -> tuple[int, list[str]]:
    """``--dry --json``'s exit code and the operations it counts as a change on ``host`` (the JSON plan names every
    host; the table truncates them)."""
    got = rehearsal.pyinfra(inv, deploy, "--dry", "--json", timeout=300)
    plan = json.loads(got.stdout)["plan"]
    return got.returncode, [op["name"] for op in plan if host in op["hosts_with_change"]]


def made_changes(stderr: str, host: str) -> list[str]:
    """The operations a ``-y`` run changed on ``host``: its ``Success`` line under each ``Starting operation``."""
    made, current = [], ""
    for line in plain(stderr).splitlines():
        if line.startswith("--> Starting operation: "):
            current = line.removeprefix("--> Starting operation: ").strip()
        elif f"[{host}]" in line and line.split(f"[{host}]", 1)[1].strip().startswith("Success"):
            made.append(current)
    return made


def real_run(rehearsal: Rehearsal, inv: str, deploy: str) -> subprocess.CompletedProcess[str]:
    """``-y``; with another host still running, pyinfra asks whether to go on after a host fails: yes."""
    return rehearsal.pyinfra(inv, deploy, "-y", timeout=300, stdin="\n")


def generation(rehearsal: Rehearsal, name: str = "llama-8b") -> int:
    return int(rehearsal.client().get_deployment("llm", name)["metadata"]["generation"])


def not_run(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("not run: ")]


def test_gitops_refuse_the_dry_run_counts_no_wait_after_the_refused_rollback(rehearsal: Rehearsal,
                                                                              tmp_path: Path) -> None:
    incident(rehearsal)

    def helm(dep: dict[str, Any]) -> None:
        for key, values in HELM.items():
            dep["metadata"].setdefault(key, {}).update(values)
    rehearsal.change(helm)
    inv = inventory(tmp_path, {HOST: policy(tmp_path, "refuse", "gitops: refuse\n")})
    human = rehearsal.pyinfra(inv, RESTORE, "--dry", timeout=300)
    assert human.returncode == 1, human.stderr
    table = detected_changes(human.stderr)
    assert table["Wait until the new pods are Ready"][0] == "-", table
    lines = host_lines(human.stderr, HOST)
    assert ("not run: Wait until the new pods are Ready — the host stops at the refusal of 'Roll back a "
            "crash-looping revision to the last known-good one' above, as a -y run does") in not_run(lines), lines

    code, planned = planned_changes(rehearsal, inv, RESTORE, HOST)
    before = generation(rehearsal)
    real = real_run(rehearsal, inv, RESTORE)
    assert (code, real.returncode) == (1, 1), real.stderr
    assert planned == made_changes(real.stderr, HOST) == ["Record crash-looping revisions on their ReplicaSets"], (
        planned, real.stderr)
    assert generation(rehearsal) == before


def test_a_refused_pin_the_dry_run_lists_what_the_real_run_changes_and_the_other_host_its_fix(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, with_args(IMPLICIT), "drop --max-model-len")
    add_vllm_deployment(rehearsal, "llama-b", IMPLICIT)
    inv = inventory(tmp_path, {HOST: policy(tmp_path, "h100", NO_H100), OTHER: policy(tmp_path, "l40s")})
    human = rehearsal.pyinfra(inv, BUDGET, "--dry", timeout=300)
    assert human.returncode == 1, human.stderr  # a refusal fails the host in --dry as in -y (CI reads the exit)
    table = detected_changes(human.stderr)
    fix, wait = table["Smallest change that restores headroom"], table["Wait until the new pods are Ready"]
    assert HOST not in fix[0] and HOST not in wait[0] and OTHER in fix[0], table
    lines = host_lines(human.stderr, HOST)
    refusal = [line for line in lines if line.startswith("refused: pin deployment llm/llama-8b to NVIDIA-H100")]
    assert len(refusal) == 1, lines
    assert [line.split(" — ")[0] for line in not_run(lines)] == [
        "not run: Smallest change that restores headroom", "not run: Wait until the new pods are Ready"], lines
    assert not any(line.startswith("budget deployment llm/llama-8b") for line in lines), lines
    assert not not_run(host_lines(human.stderr, OTHER))

    code, planned = planned_changes(rehearsal, inv, BUDGET, HOST)
    other = planned_changes(rehearsal, inv, BUDGET, OTHER)[1]
    before = rehearsal.client().get_deployment("llm", "llama-8b")
    real = real_run(rehearsal, inv, BUDGET)
    assert (code, real.returncode) == (1, 1), real.stderr
    assert planned == made_changes(real.stderr, HOST) == [], (planned, real.stderr)
    fix = "Smallest change that restores headroom"
    assert fix in other and fix in made_changes(real.stderr, OTHER), (other, real.stderr)
    after = rehearsal.client().get_deployment("llm", "llama-8b")
    assert (after["metadata"]["generation"], after["spec"]["template"]) == (before["metadata"]["generation"],
                                                                           before["spec"]["template"])
    assert "--max-model-len" in rehearsal.client().get_deployment("llm", "llama-b")["spec"]["template"]["spec"][
        "containers"][0]["args"]


def test_a_budget_predicted_not_to_fit_counts_no_change_in_the_dry_run_as_in_the_real_run(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    def on_l4(dep: dict[str, Any]) -> None:
        spec = dep["spec"]["template"]["spec"]
        spec["containers"][0]["args"] = [MODEL, "--max-model-len", "4096", "--gpu-memory-utilization", "0.90",
                                         "--max-num-seqs", "64"]
        spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
        spec["tolerations"] = [dict(L4_TOLERATION)]
    before = scenario(rehearsal, on_l4, "move to the L4 pool at 4096")
    inv = inventory(tmp_path, {HOST: policy(tmp_path, "l4", L4_ONLY)})
    human = rehearsal.pyinfra(inv, BUDGET, "--dry", timeout=300)
    assert human.returncode == 1, human.stderr  # refused (no change within policy): --dry exits 1 as -y does
    assert detected_changes(human.stderr)["Smallest change that restores headroom"][0] == "-"
    lines = host_lines(human.stderr, HOST)
    assert len([line for line in lines if "no change within policy" in line]) == 1, lines

    code, planned = planned_changes(rehearsal, inv, BUDGET, HOST)
    real = real_run(rehearsal, inv, BUDGET)
    assert (code, real.returncode) == (1, 1), real.stderr
    assert planned == made_changes(real.stderr, HOST) == [], (planned, real.stderr)
    assert len([line for line in host_lines(real.stderr, HOST) if "no change within policy" in line]) == 1
    assert generation(rehearsal) == before["metadata"]["generation"]


def test_an_approved_plan_that_stops_at_a_refusal_stops_there_even_if_the_refusal_is_gone_at_execute(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The prompt showed the budget refused (GitOps stance) and nothing after it; at the prompt a colleague takes
    the Deployment out of Flux and sets --max-model-len themselves. The run must not go on to wait for their
    rollout - a step the operator was told would not run: the host fails at the refused step, saying why."""
    flux = {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
    set_args(rehearsal, IMPLICIT, labels=flux)
    inv = drift_inventory(tmp_path, rehearsal.kubeconfig, drift_policy(tmp_path, UNIT + "gitops: refuse\n"))

    def colleague(dep: dict[str, Any]) -> None:
        for key in flux:
            dep["metadata"]["labels"].pop(key, None)
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = [*IMPLICIT, "--max-model-len", "16384"]

    got = prompted_run(rehearsal, BUDGET, lambda: rehearsal.change(colleague), timeout=120, inventory=inv)
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert any("the plan you approved stops here, refused (deployment llm/llama-8b is managed by Flux" in line
               and line.endswith("it would not be refused now: nothing was written — re-run to plan against the new "
                                 "state") for line in lines), lines
    assert made_changes(got.stderr, HOST) == [], got.stderr
    notes = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"].get("annotations") or {}
    assert "vllm-remedy.io/last-action" not in notes
