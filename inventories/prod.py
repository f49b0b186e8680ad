"""Example inventory for production clusters — copy it and replace names with yours.

Each host is one vLLM Deployment: ``@k8s/<cluster>/<namespace>/<deployment>``. ``<cluster>`` is a kube
context name, or an alias resolved through ``k8s_contexts`` (needed when the context name contains '/',
as EKS ARNs do). ``@k8s/<cluster>/<namespace>`` expands to every Deployment there that runs vLLM, using
the default kubeconfig (``KUBECONFIG`` or ~/.kube/config) and ``<cluster>`` as the context.

Host/group data the @k8s connector reads:
    kubeconfig     path of the kubeconfig (default: kubectl's rules; in a CronJob: the pod's service account)
    context        kube context (default: k8s_contexts[<cluster>], else <cluster>)
    k8s_contexts   {alias: context} or {alias: {context: ..., kubeconfig: ...}}
    policy         policy YAML for these Deployments (connect fails if its target does not cover them)
    container      the vLLM container's name, only when several containers of a pod run vLLM

    pyinfra inventories/prod.py fact vllm_remedy.facts.pods.Pods
    pyinfra inventories/prod.py deploys/restore.py --dry
"""

from pathlib import Path

_policies = Path(__file__).resolve().parent.parent / "policies"

# Cluster aliases: the host names stay short and stable while contexts differ per laptop/CI runner.
_contexts = {
    "prod-eu": "gke_acme-ml_europe-west4_prod-gpu",
    "prod-us": {"context": "arn:aws:eks:us-east-1:123456789012:cluster/prod-gpu",
                "kubeconfig": "~/.kube/eks-prod"},
}

# One group per service: the policy is group data, so every host of the group is held to it.
llama_8b = (
    [
        "@k8s/prod-eu/llm/llama-8b",
        "@k8s/prod-us/llm/llama-8b",
    ],
    {"k8s_contexts": _contexts, "policy": str(_policies / "llama-8b.yaml")},
)

# Every other vLLM Deployment in the namespace, under the default policy. The namespace form expands at
# inventory load with the default kubeconfig and the cluster name as context, so it takes a real context
# name here, not an alias; for aliases use vllm_remedy.connectors.k8s.vllm_hosts(...) in this file.
# shared = (["@k8s/gke_acme-ml_europe-west4_prod-gpu/llm"], {"policy": str(_policies / "default.yaml")})
