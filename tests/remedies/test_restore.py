"""The pure rules behind restore and confirm (remedies/restore.py, remedies/confirm.py) on fact-shaped data."""

from __future__ import annotations

from typing import Any

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.confirm import confirm_revision, parse_metrics
from vllm_remedy.remedies.fallback import shifted_route
from vllm_remedy.remedies.restore import NONE, REFUSE, ROLLBACK, SHED, decide_restore, shed_flags

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def rfc(seconds_ago: float) -> str:
    from vllm_remedy.kube.annotations import rfc3339

    return rfc3339(NOW - seconds_ago)


def template(args: list[str], product: str = "NVIDIA-L40S") -> dict[str, Any]:
    return {"spec": {"nodeSelector": {"nvidia.com/gpu.product": product},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                                     "args": ["meta-llama/Llama-3.1-8B-Instruct", *args]}]}}


def row(number: int, args: list[str], created_ago: float = 86400, **notes: str) -> dict[str, Any]:
    return {"number": number, "replicaset": f"rs-{number}", "change_cause": "", "template": template(args),
            "annotations": dict(notes), "created": rfc(created_ago), "replicas": 0, "current": False,
            "known_good": bool(notes.get("vllm-remedy.io/known-good"))}


def history(current: int, *rows: dict[str, Any]) -> dict[str, Any]:
    return {"current_revision": current, "revisions": list(rows)}


def pod(failure: str | None, *, crash: bool = True, ready: bool = False, restarts: int = 4,
        ready_ago: float | None = None) -> dict[str, Any]:
    container = {"name": "vllm", "crash_looping": crash, "failed": failure is not None, "ready": ready,
                 "restarts": restarts, "startup": {"failure": failure, "previous": True, "report": None}}
    return {"name": "p", "new": True, "deleting": False, "ready": ready,
            "ready_since": rfc(ready_ago) if ready_ago is not None else None, "containers": [container]}


POLICY = Policy.from_mapping({"load_shedding": {"max_num_seqs": 32, "max_model_len": 8192}})


def test_startup_crash_rolls_back_to_the_newest_different_revision() -> None:
    h = history(4, row(2, ["--max-model-len", "8192"]), row(3, ["--max-model-len", "16384"]),
                row(4, ["--max-num-seqs", "64"], created_ago=60))
    got = decide_restore(h, {"pods": [pod("max_len_exceeds_kv")]}, POLICY, now=NOW)
    assert (got.action, got.revision, got.rule) == (ROLLBACK, 3, "newest earlier revision with no evidence against it")
    assert got.failures == {"max_len_exceeds_kv": 1}


def test_a_mark_beats_newer_revisions() -> None:
    h = history(4, row(2, ["--max-model-len", "8192"], **{"vllm-remedy.io/known-good": rfc(3600)}),
                row(3, ["--max-model-len", "16384"]), row(4, ["--max-num-seqs", "64"]))
    got = decide_restore(h, {"pods": [pod("no_cache_blocks")]}, POLICY, now=NOW)
    assert (got.action, got.revision, got.rule) == (ROLLBACK, 2, "known-good mark")


def test_healthy_or_rolling_pods_need_nothing() -> None:
    h = history(4, row(3, ["--max-model-len", "16384"]), row(4, ["--max-num-seqs", "64"]))
    got = decide_restore(h, {"pods": [pod(None, crash=False, ready=True, restarts=0, ready_ago=10)]}, POLICY, now=NOW)
    assert got.action == NONE


def test_oom_under_load_on_an_old_revision_sheds_load() -> None:
    h = history(4, row(3, ["--max-model-len", "16384"]), row(4, ["--max-num-seqs", "64"], created_ago=7200))
    flapping = pod("oom_under_load", crash=False, ready=True, ready_ago=30)  # between two OOMs
    assert decide_restore(h, {"pods": [flapping]}, POLICY, now=NOW).action == SHED


def test_oom_under_load_right_after_a_deploy_rolls_back() -> None:
    h = history(4, row(3, ["--max-model-len", "16384"]), row(4, ["--max-num-seqs", "256"], created_ago=300))
    got = decide_restore(h, {"pods": [pod("oom_under_load")]}, POLICY, now=NOW)
    assert (got.action, got.revision) == (ROLLBACK, 3)


def test_oom_under_load_on_a_revision_restore_put_back_minutes_ago_rolls_back_not_sheds() -> None:
    """A rollback reuses an old ReplicaSet: its creation says nothing of when it came back; our own last write
    does, when the template running is the one it left (review findings M4 and, for shedding, #1)."""
    from vllm_remedy.kube.annotations import template_digest

    # revision 3 within the policy's peak concurrency (restore ranks one below it lower: hostile 15b F4)
    h = history(4, row(2, ["--max-model-len", "8192"]), row(3, ["--max-num-seqs", "256", "--max-model-len", "16384"]),
                row(4, ["--max-model-len", "16384"], created_ago=7 * 86400))
    dying = {"pods": [pod("oom_under_load")]}
    ours = template_digest(h["revisions"][-1]["template"])
    assert decide_restore(h, dying, POLICY, now=NOW).action == SHED  # nothing of ours: an old revision, load
    restored = {**h, "last_action": "restore", "last_action_at": rfc(300), "last_action_template": ours}
    got = decide_restore(restored, dying, POLICY, now=NOW)
    assert (got.action, got.revision) == (ROLLBACK, 3)
    long_ago = {**restored, "last_action_at": rfc(2 * 3600)}
    assert decide_restore(long_ago, dying, POLICY, now=NOW).action == SHED
    not_this_one = {**restored, "last_action_template": "0123456789abcdef"}  # we wrote another template
    assert decide_restore(not_this_one, dying, POLICY, now=NOW).action == SHED
    shed = {**restored, "last_action": "shed-load"}  # our shedding made it: no fresh deploy
    assert decide_restore(shed, dying, POLICY, now=NOW).action == SHED


def test_a_colleagues_revision_after_our_shedding_is_a_fresh_deploy() -> None:
    """After we shed load, a colleague deploys revision 5 (our annotations copied onto its ReplicaSet); it dies
    under load seconds later: that is a fresh deploy to roll back from, not more load to shed (review #1)."""
    from vllm_remedy.kube.annotations import template_digest

    shed_row = row(4, ["--max-num-seqs", "32"], created_ago=600)
    theirs = row(5, ["--max-num-seqs", "32", "--max-num-batched-tokens", "16384"], created_ago=20,
                 **{"vllm-remedy.io/last-action": "shed-load"})
    h = {**history(5, row(3, ["--max-num-seqs", "64"]), shed_row, theirs), "last_action": "shed-load",
         "last_action_at": rfc(600), "last_action_template": template_digest(shed_row["template"])}
    got = decide_restore(h, {"pods": [pod("oom_under_load")]}, POLICY, now=NOW)
    assert (got.action, got.revision) == (ROLLBACK, 4)


def test_a_known_good_mark_dated_after_the_clusters_clock_is_ignored_with_a_warning() -> None:
    crashed = {"vllm-remedy.io/crashed": '{"at":"' + rfc(600) + '","failure":"oom_under_load"}'}
    forged = row(3, ["--max-model-len", "16384"], **crashed, **{"vllm-remedy.io/known-good": "2099-01-01T00:00:00Z"})
    h = history(4, row(2, ["--max-model-len", "8192"]), forged, row(4, ["--max-num-seqs", "64"], created_ago=60))
    got = decide_restore(h, {"pods": [pod("max_len_exceeds_kv")]}, POLICY, now=NOW)
    assert (got.action, got.revision) == (ROLLBACK, 2)
    assert any("revision 3 (rs-3): died under load (oom_under_load)" in line for line in got.skipped), got.skipped
    assert got.warnings == ("warning: ignored the known-good mark on revision 3 (rs-3): '2099-01-01T00:00:00Z' is "
                            "later than the cluster's clock",)


def test_nothing_earlier_is_a_refusal_with_the_reason() -> None:
    got = decide_restore(history(1, row(1, ["--max-num-seqs", "64"])), {"pods": [pod("unknown")]}, POLICY, now=NOW)
    assert got.action == REFUSE
    assert got.reason == ("revision 1 crash-loops (1 pod(s) unknown) and no earlier revision to roll back to "
                          "(current revision 1); no earlier revision served that a budget change could start from: "
                          "see deploys/diagnose.py, then deploys/budget.py")


def test_shed_flags_only_lower() -> None:
    assert shed_flags({"max-num-seqs": "64", "max-model-len": "16384"}, POLICY) == {"max-num-seqs": "32",
                                                                                      "max-model-len": "8192"}
    assert shed_flags({"max-num-seqs": "16", "max-model-len": "4096"}, POLICY) == {}
    assert shed_flags({}, POLICY) == {"max-num-seqs": "32", "max-model-len": "8192"}


def fallback_policy(shift: int = 30) -> Policy:
    return Policy.from_mapping({"fallback": {"route": {"name": "llm", "namespace": "llm"},
                                             "primary": {"name": "llama-8b"}, "fallback": {"name": "hosted"},
                                             "shift_percent": shift}})


def test_shifted_route_sets_both_weights_in_rules_serving_the_primary() -> None:
    route = {"metadata": {"namespace": "llm"}, "spec": {"rules": [
        {"backendRefs": [{"name": "llama-8b", "port": 8000}, {"name": "hosted", "weight": 0}]},
        {"backendRefs": [{"name": "other"}]}]}}
    fb = fallback_policy().fallback
    assert fb is not None
    new = shifted_route(route, fb)
    assert new["spec"]["rules"][0]["backendRefs"] == [{"name": "llama-8b", "port": 8000, "weight": 70},
                                                     {"name": "hosted", "weight": 30}]
    assert new["spec"]["rules"][1] == route["spec"]["rules"][1]
    assert shifted_route(new, fb) == new


def test_a_route_without_the_primary_is_one_line() -> None:
    fb = fallback_policy().fallback
    assert fb is not None
    with pytest.raises(UserError) as err:
        shifted_route({"metadata": {"namespace": "llm"}, "spec": {"rules": [{"backendRefs": [{"name": "x"}]}]}}, fb)
    assert str(err.value) == ("policy fallback.primary: HTTPRoute llm/llm has no rule sending traffic to backend "
                              "llama-8b")


METRICS = """# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage (1 = full).
vllm:gpu_cache_usage_perc{model_name="m",engine="0"} 0.95
vllm:num_preemptions_total{model_name="m",engine="0"} 90.0
"""


def test_parse_metrics_sums_label_sets_and_skips_comments() -> None:
    assert parse_metrics(METRICS + 'vllm:num_preemptions_total{engine="1"} 10\n') == {
        "vllm:gpu_cache_usage_perc": 0.95, "vllm:num_preemptions_total": 100.0}


def test_confirm_reports_every_failed_check_with_its_figures() -> None:
    h = history(5, row(5, ["--max-model-len", "16384"]))
    ready = pod(None, crash=False, ready=True, restarts=0, ready_ago=3600)
    ready["containers"][0]["startup"] = {"failure": None, "previous": False, "report": {"max_concurrency": 12.08}}
    got = confirm_revision(h, {"pods": [ready]}, {"p": METRICS}, Policy.from_mapping({"peak_concurrency": 10}),
                           NOW)
    assert not got.ok
    assert got.failures == ("pod p: maximum concurrency 12.08x vs peak 10 × 1 = 10.00",
                            "pod p: KV cache usage 95.0% (limit 90%)",
                            "pod p: 1.50 preemptions/min over 1h (limit 1/min)")[1:]
    assert got.checks[2] == "ok: pod p: maximum concurrency 12.08x vs peak 10 × 1 = 10.00"


def test_a_rollout_restart_of_our_shed_revision_is_still_ours_and_never_a_rollback_target() -> None:
    """``kubectl rollout restart`` stamps the template: the pods run what our shedding left, so it is still our
    shedding (shed again, not a fresh deploy), and the shed revision is no rollback target (re-review #4)."""
    import copy

    from vllm_remedy.kube.annotations import template_digest

    shed_row = row(4, ["--max-num-seqs", "32"], created_ago=600)
    restarted = row(5, ["--max-num-seqs", "32"], created_ago=30)
    restarted["template"] = copy.deepcopy(shed_row["template"])
    restarted["template"].setdefault("metadata", {})["annotations"] = {
        "kubectl.kubernetes.io/restartedAt": rfc(30)}
    crashed = {"vllm-remedy.io/crashed": '{"at":"' + rfc(900) + '","failure":"oom_under_load"}'}
    h = {**history(5, row(3, ["--max-num-seqs", "64"], **crashed), shed_row, restarted),
         "last_action": "shed-load", "last_action_at": rfc(600),
         "last_action_template": template_digest(shed_row["template"])}
    got = decide_restore(h, {"pods": [pod("oom_under_load")]}, POLICY, now=NOW)
    assert got.action == SHED, got


def test_a_kinds_own_start_verdict_skips_a_revision_as_a_failed_prediction_does() -> None:
    """An LWS group's world size is not in the leader's pod template: the kind's ``cannot_start`` speaks against a
    revision in the choice, the forced-revision check and the budget hand-over's base alike."""
    h = history(4, row(2, ["--max-model-len", "8192"]), row(3, ["--max-model-len", "16384"]),
                row(4, ["--max-num-seqs", "64"], created_ago=60))

    def wide(rev: Any) -> str | None:
        return "predicted to fail: world size 4" if rev.number == 3 else None

    got = decide_restore(h, {"pods": [pod("max_len_exceeds_kv")]}, POLICY, now=NOW, cannot_start=wide)
    assert (got.action, got.revision) == (ROLLBACK, 2), got
    assert any(line.startswith("revision 3 (rs-3): predicted to fail: world size 4") for line in got.skipped), got
    forced = decide_restore(h, {"pods": [pod("max_len_exceeds_kv")]}, POLICY, now=NOW, forced=3, cannot_start=wide)
    assert forced.action == REFUSE and "predicted to fail: world size 4" in forced.reason, forced
    none = decide_restore(history(4, row(3, ["--max-model-len", "16384"]), row(4, ["--max-num-seqs", "64"])),
                          {"pods": [pod("max_len_exceeds_kv")]}, POLICY, now=NOW, cannot_start=wide)
    assert none.action == REFUSE and "no earlier revision served" in none.reason, none


def test_a_profile_oom_crash_loop_rolls_back_as_a_start_failure() -> None:
    """The profiling forward's OOM ends a start (registry phase "start"): restore rolls back, never sheds load."""
    h = history(4, row(3, ["--max-model-len", "8192"]), row(4, ["--max-num-batched-tokens", "65536"], created_ago=60))
    got = decide_restore(h, {"pods": [pod("profile_oom")]}, POLICY, now=NOW)
    assert (got.action, got.revision) == (ROLLBACK, 3) and got.failures == {"profile_oom": 1}
