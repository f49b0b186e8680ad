"""remedies.lws_flags.with_leader: the leader planned as a Deployment's template is, the workers following (pure)."""

from __future__ import annotations

import copy

from fixtures.lws_world import GOOD_ARGS, vllm_lws
from vllm_remedy.kube.lws_history import check_consistent, leader_template
from vllm_remedy.remedies.lws_flags import with_leader


def _lwt(worker_runs_vllm: bool = False) -> dict:
    lwt = vllm_lws()["spec"]["leaderWorkerTemplate"]
    if worker_runs_vllm:
        worker = copy.deepcopy(lwt["leaderTemplate"]["spec"]["containers"][0])
        lwt["workerTemplate"]["spec"]["containers"] = [{**worker, "name": "vllm-worker"}]
    return lwt


def _with_args(template: dict, args: list[str]) -> dict:
    new = copy.deepcopy(template)
    new["spec"]["containers"][0]["args"] = args
    return new


def test_workers_that_only_join_ray_are_left_alone() -> None:
    lwt = _lwt()
    leader = _with_args(leader_template(lwt), [*GOOD_ARGS, "--enforce-eager"])
    new = with_leader(lwt, leader)
    assert new["leaderTemplate"] == leader and new["workerTemplate"] == lwt["workerTemplate"]


def test_a_worker_running_vllm_gets_the_same_flag_edits_and_stays_consistent() -> None:
    lwt = _lwt(worker_runs_vllm=True)
    args = [*GOOD_ARGS[:2], "8192", *GOOD_ARGS[3:], "--enforce-eager"]
    new = with_leader(lwt, _with_args(leader_template(lwt), args))
    assert new["workerTemplate"]["spec"]["containers"][0]["args"] == args
    check_consistent(new, "lws")  # raises when leader and workers disagree
    back = with_leader(new, _with_args(leader_template(new), GOOD_ARGS))  # a flag removed comes off the workers too
    assert back["workerTemplate"]["spec"]["containers"][0]["args"] == GOOD_ARGS


def test_a_new_gpu_pin_on_the_leader_is_copied_to_the_workers() -> None:
    lwt = _lwt()
    leader = copy.deepcopy(leader_template(lwt))
    leader["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    new = with_leader(lwt, leader)
    assert new["workerTemplate"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def test_a_one_template_set_is_its_own_leader() -> None:
    lwt = _lwt()
    del lwt["leaderTemplate"]
    lwt["workerTemplate"] = vllm_lws()["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    leader = _with_args(lwt["workerTemplate"], [*GOOD_ARGS, "--enforce-eager"])
    assert with_leader(lwt, leader) == {**lwt, "workerTemplate": leader}
