"""GitOps-managed Deployments on the rehearsal cluster: reported by drift, warned about in a deploy's --dry with
the Git hint (`args set`), refused under policy gitops: refuse (nothing written), applied with the hint under apply."""

from __future__ import annotations

from pathlib import Path

from fixtures import pyinfra_run
from fixtures.drift_world import BUDGET, HOST, MODEL, UNIT, as_json, inventory, policy, set_args
from fixtures.pyinfra_run import Rehearsal, host_lines

rehearsal = pyinfra_run.rehearsal
NO_LEN = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
ARGO = {"argocd.argoproj.io/instance": "llm-prod"}
FLUX = {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
HINT = [
    "git: vllm-remedy args set -f <manifest in Git> --set max-model-len=16384",
    "git: --- a/llama-8b.yaml",
    "git: +++ b/llama-8b.yaml",
]


def args(rehearsal: Rehearsal) -> list[str]:
    return rehearsal.client().get_deployment("llm", "llama-8b")["spec"]["template"]["spec"]["containers"][0]["args"]


def test_drift_reports_the_argo_cd_owner_and_the_dry_run_warns_with_the_git_hint(
        rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    set_args(rehearsal, NO_LEN, labels=ARGO)
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, UNIT + "gitops: warn\n"))
    host = as_json(cli("drift", "-i", inv, "-o", "json"))["hosts"][0]
    assert host["gitops"] == {"tool": "Argo CD", "kind": "Application", "name": "llm-prod", "namespace": None,
                              "evidence": "label argocd.argoproj.io/instance=llm-prod", "certain": True, "mode": "warn",
                              "reverted_by": "self-heal"}
    budget = next(op for op in host["fix"]["operations"] if op["operation"].startswith("Smallest"))
    assert budget["refused"] is None
    warning = ("warning: deployment llm/llama-8b is managed by Argo CD Application llm-prod (label "
               "argocd.argoproj.io/instance=llm-prod): a sync/self-heal will revert this change; make it in Git too")
    assert warning in budget["lines"]
    start = budget["lines"].index(warning) + 1
    assert budget["lines"][start:start + 3] == HINT
    assert "git: +        - --max-model-len" in budget["lines"]

    dry = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert dry.returncode == 0, dry.stderr
    lines = host_lines(dry.stderr, HOST)
    assert lines.count(warning) == 1
    assert lines[lines.index(warning) + 1: lines.index(warning) + 4] == HINT
    assert args(rehearsal) == NO_LEN


def test_refuse_mode_fails_the_host_in_one_line_and_writes_nothing(rehearsal: Rehearsal, tmp_path: Path) -> None:
    before = set_args(rehearsal, NO_LEN, labels=FLUX)
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, UNIT + "gitops: refuse\n"))
    got = rehearsal.pyinfra(inv, BUDGET, "-y")
    assert got.returncode == 1
    refusal = ("refused: deployment llm/llama-8b is managed by Flux Kustomization flux-system/apps (label "
               "kustomize.toolkit.fluxcd.io/name=apps); self-heal would revert a direct change, and policy gitops is "
               "refuse: nothing written — make the change in Git")
    assert refusal in host_lines(got.stderr, HOST)
    after = rehearsal.client().get_deployment("llm", "llama-8b")
    assert (after["spec"]["template"], after["metadata"]["generation"]) == (before["spec"]["template"],
                                                                           before["metadata"]["generation"])


def test_apply_mode_writes_and_gives_the_hint(rehearsal: Rehearsal, tmp_path: Path) -> None:
    tracking = "llm_llama:apps/Deployment:llm/llama-8b"
    set_args(rehearsal, NO_LEN, notes={"argocd.argoproj.io/tracking-id": tracking})
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, UNIT + "gitops: apply\n"))
    got = rehearsal.pyinfra(inv, BUDGET, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    note = (f"note: deployment llm/llama-8b is managed by Argo CD Application llm/llama (annotation "
            f"argocd.argoproj.io/tracking-id={tracking}); applying (policy gitops: apply) — make the same change in "
            "Git or the next sync reverts it")
    assert lines.count(note) == 1
    assert lines[lines.index(note) + 1] == HINT[0]
    assert args(rehearsal) == [*NO_LEN, "--max-model-len", "16384"]


STACK = {"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "vllm-stack-0.1.7", "model": "llama3",
         "helm-release-name": "vllm"}


def test_a_helm_release_is_reported_and_the_dry_run_gives_the_values_change(rehearsal: Rehearsal, tmp_path: Path,
                                                                             cli) -> None:
    set_args(rehearsal, NO_LEN, labels=STACK, notes={"meta.helm.sh/release-name": "vllm"})
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, UNIT + "gitops: warn\n"))
    drift = cli("drift", "-i", inv).stdout
    assert ("  gitops: managed by Helm release vllm (annotation meta.helm.sh/release-name=vllm); policy gitops: warn "
            "— the next helm upgrade reverts direct changes") in drift.splitlines()
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert dry.returncode == 0, dry.stderr
    lines = host_lines(dry.stderr, HOST)
    warning = ("warning: deployment llm/llama-8b is managed by Helm release llm/vllm (annotation "
               "meta.helm.sh/release-name=vllm): the next helm upgrade will revert this change; make it in the "
               "release's values too")
    assert lines.count(warning) == 1
    assert lines[lines.index(warning) + 1: lines.index(warning) + 3] == [
        "helm: helm upgrade vllm vllm-stack -n llm --reuse-values "
        "--set servingEngineSpec.modelSpec[<i>].vllmConfig.maxModelLen=16384",
        "helm: <i> is the index of the servingEngineSpec.modelSpec entry with name: llama3"]
    assert args(rehearsal) == NO_LEN


def test_a_child_of_an_inference_service_is_refused_even_under_apply(rehearsal: Rehearsal, tmp_path: Path,
                                                                     cli) -> None:
    def owned(dep: dict) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(NO_LEN)
        dep["metadata"]["ownerReferences"] = [{"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                                               "name": "llama", "uid": "0b8e4d0e-0000-4000-8000-000000000001",
                                               "controller": True}]
    before = rehearsal.change(owned)
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, UNIT + "gitops: apply\n"))
    owner = as_json(cli("drift", "-i", inv, "-o", "json"))["hosts"][0]["gitops"]
    assert (owner["tool"], owner["kind"], owner["name"], owner["mode"], owner["reverted_by"]) == (
        "KServe", "InferenceService", "llama", "refuse", "the InferenceService controller")
    got = rehearsal.pyinfra(inv, BUDGET, "-y")
    assert got.returncode == 1
    assert ("refused: deployment llm/llama-8b is owned by InferenceService llm/llama (ownerReference "
            "InferenceService/llama); the InferenceService controller reverts a direct change at once: nothing "
            "written — patch the InferenceService, not its child") in host_lines(got.stderr, HOST)
    after = rehearsal.client().get_deployment("llm", "llama-8b")
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
