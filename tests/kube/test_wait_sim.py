"""kube/ against the rehearsal cluster (real HTTP server, real controllers at 60x): crash loop → wait fails
fast with the classified log → choose + undo → wait succeeds; history agrees with real kubectl.

The crash uses the plain runtime's hooks (exit code + log lines as pod annotations), so this stays a test
of the Kubernetes layer, independent of the vLLM simulator.
"""

from __future__ import annotations

import pytest

from fixtures import sim_world
from fixtures.kube_objects import MAX_LEN_LOG
from fixtures.sim_world import Sim, deployment
from vllm_remedy.kube.actions import read_rollout, undo
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import ConflictError
from vllm_remedy.kube.gpus import pod_gpu
from vllm_remedy.kube.history import history_table
from vllm_remedy.kube.patch import apply_deployment_patch, json_patch
from vllm_remedy.kube.rollout import RULE_DIFFERENT, choose_rollback
from vllm_remedy.kube.wait import wait_for_rollout
from vllm_remedy.sim.runtime import EXIT_AFTER, EXIT_CODE, LOG_LINES

live_sim = sim_world.live_sim  # one cluster "a", controllers at 60x, one L40S node


def test_crash_loop_then_restore_on_the_rehearsal_cluster(live_sim: Sim) -> None:
    cluster = live_sim.clusters["a"]
    client = KubeClient.for_context("a", kubeconfig=str(live_sim.kubeconfig))
    client.request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=deployment(replicas=1))
    first = wait_for_rollout(client, "llm", "llama-8b", timeout=600, clock=cluster.clock, interval=2)
    assert (first.ok, first.outcome) == (True, "rolled-out")

    # revision 2: the container dies at start with vLLM's max-seq-len error
    current = client.get_deployment("llm", "llama-8b")
    bad = dict(current, spec=dict(current["spec"], template=dict(current["spec"]["template"])))
    bad["spec"]["template"]["metadata"] = dict(bad["spec"]["template"]["metadata"], annotations={
        EXIT_CODE: "1", EXIT_AFTER: "2", LOG_LINES: MAX_LEN_LOG.rstrip("\n")})
    apply_deployment_patch(client, "llm", "llama-8b", json_patch(current, bad))
    failed = wait_for_rollout(client, "llm", "llama-8b", timeout=600, clock=cluster.clock, interval=2)
    assert (failed.ok, failed.outcome) == (False, "crash-loop"), failed
    assert failed.crash.failure == "max_len_exceeds_kv"
    assert failed.crash.exit_code == 1 and failed.crash.terminated_reason == "Error"
    assert failed.elapsed < 600  # well before the progress deadline kubectl would sit through

    state = read_rollout(client, "llm", "llama-8b")
    got = live_sim.kubectl("32", "-n", "llm", "rollout", "history", "deploy/llama-8b")
    assert got.stdout == "deployment.apps/llama-8b \n" + history_table(state.history) + "\n"
    choice = choose_rollback(state.history, 2)
    assert (choice.revision.number, choice.rule) == (1, RULE_DIFFERENT)

    stale = read_rollout(client, "llm", "llama-8b")
    plan, _ = undo(client, "llm", "llama-8b", choice.revision.number, reason="revision 2 crash-loops", at=0.0,
                   state=state)
    assert plan.message == "rolled back"
    with pytest.raises(ConflictError):  # planned against the pre-undo spec: refused, nothing written
        undo(client, "llm", "llama-8b", 1, reason="a second operator", at=60.0, state=stale)
    restored = wait_for_rollout(client, "llm", "llama-8b", timeout=600, clock=cluster.clock, interval=2)
    assert (restored.ok, restored.outcome) == (True, "rolled-out")
    dep = client.get_deployment("llm", "llama-8b")
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert "annotations" not in dep["spec"]["template"]["metadata"]

    pods = client.list_pods("llm", "app=llama-8b")
    live_pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    node = client.get_node(live_pods[0]["spec"]["nodeName"])
    on_node = client.list_pods(None, field_selector=f"spec.nodeName={node['metadata']['name']}")
    gpu = pod_gpu(live_pods[0], node, on_node)
    assert (gpu.node, gpu.gpus, gpu.node_gpus.product.value, gpu.node_gpus.allocatable) == (
        "gpu-1", 1, "NVIDIA-L40S", 4)
