"""Example inventory for a staging cluster — where new model + vLLM + flag units are tried on the same
GPU type as production before they ship (runbook: "Prevent it next time").

Same host grammar and host data as inventories/prod.py. Here the cluster has its own kubeconfig file and
the namespace form lists every vLLM Deployment of ``llm-staging`` through ``vllm_hosts`` (it runs when
the inventory is loaded and names the cluster in one line if it cannot be listed).

    pyinfra inventories/staging.py fact vllm_remedy.facts.history.RolloutHistory
"""

from pathlib import Path

_policies = Path(__file__).resolve().parent.parent / "policies"
_data = {
    "kubeconfig": "~/.kube/staging",  # host data kubeconfig: this file only, not KUBECONFIG
    "context": "staging-gpu",
    "policy": str(_policies / "llama-8b.yaml"),
}

llama_8b = (["@k8s/staging/llm-staging/llama-8b"], _data)

# To take every vLLM Deployment of the namespace instead (lists the cluster when the inventory loads):
#
# from vllm_remedy.connectors.k8s import vllm_hosts
# staging = vllm_hosts("staging", "llm-staging", context="staging-gpu", kubeconfig="~/.kube/staging",
#                      data={"policy": str(_policies / "default.yaml")})
