"""A pin whose pods only some fit on the policy's product is refused, in ``--dry`` too, unless the operator consents
with ``--data override=capacity`` (hostile15b F2, pin part).

``pinme`` serves from two L4 pods; the policy pins NVIDIA-L40S, where llama-8b holds two of the three GPUs. Before,
``--dry`` exited 0 with "note: only 1 of 2 pod(s) fit on NVIDIA-L40S nodes: the rest stay Pending", then ``-y`` wrote
the pin and its wait failed after 85 s, leaving a healthy service mid-rollout across two products. README: ``--dry``
"exits 1 exactly when ``-y`` would fail" (real pyinfra CLI, rehearsal cluster, ``--dry``, ``-y``, the prompt, and
deploys/budget.py, whose first step is the same pin)."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, PIN, prompted_run
from fixtures.drift_world import add_vllm_deployment, inventory, policy
from fixtures.dry_run import diffs, raw_host_lines
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import L4_TOLERATION, vllm_runtime, wait_until

rehearsal = pyinfra_run.rehearsal

HOST = "@k8s/rehearsal/llm/pinme"
PATH = "/apis/apps/v1/namespaces/llm/deployments/pinme"
TARGET = ("target: {namespaces: [llm], deployments: [pinme], models: [meta-llama/Llama-3.1-8B-Instruct]}\n"
          "known_good: []\n")
REFUSED = ("refused: pin deployment llm/pinme to NVIDIA-L40S: only 1 of 2 pod(s) fit on NVIDIA-L40S nodes (3 node(s), "
           "1 free GPU(s)): the rollout could not finish and would leave 1 pod(s) Pending; free NVIDIA-L40S GPUs, or "
           "pin anyway with --data override=capacity")


def pinme_on_l4(rehearsal: Rehearsal) -> str:
    """pinme: llama-8b's template on the L4 pool, two replicas Ready; the inventory naming it under an L40S policy."""
    vllm_runtime(rehearsal)
    add_vllm_deployment(rehearsal, "pinme")
    client = rehearsal.client()
    body = client.request("GET", PATH)
    spec = body["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    spec["tolerations"] = [dict(L4_TOLERATION)]
    body["spec"]["replicas"] = 2
    client.request("PUT", PATH, body=body)

    def ready() -> bool:
        live = [p for p in client.list_pods("llm", "app=pinme") if not p["metadata"].get("deletionTimestamp")]
        return len(live) == 2 and all(c.get("ready") for p in live for c in p["status"].get("containerStatuses")
                                      or [{}])
    wait_until(ready, 60, "pinme's two L4 pods to be Ready")
    return inventory(rehearsal.tmp, rehearsal.kubeconfig, policy(rehearsal.tmp, TARGET), hosts=[HOST])


def _spec(rehearsal: Rehearsal) -> tuple[Any, Any]:
    got = rehearsal.client().request("GET", PATH)
    return got["spec"], got["metadata"]["generation"]


def test_a_pin_with_room_for_only_some_pods_is_refused_in_dry_too(rehearsal: Rehearsal) -> None:
    inv = pinme_on_l4(rehearsal)
    before = _spec(rehearsal)
    for run in (rehearsal.pyinfra(inv, PIN, "--dry"), rehearsal.pyinfra(inv, PIN, "-y"),
                prompted_run(rehearsal, PIN, lambda: None, inventory=inv), rehearsal.pyinfra(inv, BUDGET, "--dry")):
        lines = raw_host_lines(run.stderr, HOST)
        assert run.returncode == 1, run.stderr  # --dry exits as -y does: the rollout could not finish
        assert REFUSED in lines, run.stderr
        assert not diffs(run.stderr, HOST), run.stderr
        assert not [line for line in lines if ": written" in line], run.stderr
    assert _spec(rehearsal) == before  # nothing written: both pods still serve from the L4 pool

    # the consent the refusal names, as the on-call would type it
    consented = rehearsal.pyinfra(inv, PIN, "--dry", "--data", "override=capacity")
    lines = raw_host_lines(consented.stderr, HOST)
    assert consented.returncode == 0, consented.stderr
    assert len(diffs(consented.stderr, HOST)) == 1, consented.stderr
    assert "note: only 1 of 2 pod(s) fit on NVIDIA-L40S nodes: the rest stay Pending" in lines, lines
    assert _spec(rehearsal) == before
