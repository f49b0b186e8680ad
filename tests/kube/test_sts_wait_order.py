"""Which pods a StatefulSet wait deletes next under OnDelete (``sts_wait.next_deletions``), and the pods a partition's
line names while the controller replaces one (``sts_rollout.update_lines``): pure, on API dicts."""

from __future__ import annotations

from fixtures.sts_objects import pod, sset
from vllm_remedy.kube.sts_wait import next_deletions, rows_rolled_out
from vllm_remedy.operations.sts_rollout import update_lines

ON_DELETE = {"type": "OnDelete"}


def test_pods_that_serve_nothing_go_first_all_at_once() -> None:
    pods = [pod("s-0", "old"), pod("s-1", "old", ready=False, crashing=True), pod("s-2", "old", ready=False)]
    assert next_deletions(sset(ON_DELETE), pods) == ["s-2", "s-1"]


def test_ready_pods_go_one_at_a_time_highest_ordinal_first_once_the_others_serve_the_update() -> None:
    assert next_deletions(sset(ON_DELETE), [pod("s-0", "old"), pod("s-1", "old"), pod("s-2", "old")]) == ["s-2"]
    assert next_deletions(sset(ON_DELETE), [pod("s-0", "old"), pod("s-1", "old"),
                                            pod("s-2", "new", ready=False)]) == []  # its replacement loads
    assert next_deletions(sset(ON_DELETE), [pod("s-0", "old"), pod("s-1", "old")]) == []  # not yet recreated
    assert next_deletions(sset(ON_DELETE), [pod("s-0", "old"), pod("s-1", "old"), pod("s-2", "new")]) == ["s-1"]
    assert next_deletions(sset(ON_DELETE), [pod("s-0", "new"), pod("s-1", "new"), pod("s-2", "new")]) == []


def test_a_missing_or_loading_pod_is_a_rollout_under_way() -> None:
    row = {"new": True, "ready": True}
    assert rows_rolled_out(sset(ON_DELETE, 2), [row, row])
    assert not rows_rolled_out(sset(ON_DELETE, 2), [row])  # killed right after deleting the other
    assert not rows_rolled_out(sset(ON_DELETE, 2), [row, {"new": True, "ready": False}])


def test_a_partition_names_the_same_pods_while_one_is_replaced() -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    before = update_lines(sset(strategy, 2), [pod("s-0", "old"), pod("s-1", "old")], "blocking")
    for mid in ([pod("s-0", "old"), pod("s-1", "old", deleting=True)], [pod("s-0", "old")]):
        assert update_lines(sset(strategy, 2), mid, "blocking") == before
    assert "(s-1); pods below it (s-0)" in before[0]
