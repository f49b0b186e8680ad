"""GitOps owner detection from real controllers' labels/annotations, the `args set` Git hint, policy stances (pure)."""

from __future__ import annotations

import copy

import pytest

from vllm_remedy import gitops

BASE = {"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "llama-8b", "namespace": "llm", "labels": {"app": "llama-8b"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{
            "name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
            "args": ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.90"]}]}}}}


def with_meta(labels=None, notes=None, **meta):
    obj = copy.deepcopy(BASE)
    obj["metadata"]["labels"].update(labels or {})
    obj["metadata"]["annotations"] = dict(notes or {})
    obj["metadata"].update(meta)
    return obj


@pytest.mark.parametrize("obj,expected", [
    (with_meta(notes={"argocd.argoproj.io/tracking-id": "llm-prod:apps/Deployment:llm/llama-8b"}),
     ("Argo CD", "Application", "llm-prod", None, True)),
    (with_meta(notes={"argocd.argoproj.io/tracking-id": "argocd-apps_llm-prod:apps/Deployment:llm/llama-8b"}),
     ("Argo CD", "Application", "llm-prod", "argocd-apps", True)),
    (with_meta({"argocd.argoproj.io/instance": "llm-prod"}), ("Argo CD", "Application", "llm-prod", None, True)),
    (with_meta({"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}),
     ("Flux", "Kustomization", "apps", "flux-system", True)),
    (with_meta({"helm.toolkit.fluxcd.io/name": "vllm", "helm.toolkit.fluxcd.io/namespace": "llm"}),
     ("Flux", "HelmRelease", "vllm", "llm", True)),
    (with_meta({"app.kubernetes.io/instance": "llm-prod"}), ("Argo CD", "Application", "llm-prod", None, False)),
    (with_meta({"app.kubernetes.io/instance": "x"}, managedFields=[{"manager": "argocd-controller"}]),
     ("Argo CD", "Application", "x", None, True)),
    (with_meta({"app.kubernetes.io/instance": "vllm", "app.kubernetes.io/managed-by": "Helm"}),
     ("Helm", "release", "vllm", "llm", True)),
    (with_meta({"app.kubernetes.io/instance": "x"}, {"meta.helm.sh/release-name": "stack",
                                                    "meta.helm.sh/release-namespace": "serving"}),
     ("Helm", "release", "stack", "serving", True)),
    (with_meta({"app.kubernetes.io/managed-by": "Helm", "argocd.argoproj.io/instance": "llm-prod"}),
     ("Argo CD", "Application", "llm-prod", None, True)),  # Argo CD renders the chart and self-heals: it wins
    (with_meta({"app.kubernetes.io/managed-by": "Helm", "helm.toolkit.fluxcd.io/name": "vllm"}),
     ("Flux", "HelmRelease", "vllm", None, True)),
    (with_meta(ownerReferences=[{"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                                 "name": "qwen", "controller": True}]),
     ("KServe", "InferenceService", "qwen", "llm", True)),
    (with_meta(ownerReferences=[{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                                 "name": "llama-405b", "controller": True}]),
     ("LeaderWorkerSet", "LeaderWorkerSet", "llama-405b", "llm", True)),
])
def test_detect_owner(obj, expected) -> None:
    owner = gitops.detect(obj)
    assert owner is not None
    assert (owner.tool, owner.kind, owner.name, owner.namespace, owner.certain) == expected


@pytest.mark.parametrize("obj", [
    BASE,
    with_meta({"kustomize.toolkit.fluxcd.io/name": "apps"}, {"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}),
    with_meta({"argocd.argoproj.io/instance": "llm"}, ownerReferences=[{"kind": "Deployment", "controller": True}]),
    # an LWS's revision record: restore writes its crash record there, and no controller reverts annotations
    {**with_meta(ownerReferences=[{"kind": "LeaderWorkerSet", "name": "qwen", "controller": True}]),
     "kind": "ControllerRevision"},
])
def test_not_gitops_managed(obj) -> None:
    assert gitops.detect(obj) is None


def test_git_hint_is_the_args_set_edit_plus_other_fields() -> None:
    after = copy.deepcopy(BASE)
    c = after["spec"]["template"]["spec"]["containers"][0]
    c["args"] = ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.92", "--max-model-len", "16384"]
    after["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    hint = gitops.git_hint(BASE, after, where="llama-8b.yaml")
    assert hint.command == ("vllm-remedy args set -f <manifest in Git> --set gpu-memory-utilization=0.92 "
                            "--set max-model-len=16384")
    assert hint.other == ("spec.template.spec.nodeSelector: unset -> {'nvidia.com/gpu.product': 'NVIDIA-L40S'}",)
    assert hint.patch.splitlines() == [
        "--- a/llama-8b.yaml", "+++ b/llama-8b.yaml", "@@ -19,3 +19,5 @@",
        "         - meta-llama/Llama-3.1-8B-Instruct", "         - --gpu-memory-utilization",
        "-        - '0.90'", "+        - '0.92'", '+        - --max-model-len', '+        - "16384"']


def test_git_hint_unset_flag() -> None:
    before = copy.deepcopy(BASE)
    before["spec"]["template"]["spec"]["containers"][0]["args"].append("--enforce-eager")
    hint = gitops.git_hint(before, BASE)
    assert (hint.set, hint.unset, hint.other) == ({}, ("enforce-eager",), ())
    changed = [line for line in hint.patch.splitlines() if line.startswith(("-", "+"))][2:]
    assert changed == ["-        - --enforce-eager"]


def test_verdicts_per_mode() -> None:
    owner = gitops.detect(with_meta({"argocd.argoproj.io/instance": "llm-prod"}))
    hint = gitops.GitHint(set={"max-model-len": "16384"})
    refuse = gitops.verdict("refuse", owner, "deployment llm/llama-8b", hint)
    assert (refuse.write, refuse.lines) == (False, ("git: vllm-remedy args set -f <manifest in Git> --set "
                                                    "max-model-len=16384",))
    assert refuse.refusal.startswith("deployment llm/llama-8b is managed by Argo CD Application llm-prod")
    warn, apply = (gitops.verdict(m, owner, "deployment llm/llama-8b", hint) for m in ("warn", "apply"))
    assert (warn.write, apply.write) == (True, True)
    assert warn.lines[0].startswith("warning: ") and apply.lines[0].startswith("note: ")
    assert gitops.verdict("refuse", None, "x") == gitops.Verdict(True, ())


STACK_LABELS = {"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "vllm-stack-0.1.7", "model": "llama3",
                "helm-release-name": "vllm"}
STACK_NOTES = {"meta.helm.sh/release-name": "vllm", "meta.helm.sh/release-namespace": "llm"}


def _args(obj, args):
    out = copy.deepcopy(obj)
    out["spec"]["template"]["spec"]["containers"][0]["args"] = args
    return out


def test_production_stack_hint_is_the_exact_set_paths() -> None:
    before = with_meta(STACK_LABELS, STACK_NOTES)
    after = _args(before, ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.85",
                           "--max-model-len", "16384", "--enforce-eager"])
    owner = gitops.detect(before)
    assert owner == gitops.Owner("Helm", "release", "vllm", "llm", "annotation meta.helm.sh/release-name=vllm")
    assert gitops.hint_for(owner, before, after).lines() == [
        "helm: helm upgrade vllm vllm-stack -n llm --reuse-values "
        "--set servingEngineSpec.modelSpec[<i>].vllmConfig.maxModelLen=16384 "
        "--set servingEngineSpec.modelSpec[<i>].vllmConfig.gpuMemoryUtilization=0.85 "
        "--set 'servingEngineSpec.modelSpec[<i>].vllmConfig.extraArgs={--enforce-eager}'",
        "helm: <i> is the index of the servingEngineSpec.modelSpec entry with name: llama3"]
    eager_off = _args(after, after["spec"]["template"]["spec"]["containers"][0]["args"][:5])
    assert gitops.hint_for(owner, after, eager_off).lines()[0].endswith(
        "--reuse-values --set 'servingEngineSpec.modelSpec[<i>].vllmConfig.extraArgs={}'")


def test_generic_chart_hint_names_the_flags_and_the_upgrade() -> None:
    before = with_meta({"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "vllm-0.3.1"},
                       {"meta.helm.sh/release-name": "llama"})
    after = _args(before, ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.85"])
    after["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    owner = gitops.detect(before)
    assert gitops.hint_for(owner, before, after).lines() == [
        "helm: set the values of release llm/llama that render --gpu-memory-utilization 0.85, then "
        "helm upgrade llama vllm -n llm --reuse-values -f <those values>",
        "helm: the manifest's spec.template.spec.nodeSelector: unset -> {'nvidia.com/gpu.product': 'NVIDIA-L40S'} "
        "— chart vllm's value that renders it is not known here: find it in the chart's values by hand"]


def test_a_statefulset_gets_the_values_change_as_a_deployment_does() -> None:
    before = with_meta({"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "vllm-0.3.1"},
                       {"meta.helm.sh/release-name": "llama"})
    before["kind"] = "StatefulSet"
    after = _args(before, ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.85"])
    assert gitops.hint_for(gitops.detect(before), before, after).lines() == [
        "helm: set the values of release llm/llama that render --gpu-memory-utilization 0.85, then "
        "helm upgrade llama vllm -n llm --reuse-values -f <those values>"]


def test_a_production_stack_pin_and_scale_are_modelspec_keys() -> None:
    before = with_meta(STACK_LABELS, STACK_NOTES)
    before["spec"]["template"]["spec"]["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    after = copy.deepcopy(before)
    after["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    after["spec"]["replicas"] = 3
    lines = gitops.hint_for(gitops.detect(before), before, after).lines()
    assert lines[0] == (
        "helm: helm upgrade vllm vllm-stack -n llm --reuse-values --set-json 'servingEngineSpec.modelSpec[<i>]."
        'nodeSelectorTerms=[{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", '
        '"values": ["NVIDIA-L40S"]}]}]\' --set servingEngineSpec.modelSpec[<i>].replicaCount=3')
    assert lines[2:] == ["helm: the chart renders no nodeSelector; servingEngineSpec.modelSpec[<i>].nodeSelectorTerms "
                         "renders the same pin as a required node affinity (ignored while "
                         "servingEngineSpec.modelSpec[<i>].affinity is set)"]
    unpinned = copy.deepcopy(before)
    del unpinned["spec"]["template"]["spec"]["nodeSelector"]
    assert "nodeSelectorTerms=null'" in gitops.hint_for(gitops.detect(before), before, unpinned).lines()[0]


@pytest.mark.parametrize(("mode", "write", "first"), [
    ("warn", True, "warning: deployment llm/llama-8b is managed by Helm release llm/vllm (label "
                   "app.kubernetes.io/managed-by=Helm): the next helm upgrade will revert this change; make it in the "
                   "release's values too"),
    ("apply", True, "note: deployment llm/llama-8b is managed by Helm release llm/vllm (label "
                    "app.kubernetes.io/managed-by=Helm); applying (policy gitops: apply) — make the same change in "
                    "the release's values or the next helm upgrade reverts it"),
    ("refuse", False, "deployment llm/llama-8b is managed by Helm release llm/vllm (label "
                      "app.kubernetes.io/managed-by=Helm); the next helm upgrade would revert a direct change, and "
                      "policy gitops is refuse: nothing written — make the change in the release's values"),
])
def test_helm_verdicts_follow_the_policy_stance(mode: str, write: bool, first: str) -> None:
    owner = gitops.detect(with_meta({"app.kubernetes.io/instance": "vllm", "app.kubernetes.io/managed-by": "Helm"}))
    said = gitops.verdict(mode, owner, "deployment llm/llama-8b")
    assert said.write is write
    assert (said.lines[0] if write else said.refusal) == first


@pytest.mark.parametrize("mode", ["warn", "apply", "refuse"])
def test_a_child_of_an_inference_service_is_refused_whatever_the_stance(mode: str) -> None:
    child = with_meta(ownerReferences=[{"kind": "InferenceService", "name": "qwen", "controller": True}])
    after = _args(child, ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.85"])
    owner = gitops.detect(child)
    said = gitops.verdict(mode, owner, "deployment llm/qwen-predictor", gitops.hint_for(owner, child, after))
    assert not said.write
    assert said.refusal == ("deployment llm/qwen-predictor is owned by InferenceService llm/qwen (ownerReference "
                            "InferenceService/qwen); the InferenceService controller reverts a direct change at once: "
                            "nothing written — patch the InferenceService, not its child")
    assert said.lines == ("owner: change the InferenceService llm/qwen (the vLLM args of its template: --set "
                          "gpu-memory-utilization=0.85); its controller rolls the change out to this object",)
