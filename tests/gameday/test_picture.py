"""The game-day picture's inputs: which pods count as crash-looping, where mark labels go, the figures quoted.

The crash-loop states below are the rehearsal kubelet's own, recorded while revision 15 crash-looped
(a vLLM container loads the model for ~85 s of cluster time, dies, and is restarted after 10 s, 20 s,
40 s ... of back-off): most of a crash loop reads ``running``, only the back-off reads CrashLoopBackOff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vllm_remedy.gameday.observe import in_crash_loop
from vllm_remedy.gameday.picture import Placed, outage_seconds, place_labels, subtitle, template_changes
from vllm_remedy.gameday.timeline import ACTION, ACTION_END, DETECTION, FAULT, ROLLOUT_DONE, Sample, Timeline

TERMINATED = {"exitCode": 1, "reason": "Error", "startedAt": "2026-12-02T13:31:02Z",
              "finishedAt": "2026-12-02T13:32:27Z", "containerID": "containerd://5f0c"}


def pod(*statuses: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "llama-8b-5f77bbd889-2wzwj"}, "status": {"containerStatuses": list(statuses)}}


def status(state: dict[str, Any], *, restarts: int = 0, ready: bool = False, last: dict[str, Any] | None = None,
           name: str = "vllm") -> dict[str, Any]:
    return {"name": name, "ready": ready, "restartCount": restarts, "state": state, "lastState": last or {}}


def test_a_container_loading_again_after_a_crash_is_crash_looping():
    loading_again = status({"running": {"startedAt": "2026-12-02T13:32:27Z"}}, restarts=1,
                           last={"terminated": TERMINATED})
    assert in_crash_loop(pod(loading_again)) is True


def test_back_off_and_the_moment_of_death_are_crash_looping():
    back_off = status({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed"}},
                      restarts=1, last={"terminated": TERMINATED})
    just_died = status({"terminated": TERMINATED}, restarts=0)
    assert in_crash_loop(pod(back_off)) is True
    assert in_crash_loop(pod(just_died)) is True


def test_healthy_or_first_start_or_recovered_is_not_crash_looping():
    first_load = status({"running": {"startedAt": "2026-12-02T13:31:02Z"}})
    creating = status({"waiting": {"reason": "ContainerCreating"}})
    recovered = status({"running": {"startedAt": "2026-12-02T13:40:00Z"}}, restarts=3, ready=True,
                       last={"terminated": TERMINATED})
    completed = status({"terminated": dict(TERMINATED, exitCode=0, reason="Completed")})
    for case in (first_load, creating, recovered, completed):
        assert in_crash_loop(pod(case)) is False, case
    assert in_crash_loop({"metadata": {"name": "pending"}, "status": {"phase": "Pending"}}) is False


def test_only_the_named_container_counts():
    sidecar = status({"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4, name="proxy",
                     last={"terminated": TERMINATED})
    vllm = status({"running": {}}, ready=True)
    assert in_crash_loop(pod(sidecar, vllm), "vllm") is False
    assert in_crash_loop(pod(sidecar, vllm), "proxy") is True
    assert in_crash_loop(pod(sidecar, vllm)) is True


def test_labels_at_one_moment_stack_and_labels_at_the_right_end_point_left():
    placed = place_labels([(0.0, "fault"), (2.0, "first crash"), (2.0, "detected"), (2.0, "deploys/restore.py"),
                           (11.7, "restored"), (43.8, "confirmed"), (46.9, "pre-game restore")], -3.2, 46.9)
    assert placed == [Placed(0.0, 0, "left"), Placed(2.0, 1, "left"), Placed(2.0, 2, "left"),
                      Placed(2.0, 3, "left"), Placed(11.7, 0, "left"), Placed(43.8, 0, "right"),
                      Placed(46.9, 1, "right")]


def _sample(t: float, ready: int, template: int, restarts: int = 0) -> Sample:
    return Sample(t=t, wall=t / 600, desired=2, ready=ready, restarts=restarts, crash_looping=0, template=template,
                  rolled_out=ready == 2)


def test_subtitle_quotes_restore_detection_restarts_and_pace():
    tl = Timeline(samples=[_sample(0, 2, 0), _sample(60, 0, 1), _sample(300, 0, 1, 8), _sample(702, 2, 0, 8)],
                  speed=600)
    tl.mark(0, 0, FAULT, "fault: revision 15")
    tl.mark(124.2, 0.207, DETECTION, "detected: max_len_exceeds_kv")
    tl.mark(702, 1.17, ROLLOUT_DONE, "rollout done")
    assert subtitle(tl) == ("time to restore 11.7 min projected (11.7 min cluster time) · outage 10.7 min · "
                            "detected after 2.1 min\n"
                            "8 container restarts · restored = fixed template rolled out, every replica Ready · "
                            "cluster time, rehearsed at 600x (1.2 s wall)")
    assert outage_seconds(tl.samples) == 642
    assert template_changes(tl.samples) == [1, 3]
    assert subtitle(Timeline(samples=tl.samples[:2])) == "NOT restored · no outage\n0 container restarts"


def test_projection_counts_the_playbooks_own_seconds_at_wall_speed():
    """Detection at 124 s; restore.py's write is first seen at 600 s, 0.793 s of wall later; Ready at 702 s.
    The 475.8 cluster seconds in between were the tool starting at 600x: on a real cluster, 0.793 s."""
    tl = Timeline(samples=[_sample(0, 2, 0), _sample(60, 0, 1), _sample(300, 0, 1, 8), _sample(600, 0, 0, 8),
                           _sample(702, 2, 0, 8)], speed=600, faulted=1)
    tl.mark(0, 0, FAULT, "fault: revision 15")
    tl.mark(124.2, 0.207, DETECTION, "detected: max_len_exceeds_kv")
    tl.mark(130, 0.217, ACTION, "run deploys/restore.py")
    tl.mark(702, 1.17, ROLLOUT_DONE, "rollout done")
    tl.mark(760, 1.267, ACTION_END, "deploys/restore.py exited 0")
    cluster, wall = tl.tool_seconds()
    assert (round(cluster, 1), round(wall, 3)) == (475.8, 0.793)
    assert round(tl.projected_restore() or 0, 2) == round(702 - 475.8 + 0.793, 2)
    assert tl.template_changes() == 1  # counted from the faulted template: the rollback, not the fault
    assert subtitle(tl).startswith("time to restore 3.8 min projected (11.7 min cluster time) · ")


def test_bad_rollout_counts_both_pods_crash_looping_until_the_rollback(cli, tmp_path: Path):
    """Once both pods have crashed, every sample until the bad template is replaced shows both crash-looping:
    the count never dips while a container reloads between back-offs (on a loaded machine the second pod's
    first crash may come a sample or two after the first's)."""
    got = cli("gameday", "run", "bad-rollout", "--report-dir", str(tmp_path), "-o", "json")
    body = json.loads(got.stdout)
    assert got.returncode == 0, body["verdict"]
    timeline = body["timeline"]
    marks = {m["kind"]: m for m in timeline["marks"]}
    samples = timeline["samples"]
    bad = next(s["template"] for s in samples if s["t"] >= marks["first-crash"]["t"])
    during = [s for s in samples if s["t"] >= marks["first-crash"]["t"] and s["template"] == bad]
    counts = [s["crash_looping"] for s in during]
    both = counts.index(2)
    assert len(during) - both >= 3 and counts[both:] == [2] * (len(during) - both), counts
    assert counts[:both] == sorted(counts[:both]) and set(counts[:both]) <= {1}, counts
    assert {s["crash_looping"] for s in samples if s["t"] < marks["fault"]["t"]} == {0}
    assert {s["crash_looping"] for s in samples if s["t"] >= marks["rollout-done"]["t"]} == {0}
