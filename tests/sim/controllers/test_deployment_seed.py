"""The runbook seed's Deployment history: revisions 12-14 as the controllers make them, rolled out once.

Moved out of ``test_deployment.py`` (the controllers' revision semantics on a fresh cluster): this test starts its
own cluster from the ``runbook`` seed, not the shared fixture.
"""

from __future__ import annotations

import copy

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.controllers.hashing import pod_template_hash
from vllm_remedy.sim.controllers.util import controlled_by, pod_ready

DEPLOY, RS = "deployments.apps", "replicasets.apps"


def ro_rev(rs: dict) -> int:
    return int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"])


def test_runbook_seed_history_ends_at_revision_14_healthy_without_rolling_each_revision():
    fresh = Cluster("seeded", clock=Clock(speed=600))
    fresh.start()
    try:
        fresh.apply_seed("runbook")
        d = fresh.store.get(DEPLOY, "llm", "llama-8b")
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "14"
        revs = {ro_rev(rs): rs for rs in fresh.store.list(RS, "llm")[0]}
        assert sorted(revs) == [12, 13, 14]
        assert [revs[r]["spec"]["replicas"] for r in (12, 13, 14)] == [0, 0, 2]
        assert [revs[r]["metadata"]["annotations"]["kubernetes.io/change-cause"] for r in (12, 13, 14)] == [
            "llama-8b on vLLM 0.6.6, default max-model-len",
            "vLLM 0.7.3; --max-model-len 16384 for longer RAG prompts",
            "vLLM 0.8.5; --max-num-seqs 64 to cap KV usage under load"]
        for r in (12, 13, 14):  # every one is what the controller makes: owner, hash label/selector/name
            rs = revs[r]
            tpl_hash = pod_template_hash(rs["spec"]["template"])
            assert rs["metadata"]["name"] == f"llama-8b-{tpl_hash}"
            assert rs["metadata"]["labels"] == {"app": "llama-8b", "pod-template-hash": tpl_hash}
            assert rs["spec"]["selector"] == {"matchLabels": {"app": "llama-8b", "pod-template-hash": tpl_hash}}
            assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == tpl_hash
            assert controlled_by(rs, d["metadata"]["uid"])
            assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "2"
        stamps = [revs[r]["metadata"]["creationTimestamp"] for r in (12, 13, 14)]
        assert stamps == sorted(stamps) and d["metadata"]["creationTimestamp"] == stamps[0] < stamps[1]
        assert revs[13]["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.7.3"
        container = revs[14]["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == "vllm/vllm-openai:v0.8.5"
        assert [*container["command"], *container["args"]] == [
            "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
            "--revision", "0e9e39f249a16976918f6564b8830bc894c89659", "--max-model-len", "16384",
            "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
        assert revs[14]["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
        pods = fresh.store.list("pods", "llm")[0]
        assert len(pods) == 2 and all(pod_ready(p) for p in pods)
        assert {p["spec"]["nodeName"] for p in pods} <= {"gpu-l40s-1", "gpu-l40s-2", "gpu-l40s-3"}
        # one rollout (both pods loading in parallel), not one per revision: counted in the controllers' own
        # Events rather than timed, since cluster time is wall time x600 and a loaded CI box inflates it.
        events = fresh.store.list("events", "llm")[0]
        rs14 = revs[14]["metadata"]["name"]
        assert [e["message"] for e in events if e["reason"] == "ScalingReplicaSet"] == [
            f"Scaled up replica set {rs14} from 0 to 2"]
        created = [e["message"] for e in events if e["reason"] == "SuccessfulCreate"]
        assert len(created) == 2 and all(m.startswith(f"Created pod: {rs14}-") for m in created)
        assert sum(e["reason"] == "Started" for e in events) == 2
        nodes = {n["metadata"]["name"]: n for n in fresh.store.list("nodes")[0]}
        assert nodes["gke-l4-pool-1"]["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-L4"
        assert nodes["gpu-l40s-1"]["status"]["allocatable"]["nvidia.com/gpu"] == "1"
        # kubectl rollout undo --to-revision=13: the seeded ReplicaSet is reused, as the controller's own would be
        undo = copy.deepcopy(revs[13]["spec"]["template"])
        del undo["metadata"]["labels"]["pod-template-hash"]
        fresh.store.mutate(DEPLOY, "llm", "llama-8b", lambda o: o["spec"].__setitem__("template", undo))
        assert fresh.wait_for(lambda: sorted(ro_rev(rs) for rs in fresh.store.list(RS, "llm")[0]) == [12, 14, 15], 5)
        reused = {ro_rev(rs): rs for rs in fresh.store.list(RS, "llm")[0]}[15]
        assert reused["metadata"]["name"] == revs[13]["metadata"]["name"]
        assert reused["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "13"
    finally:
        fresh.stop()
