"""`vllm-remedy drift` says what a refused fix is: drift found, the fix refused (which operation, why), no change
counted for it or for the operations a deploy run never reaches after it — and its own exit code (3), apart from
in sync (0) and drift a deploy would fix (1; detailed 2). On the rehearsal cluster: a pin refused for want of
nodes beside an unrefused host in the same inventory, and the GitOps stance `refuse`."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.drift_world import HOST, MODEL, UNIT, add_vllm_deployment, as_json, set_args
from fixtures.pyinfra_run import ROOT, Rehearsal

rehearsal = pyinfra_run.rehearsal
OTHER = "@k8s/rehearsal/llm/llama-b"
NO_LEN = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
FLUX = {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
PIN, FIX = "Pin the GPU type", "Smallest change that restores headroom"


def policy(tmp: Path, name: str, extra: str = "") -> str:
    """policies/llama-8b.yaml covering llama-b too, plus ``extra`` YAML."""
    path = tmp / f"{name}.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\ntarget: {{namespaces: [llm], deployments: [llama-8b, "
                    f"llama-b], models: [{MODEL}]}}\n{extra}")
    return str(path)


def inventory(tmp: Path, rehearsal: Rehearsal, hosts: dict[str, str]) -> str:
    """Each host with its own policy; the kubeconfig in host data (as in a CronJob)."""
    path = tmp / "inventory.py"
    rows = [(h, {"kubeconfig": str(rehearsal.kubeconfig), "policy": p}) for h, p in hosts.items()]
    path.write_text(f"hosts = {rows!r}\n")
    return str(path)


def versions(rehearsal: Rehearsal) -> list[tuple[int, dict]]:
    """Each Deployment's generation and pod template (status moves on its own during a rollout; these only on a
    write)."""
    client = rehearsal.client()
    return [(client.get_deployment("llm", n)["metadata"]["generation"], client.get_deployment("llm", n)["spec"][
        "template"]) for n in ("llama-8b", "llama-b")]


def test_a_refused_pin_is_drift_whose_fix_is_refused_and_the_other_host_keeps_its_fix(rehearsal: Rehearsal,
                                                                                       tmp_path: Path, cli) -> None:
    set_args(rehearsal, NO_LEN)
    add_vllm_deployment(rehearsal, "llama-b", NO_LEN)
    inv = inventory(tmp_path, rehearsal, {HOST: policy(tmp_path, "h100", "gpu: {products: [NVIDIA-H100-80GB-HBM3]}\n"),
                                          OTHER: policy(tmp_path, "l40s")})
    before = versions(rehearsal)
    got = cli("drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert got.returncode == 3, got.stdout
    assert (doc["status"]["result"], doc["status"]["drifted"], doc["status"]["fixRefused"]) == ("DriftFixRefused", 1, 1)
    refused = hosts[HOST]
    assert refused["status"] == "FixRefused"
    assert refused["fix"]["refused"] == {
        "operation": PIN, "reason": "pin deployment llm/llama-8b to NVIDIA-H100-80GB-HBM3: no node offers "
        "NVIDIA-H100-80GB-HBM3 under nvidia.com/gpu.product (allow_shared=False); nothing to pin to"}
    ops = {op["operation"]: op for op in refused["fix"]["operations"]}
    assert refused["fix"]["changes"] == 0 and not any(op["changes"] for op in ops.values()), ops
    assert (ops[FIX]["notRun"], ops[FIX]["lines"]) == (True, [])  # a deploy run stops at the pin: no flag change
    other = hosts[OTHER]
    assert (other["status"], other["fix"]["refused"]) == ("Drifted", None)
    fix = next(op for op in other["fix"]["operations"] if op["operation"] == FIX)
    assert fix["changes"] and other["fix"]["changes"] >= 1, other["fix"]
    assert "budget deployment llm/llama-b: --max-model-len 16384 (max-model-len, rung 1 of 1)" in fix["lines"]
    assert cli("drift", "-i", inv, "--detailed-exitcode").returncode == 3

    human = cli("drift", "-i", inv).stdout.splitlines()
    assert f"{HOST}: DRIFTED (max-model-len, known-good-unit, gpu-pinned, concurrency), fix refused" in human, human
    assert f"    {FIX}: not run: the host stops at the refusal" in human
    assert (f"  fix refused: {PIN}: {refused['fix']['refused']['reason']} — a deploy run stops there (0 change(s) "
            "before it)") in human
    assert human[-1] == ("2 host(s): 0 in sync, 1 drifted, 1 drifted with the fix refused, 0 error(s) -> "
                         "DriftFixRefused (exit 3)")
    assert versions(rehearsal) == before


def test_the_gitops_refuse_stance_is_a_refused_fix_not_a_change(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    set_args(rehearsal, NO_LEN, labels=FLUX)
    path = tmp_path / "refuse.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\n{UNIT}gitops: refuse\n")
    inv = inventory(tmp_path, rehearsal, {HOST: str(path)})
    got = cli("drift", "-i", inv, "-o", "json")
    host = as_json(got)["hosts"][0]
    assert (got.returncode, host["status"]) == (3, "FixRefused"), got.stdout
    assert host["fix"]["refused"] == {"operation": FIX, "reason": (
        "deployment llm/llama-8b is managed by Flux Kustomization flux-system/apps (label "
        "kustomize.toolkit.fluxcd.io/name=apps); self-heal would revert a direct change, and policy gitops is refuse: "
        "nothing written — make the change in Git")}
    ops = {op["operation"]: op for op in host["fix"]["operations"]}
    assert host["fix"]["changes"] == 0 and ops[FIX]["changes"] is False, ops
    assert "git: vllm-remedy args set -f <manifest in Git> --set max-model-len=16384" in ops[FIX]["lines"]
