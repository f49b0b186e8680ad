"""A StatefulSet's ControllerRevisions and pods in the RolloutHistory and Pods facts' shapes (pure): restore's
decision then reads a set exactly as it reads a Deployment, a crash record on a ControllerRevision included."""

from __future__ import annotations

import copy
import json
from typing import Any

from vllm_remedy.facts.statefulset import sts_history_data, sts_pods_data
from vllm_remedy.operations.statefulset import strategy_lines
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.restore import ROLLBACK, decide_restore

UID = "0b1c"
ARGS = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "--gpu-memory-utilization", "0.90"]


def template(tag: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "s"}, "annotations": {"tag": tag}},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
                                     "command": ["vllm", "serve"], "args": list(ARGS),
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def revision(number: int, notes: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": f"s-{number}", "namespace": "llm", "labels": {"app": "s"},
                         "annotations": dict(notes or {}), "creationTimestamp": "2026-01-01T00:00:00Z",
                         "ownerReferences": [{"uid": UID, "controller": True, "kind": "StatefulSet", "name": "s"}]},
            "revision": number, "data": {"spec": {"template": {**template(str(number)), "$patch": "replace"}}}}


def pod(ordinal: int, rev: int, crashing: bool) -> dict[str, Any]:
    state = ({"waiting": {"reason": "CrashLoopBackOff"}} if crashing else {"running": {}})
    return {"metadata": {"name": f"s-{ordinal}", "labels": {"app": "s", "controller-revision-hash": f"s-{rev}"}},
            "spec": {"nodeName": "n"},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "False" if crashing else "True"}],
                       "containerStatuses": [{"name": "vllm", "ready": not crashing, "restartCount": 5 if crashing
                                              else 0, "state": state,
                                              "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}
                                              if crashing else {}}]}}


def world(strategy: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    sts = {"metadata": {"name": "s", "namespace": "llm", "uid": UID, "generation": 3},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "s"}}, "template": template("3"),
                    "updateStrategy": strategy or {"type": "RollingUpdate"}},
           "status": {"updateRevision": "s-3", "currentRevision": "s-1", "observedGeneration": 3}}
    crashed = {"vllm-remedy.io/crashed": json.dumps({"failure": "max_len_exceeds_kv", "at": "2026-01-02T00:00:00Z"})}
    return sts, [revision(1), revision(2, crashed), revision(3)], [pod(0, 1, False), pod(1, 3, True)]


def test_revisions_and_pods_read_like_a_deployments_and_restore_skips_the_recorded_one() -> None:
    sts, revisions, pods = world()
    history = sts_history_data(sts, revisions)
    assert [(r["number"], r["replicaset"], r["current"]) for r in history["revisions"]] == [
        (1, "s-1", False), (2, "s-2", False), (3, "s-3", True)]
    assert (history["current_revision"], history["kind"]) == (3, "statefulset")
    rows = sts_pods_data(sts, revisions, pods)
    assert [(p["name"], p["revision"], p["new"]) for p in rows["pods"]] == [("s-0", 1, False), ("s-1", 3, True)]
    decision = decide_restore(history, rows, Policy(), container="vllm")
    assert (decision.action, decision.revision, decision.replicaset) == (ROLLBACK, 1, "s-1"), decision
    assert any(line.startswith("revision 2 (s-2): seen crash-looping (max_len_exceeds_kv)") for line in
               decision.skipped), decision.skipped
    unrecorded = copy.deepcopy(revisions)
    unrecorded[1]["metadata"]["annotations"] = {}
    assert decide_restore(sts_history_data(sts, unrecorded), rows, Policy(), container="vllm").revision == 2


def test_strategy_lines_name_the_pods_and_what_a_partition_holds_back() -> None:
    sts, _revisions, pods = world({"type": "OnDelete"})
    assert strategy_lines(sts, pods, "s-1", "never") == [
        "then: updateStrategy OnDelete: the rollback reaches a pod only when it is deleted; pods s-1 stay on their "
        "revision until then: named, not deleted (policy restore.delete_pods: never): delete them for the rollback "
        "to take effect"]
    sts["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    partition, ordered = strategy_lines(sts, pods, "s-1", "blocking")
    assert partition.startswith("then: updateStrategy RollingUpdate partition 1: the rollback replaces only pods "
                                "with ordinal >= 1 (s-1); pods below it (s-0) keep the revision they run")
    assert ordered == ("then: podManagementPolicy OrderedReady: pods s-1 block the rollback until deleted; such pods "
                       "are deleted (policy restore.delete_pods: blocking)")
