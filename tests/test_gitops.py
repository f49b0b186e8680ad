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
])
def test_detect_owner(obj, expected) -> None:
    owner = gitops.detect(obj)
    assert owner is not None
    assert (owner.tool, owner.kind, owner.name, owner.namespace, owner.certain) == expected


@pytest.mark.parametrize("obj", [
    BASE,
    with_meta({"app.kubernetes.io/instance": "vllm", "app.kubernetes.io/managed-by": "Helm"}),
    with_meta({"app.kubernetes.io/instance": "vllm"}, {"meta.helm.sh/release-name": "vllm"}),
    with_meta({"kustomize.toolkit.fluxcd.io/name": "apps"}, {"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}),
    with_meta({"argocd.argoproj.io/instance": "llm"}, ownerReferences=[{"kind": "Deployment", "controller": True}]),
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
