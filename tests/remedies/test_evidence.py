"""What is known against a revision (remedies/evidence.py): crash records, mark withdrawal, placement, prediction."""

from __future__ import annotations

import json
from typing import Any

from fixtures.pod_templates import KEYS, MODEL, template
from vllm_remedy.kube.annotations import rfc3339
from vllm_remedy.kube.history import Revision
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.evidence import (
    against,
    crashes_by_revision,
    placement,
    read_crash,
    record_changes,
    standing_crash,
)
from vllm_remedy.remedies.restore import HANDOVER, REFUSE, ROLLBACK, SHED, decide_restore

NOW = 1_800_000_000.0
L40S = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
L4 = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
NO_MAX_LEN = [MODEL, "--gpu-memory-utilization", "0.90"]


def node(name: str, product: str, *, cordoned: bool = False, taint: bool = False, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.product": product, **labels}},
            "spec": {"unschedulable": cordoned,
                     **({"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}
                        if taint else {})},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


NODES = [node("l40s-1", "NVIDIA-L40S"), node("l4-1", "NVIDIA-L4", taint=True,
                                               **{"cloud.google.com/gke-accelerator": "nvidia-l4"})]


def rev(number: int, tpl: dict[str, Any], **notes: str) -> Revision:
    return Revision(number, f"rs-{number}", "", tpl, dict(notes), "", 0, False)


def test_a_crash_is_recorded_once_and_withdraws_a_mark() -> None:
    marked = {KEYS.known_good: rfc3339(NOW - 3600), KEYS.known_good_reason: "confirmed"}
    changes = record_changes(KEYS, marked, {"oom_under_load": 2}, NOW)
    assert json.loads(changes[KEYS.crashed]) == {"failure": "oom_under_load", "at": rfc3339(NOW)}
    assert changes[KEYS.known_good] is None and changes[KEYS.known_good_reason] is None
    withdrawn = json.loads(changes[KEYS.known_good_withdrawn])
    assert withdrawn == {"at": rfc3339(NOW), "marked_at": rfc3339(NOW - 3600),
                         "reason": "died under load (oom_under_load) after it was marked known-good"}
    after = {k: v for k, v in {**marked, **changes}.items() if v is not None}
    assert record_changes(KEYS, after, {"oom_under_load": 2}, NOW + 60) == {}  # idempotent: first seen is kept
    assert record_changes(KEYS, {}, {}, NOW) == {}


def test_a_mark_written_after_the_crash_supersedes_it() -> None:
    crashed = {KEYS.crashed: json.dumps({"failure": "max_len_exceeds_kv", "at": rfc3339(NOW - 600)})}
    assert standing_crash(KEYS, crashed) is not None
    assert standing_crash(KEYS, {**crashed, KEYS.known_good: rfc3339(NOW)}) is None  # confirm proved it again
    assert read_crash(KEYS, {KEYS.crashed: "garbled"}).failure == "unknown"  # still counts against it
    # a crash after that new mark is recorded again and takes the mark back
    again = record_changes(KEYS, {**crashed, KEYS.known_good: rfc3339(NOW)}, {"max_len_exceeds_kv": 1}, NOW + 60)
    assert KEYS.crashed in again and again[KEYS.known_good] is None


def test_crashes_by_revision_counts_old_and_new_pods() -> None:
    def pod(revision: int, failure: str, **health: Any) -> dict[str, Any]:
        return {"name": f"p{revision}", "revision": revision, "deleting": False,
                "containers": [{"name": "vllm", "startup": {"failure": failure}, **health}]}

    pods = {"pods": [pod(15, "oom_under_load", crash_looping=True), pod(16, "max_len_exceeds_kv", crash_looping=True),
                     pod(14, "none"), pod(13, "", host_oom_killed=True)]}
    assert crashes_by_revision(pods) == {13: {"host_oom_killed": 1}, 15: {"oom_under_load": 1},
                                         16: {"max_len_exceeds_kv": 1}}


def test_placement_is_the_pin_or_the_smallest_card_the_pod_can_reach() -> None:
    assert placement(template(selector=L40S)["spec"], NODES).gpu == "NVIDIA-L40S"
    unpinned = template(selector={})["spec"]
    assert placement(unpinned, NODES).gpu == "NVIDIA-L40S"  # the L4 is tainted: not for this pod
    tolerating = {**unpinned, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    assert placement(tolerating, NODES).gpu == "NVIDIA-L4"  # the smallest card it may land on
    gone = placement(template(selector=L40S)["spec"], [node("l40s-1", "NVIDIA-L40S", cordoned=True)])
    assert gone.problem == ("its pods would not schedule now (nvidia.com/gpu.product=NVIDIA-L40S: 1 matching "
                            "node(s), none schedulable (cordoned or not Ready))")
    assert placement(template(selector=L40S)["spec"], None).gpu == "NVIDIA-L40S"  # nodes unreadable: the pin


def test_against_names_the_first_evidence() -> None:
    assert against(rev(14, template(selector=L40S)), KEYS, None, NODES) is None
    bad = against(rev(15, template(NO_MAX_LEN, selector=L4)), KEYS, None, None)
    assert bad is not None and bad.startswith("predicted max_len_exceeds_kv on NVIDIA-L4")
    dying = against(rev(14, template(selector=L40S)), KEYS, None, NODES, {14: {"oom_under_load": 2}})
    assert dying == "dying under load now (oom_under_load), pods still running"
    seen = against(rev(14, template(selector=L40S), **{KEYS.crashed: json.dumps(
        {"failure": "max_len_exceeds_kv", "at": rfc3339(NOW)})}), KEYS, None, NODES)
    assert seen == f"seen crash-looping (max_len_exceeds_kv) at {rfc3339(NOW)}"


def _row(r: Revision) -> dict[str, Any]:
    return {"number": r.number, "replicaset": r.replicaset, "change_cause": "", "template": r.template,
            "annotations": r.annotations, "created": "", "replicas": 0, "current": False,
            "known_good": bool(r.annotations.get(KEYS.known_good))}


def _crashing() -> dict[str, Any]:
    return {"pods": [{"name": "p", "new": True, "revision": 16, "containers": [
        {"name": "vllm", "crash_looping": True, "startup": {"failure": "max_len_exceeds_kv"}}]}]}


def test_decide_restore_skips_bad_revisions_hands_over_or_refuses() -> None:
    policy = Policy()
    good, bad15, bad16 = (rev(14, template(selector=L40S)), rev(15, template(NO_MAX_LEN, selector=L4)),
                          rev(16, template([*NO_MAX_LEN, "--max-num-seqs", "8"], selector=L4)))
    hist = {"current_revision": 16, "revisions": [_row(good), _row(bad15), _row(bad16)]}
    got = decide_restore(hist, _crashing(), policy, now=NOW, nodes=NODES)
    assert (got.action, got.revision) == (ROLLBACK, 14)
    assert [line.split(":")[0] for line in got.skipped] == ["revision 16 (rs-16)", "revision 15 (rs-15)"]
    cordoned = [node("l40s-1", "NVIDIA-L40S", cordoned=True), NODES[1]]
    handed = decide_restore(hist, _crashing(), policy, now=NOW, nodes=cordoned)
    assert (handed.action, handed.revision) == (HANDOVER, 14)  # 14 fits its own card: the last that served
    seen = {KEYS.crashed: json.dumps({"failure": "max_len_exceeds_kv", "at": rfc3339(NOW)})}
    dead = {**hist, "revisions": [_row(rev(14, good.template, **seen)), _row(bad15), _row(bad16)]}
    refused = decide_restore(dead, _crashing(), policy, now=NOW, nodes=cordoned)
    assert refused.action == REFUSE and "no earlier revision is predicted to serve (2 skipped)" in refused.reason


def test_a_mark_withdrawn_in_this_run_still_means_shed_not_roll_back() -> None:
    """The record (withdrawing the mark) is written before restore decides at execute: a revision that was
    confirmed and now dies under load is still not a fresh deploy, so step 1 sheds load."""
    withdrawn = {KEYS.known_good_withdrawn: json.dumps({"at": rfc3339(NOW), "reason": "died under load"})}
    chunks = template([MODEL, "--max-model-len", "16384", "--max-num-batched-tokens", "16384"], selector=L40S)
    current = {**_row(rev(15, chunks, **withdrawn)), "created": rfc3339(NOW - 300)}
    hist = {"current_revision": 15, "revisions": [_row(rev(14, template(selector=L40S))), current]}
    pods = {"pods": [{"name": "p", "new": True, "revision": 15, "containers": [
        {"name": "vllm", "crash_looping": True, "startup": {"failure": "oom_under_load"}}]}]}
    assert decide_restore(hist, pods, Policy(), now=NOW, nodes=NODES).action == SHED
    fresh = {**hist, "revisions": [hist["revisions"][0], {**current, "annotations": {}}]}
    assert decide_restore(fresh, pods, Policy(), now=NOW, nodes=NODES).action == ROLLBACK  # deployed 5 min ago


def test_a_revision_that_ran_a_timed_toggle_is_no_target_but_eager_on_purpose_is() -> None:
    eager = template([*NO_MAX_LEN[:1], "--max-model-len", "16384", "--enforce-eager"], selector=L40S)
    toggled = rev(14, eager, **{KEYS.toggle_expires("enforce-eager"): rfc3339(NOW + 3600)})
    why = against(toggled, KEYS, None, NODES)
    assert why is not None and "temporary toggle" in why and "--enforce-eager" in why
    assert against(rev(14, eager), KEYS, None, NODES) is None  # no record: the team runs eager on purpose


def test_a_garbled_crash_record_outranks_any_known_good_mark() -> None:
    """A review forged ``"at": "yesterday"`` on a marked ReplicaSet and restore went back to it: a record that cannot
    be read is never superseded, so the revision stays skipped until someone looks."""
    notes = {KEYS.known_good: rfc3339(NOW), KEYS.crashed: json.dumps({"failure": "oom_under_load", "at": "yesterday"})}
    crash = standing_crash(KEYS, notes)
    assert crash is not None and "unreadable" in crash.text()
    why = against(rev(14, template(selector=L40S), **notes), KEYS, None, NODES)
    assert why is not None and "unreadable" in why


def backoff(pod: str, count: int, ago: float, message: str = "", component: str = "kubelet") -> dict[str, Any]:
    """A back-off Event row as the PodEvents fact gives it (kubelet's message names the pod and its uid)."""
    uid = f"uid-{pod}"
    text = message or f"Back-off restarting failed container vllm in pod {pod}_llm({uid})"
    return {"pod": pod, "uid": uid, "component": component, "reason": "BackOff", "message": text, "count": count,
            "first": rfc3339(NOW - ago - 60), "last": rfc3339(NOW - ago)}


ROWS = [{"number": 14, "replicaset": "llama-8b-6b765dc795", "created": rfc3339(NOW - 86400)},
        {"number": 15, "replicaset": "llama-8b-85bd68ffdd", "created": rfc3339(NOW - 3600)}]


def test_gone_pods_events_count_against_their_revision_by_pod_name() -> None:
    from vllm_remedy.remedies.evidence import crashes_in_events

    events = [backoff("llama-8b-85bd68ffdd-9lfjn", 1, 300), backoff("llama-8b-85bd68ffdd-x2v7k", 2, 120),
              backoff("llama-8b-6b765dc795-abcde", 1, 100),  # one back-off, recovered: no evidence
              backoff("llama-8b-6b765dc795-fghij", 5, 100, "Back-off pulling image \"vllm/vllm-openai:v0.8.5\""),
              {**backoff("llama-8b-85bd68ffdd-zzzzz", 9, 10), "last": "yesterday", "first": None},  # no time: no
              backoff("other-85bd68ffdd-9lfjn", 9, 10),  # another workload's pod
              backoff("llama-8b-6b765dc795-zzzzz", 9, 10, component="totally-not-kubelet"),  # not the kubelet's
              backoff("llama-8b-6b765dc795-yyyyy", 9, 10, "Back-off restarting failed container vllm in pod "
                      "llama-8b-6b765dc795-yyyyy_llm(someone-elses-uid)"),  # the message names another pod
              backoff("llama-8b-85bd68ffdd-wwwww", 9, -3 * 86400)]  # dated two days ahead of the cluster
    seen = crashes_in_events(ROWS, events, NOW)
    assert list(seen) == [15]
    assert (seen[15].backoffs, seen[15].pod, seen[15].at) == (3, "llama-8b-85bd68ffdd-9lfjn", NOW - 120)
    assert "seen crash-looping in its pods' Events (3 back-offs" in seen[15].text()
    assert crashes_in_events(ROWS, None) == {}
    assert crashes_in_events(ROWS, events, NOW, serving=[15]) == {}  # its live pods, Ready, contradict them


def test_events_evidence_skips_a_revision_unless_a_later_mark_supersedes_it() -> None:
    from vllm_remedy.remedies.evidence import crashes_in_events

    seen = crashes_in_events(ROWS, [backoff("llama-8b-85bd68ffdd-9lfjn", 3, 600)])
    fits = template([MODEL, "--max-model-len", "16384"], L40S)
    assert "in its pods' Events" in (against(rev(15, fits), KEYS, "vllm", NODES, None, seen) or "")
    confirmed_since = {KEYS.known_good: rfc3339(NOW - 60)}
    assert against(rev(15, fits, **confirmed_since), KEYS, "vllm", NODES, None, seen) is None
    marked_before = {KEYS.known_good: rfc3339(NOW - 3600)}
    assert against(rev(15, fits, **marked_before), KEYS, "vllm", NODES, None, seen) is not None


def test_an_events_record_says_where_it_was_seen() -> None:
    changes = record_changes(KEYS, {}, {"unknown": 3}, NOW, "events")
    assert json.loads(changes[KEYS.crashed]) == {"failure": "unknown", "at": rfc3339(NOW), "seen": "events"}
    crash = read_crash(KEYS, {KEYS.crashed: changes[KEYS.crashed]})
    assert crash is not None and crash.text().startswith("seen crash-looping in its pods' Events (recorded at ")


def test_live_ready_pods_that_never_restarted_are_serving() -> None:
    from vllm_remedy.remedies.evidence import serving_revisions

    def live(revision: int, ready: bool = True, restarts: int = 0, deleting: bool = False) -> dict[str, Any]:
        return {"revision": revision, "ready": ready, "restarts": restarts, "deleting": deleting}

    pods = {"pods": [live(14), live(14), live(15), live(15, restarts=2), live(16, ready=False),
                     live(17, deleting=True)]}
    assert serving_revisions(pods) == [14]
