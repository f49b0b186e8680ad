"""deploys/restore.py on a vLLM StatefulSet, through the real pyinfra CLI on the rehearsal cluster: the bad rollout
is rolled back as `kubectl rollout undo sts/…` does, the crash-looping pod that blocks an OrderedReady set is
deleted only when the policy allows, and real kubectl 1.32's `rollout history sts/…` agrees."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run, sim_world
from fixtures.pyinfra_run import ROOT, Rehearsal, crash_on_start, host_lines
from vllm_remedy.kube.client import JSON_PATCH
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.kube.sts_wait import wait_for_sts_rollout

rehearsal = pyinfra_run.rehearsal
HOST = "@k8s/rehearsal/llm/statefulset/llama-sts"
RESTORE = str(ROOT / "deploys" / "restore.py")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def start_set(rehearsal: Rehearsal) -> dict[str, Any]:
    """llama-8b's healthy pod template as a 2-replica StatefulSet, rolled out, then a bad rollout crash-looping."""
    client = rehearsal.client()
    template = copy.deepcopy(client.get_deployment("llm", "llama-8b")["spec"]["template"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))  # its two L40S cards go to the set
    template["metadata"] = {"labels": {"app": "llama-sts"}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "llama-sts", "namespace": "llm"},
           "spec": {"replicas": 2, "serviceName": "llama-sts", "selector": {"matchLabels": {"app": "llama-sts"}},
                    "template": template}}
    client.request("POST", client.object_path("llm", "statefulsets"), body=sts)
    clock = rehearsal.clusters["rehearsal"].clock
    assert wait_for_sts_rollout(client, "llm", "llama-sts", timeout=900, clock=clock, interval=5).ok
    current = client.request("GET", client.object_path("llm", "statefulsets", "llama-sts"))
    bad = copy.deepcopy(current)
    bad["spec"]["template"]["metadata"]["annotations"] = crash_on_start(OOM)
    client.request("PATCH", client.object_path("llm", "statefulsets", "llama-sts"), body=json_patch(current, bad),
                   content_type=JSON_PATCH)
    failed = wait_for_sts_rollout(client, "llm", "llama-sts", timeout=900, clock=clock, interval=5, fetch_log=False)
    assert (failed.outcome, failed.crash.pod) == ("crash-loop", "llama-sts-1"), failed.message
    return current


def inventory(tmp: Path, delete_pods: str) -> str:
    policy = tmp / "policy.yaml"
    policy.write_text(f"restore:\n  delete_pods: {delete_pods}\n")
    path = tmp / "inventory.py"
    path.write_text(f'hosts = [("{HOST}", {{"policy": "{policy}"}})]\n')
    return str(path)


def test_a_bad_statefulset_rollout_is_restored_in_one_run(rehearsal: Rehearsal, tmp_path: Path) -> None:
    good = start_set(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path, "blocking"), RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert any(line.startswith("roll back statefulset llm/llama-sts from revision 2 to revision 1 (") for line in lines)
    assert ("wait for revision 1 to roll out: deleted pod llama-sts-1 (policy restore.delete_pods: blocking)"
            in lines), lines
    sts = rehearsal.client().request("GET", rehearsal.client().object_path("llm", "statefulsets", "llama-sts"))
    assert sts["spec"]["template"] == good["spec"]["template"]
    status = sts["status"]
    assert (status["readyReplicas"], status["currentRevision"]) == (2, status["updateRevision"])
    sim = sim_world.Sim(rehearsal.server, rehearsal.clusters, rehearsal.kubeconfig, rehearsal.tmp)
    history = sim.kubectl("32", "-n", "llm", "rollout", "history", "sts/llama-sts", context="rehearsal")
    assert history.returncode == 0, history.stderr
    assert history.stdout.split()[3:] == ["2", "<none>", "3", "<none>"]  # revision 1 re-numbered, as kubectl's undo


def test_without_the_policy_the_blocking_pod_is_named_not_deleted_and_a_rerun_finishes(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path, "never"), RESTORE, "-y", timeout=300)
    assert got.returncode == 1
    [blocked] = [line for line in host_lines(got.stderr, HOST) if " blocked after " in line]
    assert blocked.startswith("wait for revision 1 to roll out: blocked after ")
    assert blocked.endswith(": statefulset llama-sts: podManagementPolicy OrderedReady does not move past a pod that "
                            "is not Running and Ready: delete pod llama-sts-1 for the change to take effect (policy "
                            "restore.delete_pods: never)")
    pods = rehearsal.clusters["rehearsal"].store.list("pods", "llm")[0]
    assert "llama-sts-1" in {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
    again = rehearsal.pyinfra(inventory(tmp_path, "blocking"), RESTORE, "-y", timeout=300)
    assert again.returncode == 0, again.stderr
    lines = host_lines(again.stderr, HOST)
    assert "statefulset llm/llama-sts: pods llama-sts-1 stay on another revision until deleted" in lines
    assert "finish the rollout of statefulset llm/llama-sts: deleted pod llama-sts-1 (policy restore.delete_pods: " \
           "blocking)" in lines
