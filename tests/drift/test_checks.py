"""The `prediction` and `crash-loop` drift checks, and how an unknown verdict exits (pure): a workload whose
start cannot be predicted, or that crash-loops, is never "in sync"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vllm_remedy.drift import checks, report
from vllm_remedy.drift.fallback_route import check_fallback_route
from vllm_remedy.facts.pods import pods_data
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.policy import Policy

NOW = parse_rfc3339("2026-01-01T12:00:00Z")
GOOD = ["--max-model-len", "16384", "--gpu-memory-utilization", "0.9"]
L40S = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
#: A real vLLM 0.11 log of gpt-oss failing with no KV cache blocks (tests/data/logs/SOURCES.md).
GPT_OSS_LOG = Path(__file__).resolve().parents[1] / "data" / "logs" / "v0.11.0_gpt_oss_h100_no_cache_blocks.log"


def template(model: str, args: list[str], selector: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "m"}},
            "spec": {"nodeSelector": selector,
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                                     "args": [model, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def deployment(model: str = "meta-llama/Llama-3.1-8B-Instruct", selector: dict[str, str] | None = None) -> dict:
    return {"metadata": {"name": "m", "namespace": "llm", "uid": "d1", "annotations": {}},
            "spec": {"selector": {"matchLabels": {"app": "m"}},
                     "template": template(model, GOOD, L40S if selector is None else selector)}}


def container_status(restarts: int, waiting: str | None, exit_code: int = 1, ready: bool = False) -> dict[str, Any]:
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {"name": "vllm", "ready": ready, "restartCount": restarts, "state": state,
            "lastState": {"terminated": {"exitCode": exit_code, "reason": "Error"}} if restarts else {}}


def pods(dep: dict, statuses: list[dict[str, Any]], new: bool = True, log: str | None = None,
         ready_since: str | None = None) -> dict[str, Any]:
    """The Pods fact for ``dep``: one ReplicaSet (the new one unless ``new`` is False) and a pod per status (Ready
    since ``ready_since`` when given)."""
    rs_template = dep["spec"]["template"] if new else template("other/model", [], L40S)
    rs = {"metadata": {"name": "m-1", "uid": "r1", "labels": {"app": "m"}, "creationTimestamp": "2026-01-01T00:00:00Z",
                       "annotations": {"deployment.kubernetes.io/revision": "4"},
                       "ownerReferences": [{"controller": True, "uid": "d1"}]},
          "spec": {"template": rs_template}}
    objs = [{"metadata": {"name": f"m-1-{i}", "labels": {"app": "m"}, "ownerReferences": [{"controller": True,
                                                                                          "uid": "r1"}]},
             "status": {"phase": "Running", "containerStatuses": [s], "conditions": [
                 {"type": "Ready", "status": "True", "lastTransitionTime": ready_since}] if ready_since else []}}
            for i, s in enumerate(statuses)]
    logs = {f"m-1-{i}/vllm": {"previous": True, "text": log} for i in range(len(statuses))} if log else {}
    return pods_data(dep, [rs], objs, logs, "vllm")


def run(dep: dict, policy: Policy | None = None, pod_fact: dict | None = None) -> dict[str, checks.Check]:
    policy = policy or Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}})
    fact = pods(dep, []) if pod_fact is None else pod_fact
    return {c.name: c for c in checks.run_checks(dep, policy, NOW, pods=fact).checks}


def test_a_model_outside_the_catalog_is_an_explicit_unknown_prediction() -> None:
    got = run(deployment("openai/gpt-oss-20b"))
    assert (got["prediction"].status, got["prediction"].detail) == (
        "unknown", "model openai/gpt-oss-20b is not in the catalog")
    assert got["concurrency"].status == "unknown"


def test_an_unpinned_template_under_a_policy_naming_no_gpu_cannot_be_predicted() -> None:
    got = run(deployment(selector={}), Policy.from_mapping({}))
    assert got["prediction"].status == "unknown"
    assert got["prediction"].detail.startswith("the template pins no GPU product and the policy names none")


def test_a_predictable_unit_passes_the_prediction_check() -> None:
    got = run(deployment())
    assert got["prediction"].status == "pass"
    assert got["prediction"].detail.startswith("prediction on NVIDIA-L40S: fits")


def test_crash_loop_follows_kube_waits_rule_and_names_the_failure_class() -> None:
    dep = deployment()
    def verdict(*statuses: dict[str, Any]) -> str:
        return run(dep, pod_fact=pods(dep, list(statuses)))["crash-loop"].status

    assert verdict(container_status(0, None)) == "pass"
    # died and not Ready since: loading the model again between back-offs is still the loop (kube/health.py)
    assert verdict(container_status(1, None)) == "drift"
    assert verdict(container_status(1, None, exit_code=0)) == "pass"  # a clean exit is no failure
    # restarts are counted over the pod's life: old deaths of a container serving now are not a loop
    assert verdict(container_status(5, None, ready=True)) == "pass"
    back_off = run(dep, pod_fact=pods(dep, [container_status(1, "CrashLoopBackOff")] * 2,
                                      log=GPT_OSS_LOG.read_text()))["crash-loop"]
    assert back_off.status == "drift"
    assert back_off.detail == ("revision 4 crash-loops: pod m-1-0 container vllm: CrashLoopBackOff (last exit 1, "
                               "Error); startup log: no_cache_blocks (+1 more pod(s))")
    assert run(dep, pod_fact=pods(dep, [container_status(1, "CrashLoopBackOff")]))["crash-loop"].detail.endswith(
        "; startup log: unclassified")


def test_a_container_ready_again_for_less_than_the_stable_time_after_repeated_oom_is_a_crash_loop() -> None:
    """Between two OOM kills under load the container starts, passes its probe and is Ready: restore's rule
    (``kube.health.flapping``, the same function) counts it as crash-looping until Ready for ``confirm.stable_for``;
    so does drift. Ready for longer, or after a single death, it serves again."""
    dep = deployment()
    policy = Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}, "confirm": {"stable_for": "30m"}})
    oom = {**container_status(4, None, exit_code=137, ready=True),
           "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}

    def verdict(status: dict[str, Any], since: str) -> checks.Check:
        return run(dep, policy, pods(dep, [status], ready_since=since))["crash-loop"]

    flapping = verdict(oom, "2026-01-01T11:59:00Z")  # Ready for a minute of the 30 the policy asks
    assert flapping.status == "drift"
    assert flapping.detail == ("revision 4 crash-loops: pod m-1-0 container vllm: 4 restarts (last exit 137, "
                               "OOMKilled), Ready again for 1m only (stable after 30m); startup log: host_oom_killed")
    assert verdict(oom, "2026-01-01T11:00:00Z").status == "pass"  # Ready for an hour: recovered
    once = {**oom, "restartCount": 1}
    assert verdict(once, "2026-01-01T11:59:00Z").status == "pass"  # one death is no loop


def test_only_the_current_revisions_pods_count_and_unread_pods_are_unknown() -> None:
    dep = deployment()
    old = pods(dep, [container_status(5, "CrashLoopBackOff")], new=False)
    assert run(dep, pod_fact=old)["crash-loop"].status == "pass"
    unread = checks.run_checks(dep, Policy.from_mapping({"gpu": {"products": ["NVIDIA-L40S"]}}), NOW)
    assert {c.name: c.status for c in unread.checks}["crash-loop"] == "unknown"


def test_a_crash_loop_is_drift_even_when_every_other_check_passes() -> None:
    dep = deployment()
    got = run(dep, pod_fact=pods(dep, [container_status(2, "CrashLoopBackOff")]))
    assert [c.name for c in got.values() if c.status != "pass"] == ["crash-loop"]


def host(*statuses: str) -> dict[str, Any]:
    return {"host": "h", "error": None, "fix": [],
            "checks": [{"check": f"c{i}", "status": s, "detail": ""} for i, s in enumerate(statuses)]}


def test_unknown_is_not_in_sync_it_exits_as_drift() -> None:
    doc = report.drift_report({"hosts": [host("pass", "unknown")]}, NOW)
    assert (doc["hosts"][0]["status"], doc["hosts"][0]["unknown"]) == ("Unknown", ["c1"])
    assert (doc["status"]["result"], doc["status"]["exitCode"], doc["status"]["unknown"]) == ("Unknown", 1, 1)
    assert report.drift_report({"hosts": [host("unknown")]}, NOW, detailed=True)["status"]["exitCode"] == 2
    assert report.drift_report({"hosts": [host("drift", "unknown")]}, NOW)["hosts"][0]["status"] == "Drifted"
    text = report.render_drift(doc)
    assert text.splitlines()[0] == "h: UNKNOWN (c1): not in sync"
    assert text.splitlines()[-1] == "1 host(s): 0 in sync, 0 drifted, 1 unknown, 0 error(s) -> Unknown (exit 1)"


def test_a_route_left_shifted_to_the_fallback_is_drift() -> None:
    """Load shedding's shift is temporary: drift reports the route until restore shifts it back; a route the policy
    names that does not exist is drift too (no fallback to shift to), one that cannot be read is unknown."""
    fallback = {"route": {"name": "llm", "namespace": "llm"}, "primary": {"name": "llama-8b"},
                "fallback": {"name": "hosted"}, "shift_back_after": "1h"}
    policy = Policy.from_mapping({"fallback": fallback})
    primary_only = {"metadata": {"namespace": "llm"}, "spec": {"rules": [{"backendRefs": [
        {"name": "llama-8b", "weight": 100}, {"name": "hosted", "weight": 0}]}]}}
    shifted = {"metadata": {"namespace": "llm"}, "spec": {"rules": [{"backendRefs": [
        {"name": "llama-8b", "weight": 50}, {"name": "hosted", "weight": 50}]}]}}
    assert check_fallback_route(policy, primary_only).to_json() == {
        "check": "fallback-route", "status": "pass",
        "detail": "HTTPRoute llm/llm sends no traffic to the fallback hosted"}
    left = check_fallback_route(policy, shifted)
    assert (left.status, left.detail) == ("drift", "HTTPRoute llm/llm sends 50% of its traffic to the fallback hosted, "
                                          "left shifted: the fallback is temporary — deploys/restore.py shifts it "
                                          "back once the primary has been Ready for 1h")
    assert check_fallback_route(policy, None, missing=True).status == "drift"
    assert check_fallback_route(policy, None, "HTTP 403: forbidden").status == "unknown"
    assert check_fallback_route(Policy(), None).detail == "policy names no fallback route"
    assert report.host_status({"checks": [left.to_json()]}) == report.DRIFTED


def eager(expires: str) -> dict:
    """``deployment()`` running --enforce-eager with a toggle record expiring at ``expires``."""
    dep = deployment()
    container = dep["spec"]["template"]["spec"]["containers"][0]
    prior = {"container": "vllm", "command": container["command"], "args": list(container["args"])}
    container["args"].append("--enforce-eager")
    dep["metadata"]["annotations"] = {"vllm-remedy.io/enforce-eager-expires": expires,
                                      "vllm-remedy.io/enforce-eager-prior": json.dumps(prior)}
    return dep


def test_a_toggle_expiring_beyond_the_policys_max_duration_is_drift() -> None:
    """The policy's max_duration is 2h: we never stamp an expiry later than that, so 2099 is forged - drift."""
    assert run(eager("2026-01-01T13:59:00Z"))["enforce-eager"].status == checks.PASS
    for expires in ("2026-01-01T14:00:01Z", "2099-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59"):
        got = run(eager(expires))["enforce-eager"]
        assert got.status == checks.DRIFT, got
        assert got.detail == (f"toggle enforce-eager expires at {expires}, more than 2h ahead (the policy's "
                              "enforce_eager.max_duration): no toggle under this policy set it; run `vllm-remedy "
                              "expire` (reverts it)")


def test_an_unreadable_toggle_record_is_drift_never_an_error() -> None:
    got = run(eager("tomorrow"))["enforce-eager"]
    assert got.status == checks.DRIFT
    assert got.detail.startswith("unreadable toggle record enforce-eager (toggle enforce-eager expiry: 'tomorrow' is "
                                 "not an RFC 3339 timestamp")


def test_a_length_above_the_models_maximum_is_its_own_check_not_concurrency() -> None:
    """vLLM refuses --max-model-len above the model's maximum at config time: drift filed it under "concurrency"
    (review L3), a verdict about a KV cache no start ever sizes. It is "model-max-len"; concurrency is unknown."""
    dep = deployment("Qwen/Qwen2.5-7B-Instruct")
    dep["spec"]["template"]["spec"]["containers"][0]["args"] = ["Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "65536"]
    got = run(dep)
    assert got["model-max-len"].status == "drift"
    assert got["model-max-len"].detail.startswith("predicted max_len_exceeds_model: --max-model-len 65,536 is above "
                                                  "the model's 32,768"), got["model-max-len"].detail
    assert (got["concurrency"].status, got["concurrency"].detail) == (
        "unknown", "not sized: vLLM refuses --max-model-len at config time (model-max-len)")
    assert [c.name for c in checks.run_checks(dep, Policy.from_mapping({}), NOW, pods=pods(dep, [])).checks] == [
        n for n in checks.CHECKS if n not in ("fallback-route", "leader-worker-flags", "rollout-pending",
                                              "unschedulable")]
    assert "model-max-len" not in run(deployment())  # listed only when it fails


def test_a_start_refused_at_config_time_fails_the_prediction_check_with_no_kv_figures() -> None:
    """Drift said ``ok prediction: ... max_len_exceeds_model — KV cache 197,840 tokens`` (review 3, M3): a start vLLM
    refuses before it sizes anything passed the prediction check with a KV cache no run ever has."""
    dep = deployment("Qwen/Qwen2.5-7B-Instruct")
    dep["spec"]["template"]["spec"]["containers"][0]["args"] = ["Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "65536"]
    got = run(dep)["prediction"]
    assert got.status == checks.DRIFT, got
    assert got.detail.startswith("predicted to fail: prediction on NVIDIA-L40S: max_len_exceeds_model — not sized: "
                                 "vLLM refuses the start at config time, before the KV cache (--max-model-len 65,536 "
                                 "is above the model's 32,768"), got.detail
    assert "tokens" not in got.detail.split("(")[0] and "concurrency" not in got.detail, got.detail
    t4 = deployment("meta-llama/Llama-3.2-1B-Instruct", {"nvidia.com/gpu.product": "Tesla-T4"})
    t4["spec"]["template"]["spec"]["containers"][0]["args"] += ["--dtype", "bfloat16"]
    got = run(t4, Policy.from_mapping({"gpu": {"products": ["Tesla-T4"]}}))
    assert got["prediction"].status == checks.DRIFT and "not sized" in got["prediction"].detail, got["prediction"]
    assert "KV cache" not in got["concurrency"].detail.replace("before the KV cache", ""), got["concurrency"]
