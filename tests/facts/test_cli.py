"""Facts through the REAL pyinfra CLI (``pyinfra inventories/local.py fact vllm_remedy.facts...``) on the
rehearsal cluster seeded with the runbook's world; exact values, cross-checked with the kube layer's own reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.kube_writes import mark_known_good
from fixtures.pyinfra_run import Rehearsal, crash_on_start, fact_output, inventory
from vllm_remedy.kube.actions import read_rollout
from vllm_remedy.kube.history import Revision

rehearsal = pyinfra_run.rehearsal

HOST = "@k8s/rehearsal/llm/llama-8b"
HISTORY = "vllm_remedy.facts.history.RolloutHistory"
PODS = "vllm_remedy.facts.pods.Pods"
LOG = "vllm_remedy.facts.pods.ContainerLog"
NODES = "vllm_remedy.facts.nodes.GpuNodes"
DEPLOYMENT = "vllm_remedy.facts.deployment.Deployment"
# Real vLLM 0.6.4 log, Llama-3.1-8B at max-model-len 29000 (source: tests/data/logs/SOURCES.md).
MAX_LEN_LOG = Path(__file__).resolve().parents[1] / "data" / "logs" / "v0.6.4_rtx3090_llama8b_29k_max_len.log"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def fact(rehearsal: Rehearsal, name: str, *args: str, key: str | None = None) -> Any:
    got = rehearsal.pyinfra(inventory("local"), "fact", name, *args)
    assert got.returncode == 0, got.stderr
    return fact_output(got.stderr, key or name)[HOST]


def crash_revision(rehearsal: Rehearsal) -> None:
    """Revision 4: max-model-len 29000, and the container dies with vLLM's real max-seq-len error."""
    def bad(dep: dict[str, Any]) -> None:
        template = dep["spec"]["template"]
        template["metadata"]["annotations"] = crash_on_start(MAX_LEN_LOG.read_text())
        template["spec"]["containers"][0]["args"] = [MODEL, "--max-model-len", "29000"]

    rehearsal.change(bad, change_cause="max-model-len 29000")
    client = rehearsal.client()

    def crash_looping() -> bool:
        return any(s.get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff"
                   for p in client.list_pods("llm", "app=llama-8b")
                   for s in p["status"].get("containerStatuses") or [])

    assert rehearsal.cluster.wait_for(crash_looping, timeout=60)


def test_rollout_history_fact(rehearsal: Rehearsal) -> None:
    history = fact(rehearsal, HISTORY)
    assert (history["deployment"], history["current_revision"], history["known_good"]) == ("llama-8b", 14, [])
    rows = history["revisions"]
    assert [(r["number"], r["current"], r["change_cause"]) for r in rows] == [
        (12, False, "llama-8b on vLLM 0.6.6, default max-model-len"),
        (13, False, "vLLM 0.7.3; --max-model-len 16384 for longer RAG prompts"),
        (14, True, "vLLM 0.8.5; --max-num-seqs 64 to cap KV usage under load")]
    assert [(r["server"]["image_tag"], r["server"]["model"], r["server"]["flags"]) for r in rows] == [
        ("v0.6.6", MODEL, {"max-model-len": "8192", "gpu-memory-utilization": "0.90"}),
        ("v0.7.3", MODEL, {"max-model-len": "16384", "gpu-memory-utilization": "0.90"}),
        ("v0.8.5", MODEL, {"revision": "0e9e39f249a16976918f6564b8830bc894c89659", "max-model-len": "16384",
                           "gpu-memory-utilization": "0.90", "max-num-seqs": "64"})]
    assert {r["node_selector"]["nvidia.com/gpu.product"] for r in rows} == {"NVIDIA-L40S"}
    # the rows rebuild exactly what the kube layer computes from the same objects
    from vllm_remedy.remedies.restore import revisions

    assert revisions(history) == read_rollout(rehearsal.client(), "llm", "llama-8b").history


def test_known_good_mark_shows_in_the_history(rehearsal: Rehearsal) -> None:
    client = rehearsal.client()
    rev2: Revision = read_rollout(client, "llm", "llama-8b").history[1]
    mark_known_good(client, "llm", rev2.replicaset, at=1767225600.0, reason="stable 30m at peak")
    history = fact(rehearsal, HISTORY)
    assert history["known_good"] == [13]
    row = history["revisions"][1]
    assert (row["known_good"], row["known_good_at"], row["known_good_reason"], row["replicaset"]) == (
        True, "2026-01-01T00:00:00Z", "stable 30m at peak", rev2.replicaset)
    assert [r["known_good"] for r in history["revisions"]] == [False, True, False]


def test_pods_fact_on_a_healthy_rollout(rehearsal: Rehearsal) -> None:
    pods = fact(rehearsal, PODS)
    assert {k: pods[k] for k in ("container", "new_revision", "total", "ready", "crash_looping", "unschedulable",
                                 "failures")} == {
        "container": "vllm", "new_revision": 14, "total": 2, "ready": 2, "crash_looping": [], "unschedulable": [],
        "failures": {}}
    live = {p["name"]: p["node"] for p in rehearsal.client().list_pods("llm", "app=llama-8b")
            for p in [{"name": p["metadata"]["name"], "node": p["spec"].get("nodeName")}]}
    assert {p["name"]: p["node"] for p in pods["pods"]} == live
    assert {(p["revision"], p["new"], p["ready"], p["restarts"]) for p in pods["pods"]} == {(14, True, True, 0)}
    assert [c["startup"] for p in pods["pods"] for c in p["containers"]] == [None, None]


def test_pods_fact_classifies_the_crashed_containers_previous_log(rehearsal: Rehearsal) -> None:
    crash_revision(rehearsal)
    pods = fact(rehearsal, PODS)
    assert (pods["new_revision"], pods["failures"]) == (15, {"max_len_exceeds_kv": 1})
    [crashed] = [p for p in pods["pods"] if p["crash_looping"]]
    assert pods["crash_looping"] == [crashed["name"]]
    assert (crashed["revision"], crashed["new"], crashed["ready"]) == (15, True, False)
    [vllm] = crashed["containers"]
    assert (vllm["crash_looping"], vllm["exit_code"], vllm["terminated_reason"], vllm["host_oom_killed"]) == (
        True, 1, "Error", False)
    # The three phases of a crash loop: waiting in back-off, running while vLLM reloads, or terminated at the
    # instant of a death — then the death is the current log, not the previous one.
    assert (vllm["state"], vllm["waiting_reason"]) in {
        ("waiting", "CrashLoopBackOff"), ("running", None), ("terminated", None)}
    startup = vllm["startup"]
    assert (startup["failure"], startup["previous"]) == ("max_len_exceeds_kv", vllm["state"] != "terminated")
    report = startup["report"]
    assert (report["gpu_blocks"], report["kv_cache_tokens"], report["max_model_len"], report["max_concurrency"],
            report["weights_gib"], report["kv_cache_gib"]) == (1478, 23648, 29000, 0.82, 14.9888, 2.89)
    assert report["failure_detail"] == {"max_model_len": 29000, "kv_cache_tokens": 23648,
                                        "suggested_max_model_len": 23648}
    # the old revision keeps serving (maxUnavailable 0) and is not blamed
    assert sorted((p["revision"], p["ready"]) for p in pods["pods"] if not p["crash_looping"]) == [
        (14, True), (14, True)]
    # logs=none: the same picture, no log read
    quiet = fact(rehearsal, PODS, "logs=none", key=f"{PODS} (logs=none)")
    assert [c["startup"] for p in quiet["pods"] for c in p["containers"]] == [None, None, None]
    assert quiet["crash_looping"] == pods["crash_looping"]


def test_container_log_fact(rehearsal: Rehearsal) -> None:
    crash_revision(rehearsal)
    pods = fact(rehearsal, PODS, "logs=none", key=f"{PODS} (logs=none)")
    pod = pods["crash_looping"][0]
    got = fact(rehearsal, LOG, f"pod={pod}", "container=vllm", "previous=true",
               key=f"{LOG} (container=vllm, pod={pod}, previous=True)")
    assert (got["pod"], got["container"], got["previous"], got["failure"]) == (
        pod, "vllm", True, "max_len_exceeds_kv")
    assert got["lines"] == ["starting container vllm (image vllm/vllm-openai:v0.8.5)",
                            *MAX_LEN_LOG.read_text().splitlines(), "exiting with code 1"]


def test_pods_fact_reports_unschedulable_pods_with_the_schedulers_words(rehearsal: Rehearsal) -> None:
    def to_l4(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}

    rehearsal.change(to_l4, change_cause="move to L4")
    client = rehearsal.client()
    assert rehearsal.cluster.wait_for(lambda: any(
        c.get("reason") == "Unschedulable" for p in client.list_pods("llm", "app=llama-8b")
        for c in p["status"].get("conditions") or []), timeout=30)
    pods = fact(rehearsal, PODS)
    [pending] = [p for p in pods["pods"] if p["unschedulable"]]
    assert pods["unschedulable"] == [pending["name"]]
    assert (pending["revision"], pending["new"], pending["node"], pending["phase"]) == (15, True, None, "Pending")
    assert pending["unschedulable"] == ("0/6 nodes are available: 2 node(s) had untolerated taint "
                                        "{nvidia.com/gpu: present}, 4 node(s) didn't match Pod's node "
                                        "affinity/selector. preemption: 0/6 nodes are available: "
                                        "6 Preemption is not helpful for scheduling.")


def test_gpu_nodes_fact(rehearsal: Rehearsal) -> None:
    nodes = fact(rehearsal, NODES)
    assert nodes["products"] == {
        "NVIDIA-A10G": {"nodes": 1, "allocatable": 1, "requested": 0, "free": 1, "schedulable_free": 1},
        "NVIDIA-L4": {"nodes": 2, "allocatable": 2, "requested": 0, "free": 2, "schedulable_free": 2},
        "NVIDIA-L40S": {"nodes": 3, "allocatable": 3, "requested": 2, "free": 1, "schedulable_free": 1}}
    pods = {f"llm/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in rehearsal.client().list_pods("llm", "app=llama-8b")}
    assert nodes["deployment_pods"] == pods
    by_name = {n["name"]: n for n in nodes["nodes"]}
    assert sorted(by_name) == ["gke-l4-pool-1", "gke-l4-pool-2", "gpu-a10g-1", "gpu-l40s-1", "gpu-l40s-2",
                               "gpu-l40s-3"]
    l4 = by_name["gke-l4-pool-1"]
    assert (l4["product"], l4["memory_mib"], l4["taints"], l4["consumers"]) == (
        "NVIDIA-L4", 23034, [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], [])
    for pod, node in pods.items():
        assert by_name[node]["consumers"] == [{"pod": pod, "gpus": 1, "ours": True}]
        assert (by_name[node]["requested"], by_name[node]["free"]) == (1, 0)


def test_deployment_fact_follows_a_new_revision(rehearsal: Rehearsal) -> None:
    crash_revision(rehearsal)
    dep = fact(rehearsal, DEPLOYMENT)
    assert (dep["revision"], dep["change_cause"], dep["server"]["flags"], dep["gpus_per_pod"]) == (
        15, "max-model-len 29000", {"max-model-len": "29000"}, 1)
    assert dep["replicas"]["desired"] == 2 and dep["replicas"]["updated"] == 1
