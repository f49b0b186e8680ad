"""Our undo keeps the Deployment's own annotations, which kubectl's drops, and names each one it changes (F1)."""

from __future__ import annotations

from fixtures.kube_objects import incident
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.rollout import annotation_changes, plan_undo

NOW = 1_741_000_000.0
ARGO = "argocd.argoproj.io/tracking-id"


def test_undo_keeps_what_kubectl_drops_and_sets_what_kubectl_sets() -> None:
    dep, rss = incident()
    dep["metadata"]["annotations"].update({ARGO: "llm-app:apps/Deployment:llm/llama-8b", "team": "ml-infra",
                                           "kubernetes.io/change-cause": "bad change",
                                           "vllm-remedy.io/enforce-eager-expires": "2025-03-03T12:00:00Z"})
    rss[3]["metadata"]["annotations"].update({"team": "ml-platform", "vllm-remedy.io/crashed": "{}"})
    plan = plan_undo(dep, rss, 14, at=NOW, reason="r")
    kubectl = plan.kubectl_patch[1]["value"]
    assert ARGO not in kubectl and kubectl["team"] == "ml-platform"  # kubectl's undo: replaced wholesale
    ours = plan.patch[2]["value"]
    assert ours[ARGO] == "llm-app:apps/Deployment:llm/llama-8b"  # the Deployment's own: kept
    assert ours["team"] == "ml-platform"  # what kubectl's undo sets: set
    assert "vllm-remedy.io/crashed" not in ours and "vllm-remedy.io/enforce-eager-expires" not in ours
    assert annotation_changes(dep, rss[3]["metadata"]["annotations"], Keys()) == [
        ("team", "ml-infra", "ml-platform"),
        ("vllm-remedy.io/enforce-eager-expires", "2025-03-03T12:00:00Z", None)]
