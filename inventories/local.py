"""Inventory for the rehearsal cluster (``vllm-remedy sim up``): the runbook's ``llm/llama-8b``.

The cluster is found the way kubectl would find it when ``KUBECONFIG`` is set; otherwise at the path
``sim up`` writes by default (``$XDG_STATE_HOME``, else ``~/.local/state``, ``/vllm-remedy/sim/kubeconfig``).
``sim up`` names its context ``rehearsal``, hence the host name.

    vllm-remedy sim up --background
    pyinfra inventories/local.py fact vllm_remedy.facts.history.RolloutHistory
    pyinfra inventories/local.py deploys/restore.py -y
"""

import os
from pathlib import Path

from vllm_remedy.commands.sim import default_state

_repo = Path(__file__).resolve().parent.parent
_data = {"policy": str(_repo / "policies" / "llama-8b.yaml")}
if not os.environ.get("KUBECONFIG"):
    _data["kubeconfig"] = str(default_state() / "kubeconfig")

# A group with data: every host below is a vLLM Deployment governed by the llama-8b policy.
llama = (["@k8s/rehearsal/llm/llama-8b"], _data)
