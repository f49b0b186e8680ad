"""Which pods a StatefulSet's wait will find stuck once a write moves its update revision (``sts_wait.stuck_after``,
what ``--dry`` fails on under ``restore.delete_pods: never``), and whose template pods may be deleted onto
(``sts_wait.foreign_update``, every strategy): pure, on API dicts."""

from __future__ import annotations

from typing import Any

from fixtures.sts_objects import pod, sset
from vllm_remedy.kube.annotations import Keys, template_digest
from vllm_remedy.kube.sts_wait import foreign_update, stuck_after, stuck_pods

ORDERED = {"type": "RollingUpdate"}
KEY = Keys("vllm-remedy.io/").last_action_template



def test_under_ordered_ready_only_crash_looping_pods_off_the_target_are_stuck() -> None:
    pods = [pod("s-0", "old"), pod("s-1", "old", ready=False, crashing=True), pod("s-2", "old", ready=False)]
    assert stuck_after(sset(ORDERED), pods, ["s-0", "s-1", "s-2"]) == ["s-1"]  # s-2 merely starting
    assert stuck_after(sset(ORDERED), pods, ["s-0"]) == []
    # what the wait itself finds once the controller has the update revision ("new"): the same pod
    assert stuck_pods(sset(ORDERED), pods) == ["s-1"]


def test_under_on_delete_every_pod_off_the_target_and_under_parallel_none() -> None:
    pods = [pod("s-0", "old"), pod("s-1", "old", ready=False, crashing=True)]
    assert stuck_after(sset({"type": "OnDelete"}), pods, ["s-0", "s-1"]) == ["s-0", "s-1"]
    parallel = sset(ORDERED)
    parallel["spec"]["podManagementPolicy"] = "Parallel"
    assert stuck_after(parallel, pods, ["s-0", "s-1"]) == []


def test_a_template_is_ours_only_when_our_last_write_recorded_it_under_every_strategy() -> None:
    template: dict[str, Any] = {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "v"}]}}
    for strategy in (ORDERED, {"type": "OnDelete"}):
        sts = sset(strategy)
        sts["spec"]["template"] = template
        assert foreign_update(sts, KEY)  # nothing of ours on it: a colleague's
        sts["metadata"]["annotations"] = {KEY: template_digest(template)}
        assert not foreign_update(sts, KEY)
        sts["spec"]["template"] = {**template, "spec": {"containers": [{"name": "v", "env": [{"name": "X"}]}]}}
        assert foreign_update(sts, KEY)  # edited after our write
