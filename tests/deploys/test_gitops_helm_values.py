"""The Helm hint through the real pyinfra CLI on the rehearsal cluster: a GPU pin of a vLLM production-stack engine
Deployment names the chart's values key (modelSpec nodeSelectorTerms), never a manifest path to edit by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import PIN, scenario
from fixtures.drift_world import HOST, inventory, policy
from fixtures.pyinfra_run import Rehearsal, host_lines
from fixtures.restore_world import L4_TOLERATION

rehearsal = pyinfra_run.rehearsal
STACK = {"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "vllm-stack-0.1.7", "model": "llama3",
         "helm-release-name": "vllm"}


def on_l4_stack(dep: dict[str, Any]) -> None:
    spec = dep["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]
    dep["metadata"].setdefault("labels", {}).update(STACK)
    dep["metadata"].setdefault("annotations", {})["meta.helm.sh/release-name"] = "vllm"


def test_a_production_stack_pin_gives_the_node_selector_terms_value(rehearsal: Rehearsal, tmp_path: Path) -> None:
    scenario(rehearsal, on_l4_stack, "move to the L4 pool")
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, "gitops: warn\n"))
    dry = rehearsal.pyinfra(inv, PIN, "--dry", timeout=300)
    assert dry.returncode == 0, dry.stderr
    lines = host_lines(dry.stderr, HOST)
    helm = [line for line in lines if line.startswith("helm: ")]
    assert helm[0] == (
        "helm: helm upgrade vllm vllm-stack -n llm --reuse-values --set-json 'servingEngineSpec.modelSpec[<i>]."
        'nodeSelectorTerms=[{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", '
        '"values": ["NVIDIA-L40S"]}]}]\''), helm
    assert "helm: <i> is the index of the servingEngineSpec.modelSpec entry with name: llama3" in helm
    assert not [line for line in helm if "nodeSelector." in line or "nodeSelector:" in line], helm
