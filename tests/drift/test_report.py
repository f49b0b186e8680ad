"""Drift checks on fixture Deployments and the report's exit codes: an error is never "no drift" (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vllm_remedy.drift import checks, report
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.metrics import DRIFT_DETECTED, DRIFT_UNKNOWN, LAST_CHECK, parse_samples
from vllm_remedy.policy import Policy

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
POLICY = Policy.from_mapping({
    "flags": {"max-model-len": {"min": 4096, "max": 16384}, "gpu-memory-utilization": {"min": 0.8, "max": 0.92}},
    "gpu": {"products": ["NVIDIA-L40S"]},
    "known_good": [{"name": "u1", "image": "vllm/vllm-openai:v0.8.5", "flags": {"max-model-len": 16384}}]})
NOW = parse_rfc3339("2026-01-01T12:00:00Z")


def dep(args: list[str], selector: dict | None = None, notes: dict | None = None, gpus: str = "1") -> dict:
    return {"metadata": {"name": "llama-8b", "namespace": "llm", "annotations": notes or {}},
            "spec": {"template": {"spec": {"nodeSelector": selector if selector is not None else
                                           {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                           "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
                                                           "command": ["vllm", "serve"], "args": [MODEL, *args],
                                                           "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}


def verdicts(d: dict, now: float = NOW) -> dict[str, str]:
    no_pods = {"new_revision": 1, "pods": []}  # the Pods fact of a Deployment scaled to zero
    return {c.name: c.status for c in checks.run_checks(d, POLICY, now, pods=no_pods).checks}


def test_in_sync() -> None:
    assert set(verdicts(dep(["--max-model-len", "16384", "--gpu-memory-utilization", "0.9"])).values()) == {"pass"}


def test_each_rule_drifts_on_its_own() -> None:
    good = ["--max-model-len", "16384", "--gpu-memory-utilization", "0.9"]
    assert verdicts(dep(["--gpu-memory-utilization", "0.9"]))["max-model-len"] == "drift"
    assert verdicts(dep(["--max-model-len", "16384", "--gpu-memory-utilization", "0.95"]))["flag-bounds"] == "drift"
    assert verdicts(dep(["--max-model-len", "8192", "--gpu-memory-utilization", "0.9"]))["known-good-unit"] == "drift"
    assert verdicts(dep(good, selector={}))["gpu-pinned"] == "drift"
    assert verdicts(dep(good, selector={"nvidia.com/gpu.product": "NVIDIA-L4"}))["gpu-pinned"] == "drift"
    assert verdicts(dep(good, gpus="2"))["gpu-pinned"] == "drift"
    assert verdicts(dep([*good, "--enforce-eager"]))["enforce-eager"] == "drift"
    prior = '{"args":[],"command":["vllm","serve"],"container":"vllm"}'
    toggle = {"vllm-remedy.io/enforce-eager-expires": "2026-01-01T11:00:00Z",
              "vllm-remedy.io/enforce-eager-prior": prior}
    assert verdicts(dep([*good, "--enforce-eager"], notes=toggle))["enforce-eager"] == "drift"
    assert verdicts(dep([*good, "--enforce-eager"], notes=toggle), NOW - 7200)["enforce-eager"] == "pass"


def test_unpinned_template_is_predicted_on_the_policy_gpu() -> None:
    result = checks.run_checks(dep(["--max-model-len", "16384"], selector={}), POLICY, NOW)
    assert result.prediction.gpu == "NVIDIA-L40S"
    assert result.checks[5].status == "pass"


def host(status: str) -> dict:
    if status == "error":
        return {"host": "h", "error": "boom"}
    return {"host": "h", "error": None, "checks": [{"check": "x", "status": status, "detail": ""}], "fix": []}


@given(st.lists(st.sampled_from(["pass", "drift", "unknown", "error"]), max_size=6), st.booleans())
def test_exit_codes_never_let_an_error_read_as_no_drift(kinds: list[str], detailed: bool) -> None:
    doc = report.drift_report({"hosts": [host(k) for k in kinds]}, NOW, detailed)
    code = doc["status"]["exitCode"]
    error, drift, none = (1, 2, 0) if detailed else (2, 1, 0)
    if not kinds or "error" in kinds:
        assert code == error
    elif "drift" in kinds or "unknown" in kinds:  # unknown is not in sync: it exits as drift
        assert code == drift
    else:
        assert code == none


def test_metrics_skip_failed_hosts_and_stale_the_last_check() -> None:
    doc = report.drift_report({"hosts": [host("drift"), {**host("error"), "host": "g"}]}, NOW)
    text = report.drift_metrics(doc, NOW).render()
    assert parse_samples(text, DRIFT_DETECTED)[("h", "x")] == 1
    assert 'host="g"' not in text and parse_samples(text, LAST_CHECK) == {}
    ok = report.drift_report({"hosts": [host("pass")]}, NOW)
    assert parse_samples(report.drift_metrics(ok, NOW).render(), LAST_CHECK) == {(): int(NOW)}


def test_unknown_checks_are_in_the_metrics_and_count_as_drift_unless_the_policy_accepts_them() -> None:
    """Before, an unknown check left no series at all: a model outside the catalogs was invisible to the alert
    that fires on drift while the exit code said "not in sync". Now it is a drift series (1) plus an unknown one;
    a team whose policy says ``drift: {unknown: in-sync}`` gets exit 0 and a drift series of 0, the unknown
    series still 1 so a dashboard can tell."""
    unknown = {**host("unknown"), "checks": [{"check": "prediction", "status": "unknown", "detail": "?"},
                                             {"check": "max-model-len", "status": "pass", "detail": ""}]}
    doc = report.drift_report({"hosts": [unknown]}, NOW)
    assert (doc["status"]["result"], doc["status"]["exitCode"]) == ("Unknown", 1)
    text = report.drift_metrics(doc, NOW).render()
    assert parse_samples(text, DRIFT_DETECTED)[("h", "prediction")] == 1
    assert parse_samples(text, DRIFT_UNKNOWN)[("h", "prediction")] == 1
    assert parse_samples(text, DRIFT_UNKNOWN)[("h", "max-model-len")] == 0

    accepted = report.drift_report({"hosts": [{**unknown, "accept_unknown": True}]}, NOW)
    assert (accepted["status"]["result"], accepted["status"]["exitCode"]) == ("NoDrift", 0)
    assert accepted["hosts"][0]["unknown"] == ["prediction"] and accepted["hosts"][0]["acceptsUnknown"] is True
    assert report.render_drift(accepted).splitlines()[0] == "h: in sync (unknown accepted by policy: prediction)"
    text = report.drift_metrics(accepted, NOW).render()
    assert parse_samples(text, DRIFT_DETECTED)[("h", "prediction")] == 0
    assert parse_samples(text, DRIFT_UNKNOWN)[("h", "prediction")] == 1
    assert report.drift_report({"hosts": [{**unknown, "accept_unknown": True}]}, NOW, True)["status"]["exitCode"] == 0


def test_the_policy_says_whether_unknown_is_drift() -> None:
    assert Policy().drift.unknown == "drift"
    assert Policy.from_mapping({"drift": {"unknown": "in-sync"}}).drift.accepts_unknown is True


def test_a_shifted_route_gets_the_shift_backs_reason_as_its_note_not_the_known_good_advice() -> None:
    """The fix of a route left shifted is restore's last step, which waits for a stable primary: the note says until
    when; the "roll to a known-good unit" advice is for the Deployment's own drift, and both can apply at once."""
    waiting = {"operation": report.SHIFT_BACK, "changes": False, "refused": None, "lines": [],
               "noop": "HTTPRoute llm/llm keeps 50% of its traffic on the fallback hosted: pod(s) Ready for 5m"}
    route = {"check": report.ROUTE_CHECK, "status": "drift", "detail": "left shifted"}
    unit = {"check": "known-good-unit", "status": "drift", "detail": "not a unit"}
    alone = report.host_entry({"host": "h", "checks": [route], "fix": [waiting]})
    assert alone["fix"]["note"] == ("deploys/restore.py shifts the route back once the primary is stable; not yet: "
                                    f"{waiting['noop']}")
    both = report.host_entry({"host": "h", "checks": [unit, route], "fix": [waiting]})["fix"]["note"]
    assert both.startswith("no operation of the deploys changes this: roll to a known-good unit")
    assert both.endswith(f"not yet: {waiting['noop']}")


def test_drift_whose_fix_is_refused_has_its_own_status_and_exit_code_and_counts_no_change() -> None:
    """In sync 0, drift a deploy would fix 1 (detailed 2), drift whose fix is refused 3 in both, an error 2 (detailed
    1) whatever else: a refused fix is never "N changes", and the operations after it are not run."""
    drift = [{"check": "max-model-len", "status": "drift", "detail": "not set"}]
    pin = {"operation": "Pin the GPU type", "changes": False, "refused": "pin: no node", "notRun": False,
           "lines": ["refused: pin: no node"], "noop": None}
    after = {"operation": "Smallest change", "changes": False, "refused": None, "notRun": True, "lines": [],
             "noop": None}
    fixable = {"operation": "Smallest change", "changes": True, "refused": None, "notRun": False, "lines": ["+x"],
               "noop": None}
    refused = {"host": "a", "checks": drift, "fix": [pin, after]}
    entry = report.host_entry(refused)
    assert entry["status"] == report.FIX_REFUSED
    assert (entry["fix"]["changes"], entry["fix"]["refused"]) == (0, {"operation": "Pin the GPU type",
                                                                      "reason": "pin: no node"})
    assert [op["operation"] for op in entry["fix"]["operations"]] == ["Pin the GPU type", "Smallest change"]
    other = {"host": "b", "checks": drift, "fix": [fixable]}
    insync = {"host": "c", "checks": [{"check": "max-model-len", "status": "pass", "detail": "set"}], "fix": []}
    for hosts, plain, detailed in (([insync], 0, 0), ([insync, other], 1, 2), ([other, refused], 3, 3),
                                   ([refused, {"host": "d", "error": "down"}], 2, 1)):
        assert report.drift_report({"hosts": hosts}, NOW)["status"]["exitCode"] == plain, hosts
        assert report.drift_report({"hosts": hosts}, NOW, True)["status"]["exitCode"] == detailed, hosts
    doc = report.drift_report({"hosts": [other, refused]}, NOW)
    assert (doc["status"]["result"], doc["status"]["drifted"], doc["status"]["fixRefused"]) == ("DriftFixRefused", 1, 1)
    assert report.host_entry(other)["fix"]["changes"] == 1
