"""LeaderWorkerSet history and rollback planned from ControllerRevisions, and the leader/worker flag check (pure)."""

from __future__ import annotations

import copy

import pytest

from fixtures.lws_world import BAD_ARGS, vllm_lws
from vllm_remedy.errors import UserError
from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.lws_history import check_consistent, flag_disagreement, lws_history, plan_undo, update_hash
from vllm_remedy.vllm.parallel import group_flags, world_size

UID = "u-1"


def lws_with(args: list[str]) -> dict:
    lws = vllm_lws()
    lws["metadata"].update(uid=UID, resourceVersion="42")
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"] = args
    return lws


def revision(lws: dict, number: int, digest: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": number,
            "metadata": {"name": f"qwen-lws-{digest}", "labels": {"leaderworkerset.sigs.k8s.io/name": "qwen-lws",
                                                                 "leaderworkerset.sigs.k8s.io/template-revision-hash":
                                                                     digest},
                         "ownerReferences": [{"uid": UID, "controller": True, "kind": "LeaderWorkerSet",
                                              "name": "qwen-lws"}]},
            "data": {"spec": {"leaderWorkerTemplate": {**copy.deepcopy(lws["spec"]["leaderWorkerTemplate"]),
                                                       "$patch": "replace"}}}}


def test_undo_writes_the_previous_template_back_guarded_by_resource_version() -> None:
    good, bad = lws_with(vllm_lws()["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0][
        "args"]), lws_with(BAD_ARGS)
    revisions = [revision(good, 1, "aaa"), revision(bad, 2, "bbb"),
                 {**revision(good, 3, "ccc"), "metadata": {"name": "other", "labels": {}}}]  # not the set's
    assert update_hash(bad, revisions) == "bbb"
    assert [(r.number, r.current) for r in lws_history(bad, revisions)] == [(1, False), (2, True)]
    plan = plan_undo(bad, revisions)
    assert (plan.revision, plan.controller_revision, plan.skipped) == (1, "qwen-lws-aaa", False)
    assert plan.patch == [{"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
                          {"op": "replace", "path": "/spec/leaderWorkerTemplate",
                           "value": good["spec"]["leaderWorkerTemplate"]}]
    assert plan_undo(good, revisions[:2]).skipped  # already on revision 1's template (before its re-numbering)
    assert plan_undo(lws_with(good["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"]),
                     [revision(bad, 1, "bbb"), revision(good, 2, "aaa")]).lwt == bad["spec"]["leaderWorkerTemplate"]
    with pytest.raises(RolloutError, match="no last revision to roll back to"):
        plan_undo(bad, revisions[1:2])


def test_leader_and_worker_must_agree_on_memory_flags_when_both_run_vllm() -> None:
    lws = lws_with(BAD_ARGS)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert flag_disagreement(lwt) is None  # workers that only join Ray carry no engine flags
    worker = copy.deepcopy(lwt["leaderTemplate"]["spec"]["containers"][0])
    lwt["workerTemplate"]["spec"]["containers"] = [{**worker, "name": "vllm-worker"}]
    assert flag_disagreement(lwt) is None
    lwt["workerTemplate"]["spec"]["containers"][0]["args"] = [a if a != "2" else "4" for a in worker["args"]]
    with pytest.raises(UserError, match=r"^revision 3: leader and worker templates disagree on "
                                        r"--pipeline-parallel-size \(leader 2, worker 4\); make them agree"):
        check_consistent(lwt, "revision 3")


def test_the_memory_model_sees_tp_times_pp() -> None:
    flags = {"tensor-parallel-size": "4", "pipeline-parallel-size": "2", "max-model-len": "8192"}
    assert world_size(flags) == 8
    assert group_flags(flags) == {"tensor-parallel-size": "8", "max-model-len": "8192"}
    assert group_flags({"max-model-len": "8192"}) == {"max-model-len": "8192"}
