"""`vllm-remedy drift` end to end on the rehearsal cluster: found / not found, both exit-code conventions,
API errors and an unreachable cluster (never "no drift"), the fix the deploys would make, metrics."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.drift_world import GOOD_ARGS, HOST, MODEL, UNIT, add_vllm_deployment, as_json, inventory, policy, set_args
from fixtures.pyinfra_run import Rehearsal, crash_on_start
from fixtures.yaml_bombs import hostile_inputs
from vllm_remedy.metrics import DRIFT_DETECTED, LAST_CHECK, parse_samples
from vllm_remedy.sim import kubeconfig as sim_kubeconfig

rehearsal = pyinfra_run.rehearsal
CHECKS = ["max-model-len", "flag-bounds", "known-good-unit", "gpu-pinned", "enforce-eager", "concurrency",
          "prediction", "crash-loop", "fallback-route"]


def notes(dep: dict) -> dict[str, str]:
    """Annotations minus the controller's revision bookkeeping."""
    return {k: v for k, v in dep["metadata"]["annotations"].items() if k != "deployment.kubernetes.io/revision"}


def statuses(doc: dict, i: int = 0) -> dict[str, str]:
    return {c["check"]: c["status"] for c in doc["hosts"][i]["checks"]}


def test_in_sync_exits_0_in_both_conventions(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    version = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["resourceVersion"]
    got = cli("drift", "-i", inv, "-o", "json")
    assert got.returncode == 0, got.stderr
    doc = as_json(got)
    assert (doc["apiVersion"], doc["kind"]) == ("vllm-remedy.io/v1alpha1", "DriftReport")
    assert doc["status"] | {"exitCodes": None} == {"result": "NoDrift", "exitCode": 0, "exitCodes": None, "hosts": 1,
                                                     "fixRefused": 0,
                                                     "inSync": 1, "drifted": 0, "errors": 0, "unknown": 0}
    assert statuses(doc) == dict.fromkeys(CHECKS, "pass")
    host = doc["hosts"][0]
    assert host["checks"][2]["detail"] == "matches known-good unit llama-8b-v085"
    assert host["checks"][5]["detail"] == "predicted maximum concurrency 12.08x ≥ peak 8 on NVIDIA-L40S"
    assert host["fix"] == {"operations": [], "changes": 0, "refused": None, "note": None}
    assert host["gitops"] is None
    assert cli("drift", "-i", inv, "--detailed-exitcode").returncode == 0
    human = cli("drift", "-i", inv)
    assert human.stdout.splitlines()[0] == f"{HOST}: in sync"
    assert human.stdout.splitlines()[-1] == "1 host(s): 1 in sync, 0 drifted, 0 error(s) -> NoDrift (exit 0)"
    assert rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["resourceVersion"] == version


def test_drift_found_with_the_deploys_fix_and_nothing_written(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    before = set_args(rehearsal, [MODEL, "--gpu-memory-utilization", "0.97", "--max-num-seqs", "64"])
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    got = cli("drift", "-i", inv, "-o", "json")
    assert got.returncode == 1, got.stderr
    doc = as_json(got)
    assert doc["status"]["result"] == "Drift"
    host = doc["hosts"][0]
    assert host["drifted"] == ["max-model-len", "flag-bounds", "known-good-unit", "concurrency"]
    assert host["checks"][1]["detail"] == "--gpu-memory-utilization=0.97: expected a number in [0.8, 0.92]"
    assert host["checks"][5]["detail"] == ("predicted maximum concurrency 1.70x on NVIDIA-L40S is below the "
                                           "policy's peak 8")
    assert host["prediction"]["line"] == ("prediction on NVIDIA-L40S: fits — KV cache 223,312 tokens, maximum "
                                          "concurrency 1.70x at max-model-len 131072")
    # exactly what deploys/budget.py would do: one change brings the flag into bounds and restores headroom
    ops = {op["operation"]: op for op in host["fix"]["operations"]}
    assert sorted(ops) == ["Smallest change that restores headroom"]
    budget = ops["Smallest change that restores headroom"]
    assert (budget["changes"], budget["refused"]) == (True, None)
    assert "+    - --max-model-len" in budget["lines"] and "+    - '16384'" in budget["lines"]
    # the policy's preferred 0.90 (predicted to fit), not the nearest bound 0.92
    assert "-    - '0.97'" in budget["lines"] and "+    - '0.9'" in budget["lines"]
    assert budget["lines"][-1] == ("prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens, maximum concurrency "
                                   "12.08x at max-model-len 16384")
    assert host["fix"]["note"] is None
    assert cli("drift", "-i", inv, "--detailed-exitcode").returncode == 2
    after = rehearsal.client().get_deployment("llm", "llama-8b")  # the rollout moves status, never the spec
    assert (after["spec"], after["metadata"]["generation"], notes(after)) == (
        before["spec"], before["metadata"]["generation"], notes(before))


def test_a_drift_check_lists_each_namespace_once_and_reads_nothing_per_host(rehearsal: Rehearsal,
                                                                             tmp_path: Path, cli) -> None:
    """Three operations plan fixes per host; without the read snapshot each re-read the Deployment (pyinfra
    3.10 keeps no fact cache): 9 GETs of it, and 2 cluster-wide node and pod lists per host. With it, two
    hosts of one namespace cost what one does (tests/commands/test_drift_fleet.py counts a whole fleet)."""
    set_args(rehearsal, [MODEL, "--gpu-memory-utilization", "0.97", "--max-num-seqs", "64"])
    add_vllm_deployment(rehearsal, "llama-8b-canary")
    both = policy(tmp_path, UNIT + "target: {namespaces: [llm], deployments: [llama-8b, llama-8b-canary]}\n")
    inv = inventory(tmp_path, rehearsal.kubeconfig, both, hosts=[HOST, f"{HOST}-canary"])
    seen: Counter[tuple[str, str]] = Counter()
    serve = rehearsal.server.dispatch

    def counting(req: Any) -> Any:  # instrumentation only: every request is still served by the sim
        seen[(req.method, req.path.split("?")[0].split("/", 3)[-1])] += 1
        return serve(req)

    rehearsal.server.dispatch = counting  # type: ignore[method-assign]
    got = cli("drift", "-i", inv, "-o", "json")
    assert got.returncode == 1, got.stderr
    doc = as_json(got)
    assert [h["status"] for h in doc["hosts"]] == ["Drifted", "Drifted"]
    fixes = [h["fix"] for h in doc["hosts"]]
    assert [len(f["operations"]) for f in fixes] == [1, 1], json.dumps(fixes)  # one fix planned, two found nothing
    # pyinfra pads the shorter host's prefix; the diff's own indentation is all that is left of it
    firsts = [f["operations"][0]["lines"][0] for f in fixes]
    assert firsts[0] == firsts[1] and firsts[0].startswith("problem: "), firsts
    # the namespace's Deployments, ReplicaSets and pods listed once; nodes, every pod and the clock once per cluster
    assert seen == {("GET", f"apis/apps/v1/namespaces/llm/{r}"): 1 for r in ("deployments", "replicasets")} | {
        ("GET", "api/v1/namespaces/llm/pods"): 1, ("GET", "api/v1/nodes"): 1, ("GET", "api/v1/pods"): 1,
        ("GET", "version"): 1}, seen


def test_seeded_world_is_in_sync_with_the_shipped_policy(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """The runbook's revision 14 is policies/llama-8b.yaml's known-good unit: image, pinned revision, flags."""
    inv = inventory(tmp_path, rehearsal.kubeconfig, str(pyinfra_run.ROOT / "policies" / "llama-8b.yaml"))
    got = cli("drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    assert (got.returncode, doc["hosts"][0]["status"], doc["status"]["result"]) == (0, "InSync", "NoDrift")


def test_an_unpinned_model_revision_drifts_from_the_shipped_policy(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """The shipped llama-8b policy pins the model revision; a revision that drops --revision is not the unit."""
    set_args(rehearsal, [MODEL, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"])
    inv = inventory(tmp_path, rehearsal.kubeconfig, str(pyinfra_run.ROOT / "policies" / "llama-8b.yaml"))
    doc = as_json(cli("drift", "-i", inv, "-o", "json"))
    host = doc["hosts"][0]
    assert host["drifted"] == ["known-good-unit"]
    assert host["checks"][2]["detail"] == (
        "running unit (image vllm/vllm-openai:v0.8.5, model meta-llama/Llama-3.1-8B-Instruct, revision unpinned, "
        "flags --gpu-memory-utilization 0.90 --max-model-len 16384 --max-num-seqs 64) is none of the allowed units: "
        "llama-8b-rev14")
    assert host["fix"]["note"].startswith("no operation of the deploys changes this: roll to a known-good unit")
    assert doc["status"]["exitCode"] == 1


def test_api_error_is_an_error_never_no_drift(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    rehearsal.faults([{"verb": verb, "resource": "deployments", "error_rate": 1.0, "error_code": 500}
                      for verb in ("get", "list")])  # drift lists the namespace's Deployments once
    got = cli("drift", "-i", inv, "-o", "json")
    assert got.returncode == 2
    doc = as_json(got)
    assert doc["status"] | {"exitCodes": None} == {"result": "Error", "exitCode": 2, "exitCodes": None, "hosts": 1,
                                                     "inSync": 0, "drifted": 0, "fixRefused": 0, "errors": 1,
                                                     "unknown": 0}
    assert doc["hosts"][0]["status"] == "Error"
    assert "injected fault: 500 on list" in doc["hosts"][0]["error"]
    assert f"vllm-remedy: error: {HOST}: {doc['hosts'][0]['error']}" in got.stderr.splitlines()
    assert cli("drift", "-i", inv, "--detailed-exitcode").returncode == 1


def test_failing_read_inside_the_fix_plan_is_an_error(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """Connect and the checks succeed; the pin operation's node listing fails: the host is an error."""
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    rehearsal.faults([{"verb": "list", "resource": "nodes", "error_rate": 1.0, "error_code": 503}])
    got = cli("drift", "-i", inv, "-o", "json", "--detailed-exitcode")
    assert got.returncode == 1
    host = as_json(got)["hosts"][0]
    assert host["status"] == "Error"
    assert host["error"] == ("Pin the GPU type: rehearsal: GET /api/v1/nodes: HTTP 503: injected fault: 503 on list "
                             "(after 5 attempts)")


def test_unreachable_cluster_is_an_error_even_when_others_are_fine(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    down = sim_kubeconfig.write(tmp_path / "down-kubeconfig", "http://127.0.0.1:9", ["down"])
    path = policy(tmp_path)
    inv = tmp_path / "mixed.py"
    inv.write_text(f"ok = ([{HOST!r}], {{'kubeconfig': {str(rehearsal.kubeconfig)!r}, 'policy': {path!r}}})\n"
                   f"gone = (['@k8s/down/llm/llama-8b'], {{'kubeconfig': {str(down)!r}, 'policy': {path!r}}})\n")
    got = cli("drift", "-i", str(inv), "-o", "json")
    assert got.returncode == 2
    doc = as_json(got)
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert by_host[HOST]["status"] == "InSync"
    assert by_host["@k8s/down/llm/llama-8b"]["status"] == "Error"
    assert by_host["@k8s/down/llm/llama-8b"]["error"].startswith(
        "down: GET /apis/apps/v1/namespaces/llm/deployments: no answer after 5 attempt(s): ")
    assert "Connection refused" in by_host["@k8s/down/llm/llama-8b"]["error"]
    assert doc["status"]["result"] == "Error"
    assert cli("drift", "-i", str(inv), "--detailed-exitcode").returncode == 1
    only_ok = cli("drift", "-i", str(inv), "--limit", "ok", "-o", "json")
    assert (only_ok.returncode, as_json(only_ok)["status"]["hosts"]) == (0, 1)


def test_bad_input_is_one_line_and_detailed_mode_maps_it_to_1(tmp_path: Path, cli) -> None:
    missing = str(tmp_path / "nope.py")
    got = cli("drift", "-i", missing)
    line = f"vllm-remedy: error: {missing}: no such inventory file\n"
    assert (got.returncode, got.stdout, got.stderr) == (2, "", line)
    got = cli("drift", "-i", missing, "--detailed-exitcode")
    assert (got.returncode, got.stderr) == (1, f"vllm-remedy: error: {missing}: no such inventory file\n")
    broken = tmp_path / "broken.py"
    broken.write_text("hosts = [\n")
    got = cli("drift", "-i", str(broken))
    assert got.returncode == 2 and got.stderr.startswith(f"vllm-remedy: error: {broken}: cannot load the inventory: ")
    assert len(got.stderr.splitlines()) == 1
    inv = inventory(tmp_path, tmp_path / "kubeconfig", str(tmp_path / "no-policy.yaml"))
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    got = cli("drift", "-i", inv, "--limit", "nomatch")
    assert (got.returncode, got.stderr) == (2, f"vllm-remedy: error: {inv}: no host matches --limit nomatch\n")


def test_a_hostile_policy_is_one_line_naming_it_and_exit_2(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """Before the read limits a deeply nested policy printed ``RecursionError`` without naming the file."""
    before = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["resourceVersion"]
    for name in ("nested-flow-map", "nested-block-map", "long-integer", "many-aliases"):
        text, refusal = hostile_inputs()[name]
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        got = cli("drift", "-i", inventory(tmp_path, rehearsal.kubeconfig, str(path)))
        assert (got.returncode, got.stderr) == (2, f"vllm-remedy: error: {HOST}: {path}: refused: {refusal}\n")
    assert rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["resourceVersion"] == before


def test_metrics_file_has_per_check_gauges_and_last_check(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    set_args(rehearsal, [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"])
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path))
    prom = tmp_path / "drift.prom"
    assert cli("drift", "-i", inv, "--metrics-file", str(prom)).returncode == 1
    text = prom.read_text()
    drift = parse_samples(text, DRIFT_DETECTED)
    assert {labels[1]: v for labels, v in drift.items()} == {
        "max-model-len": 1.0, "flag-bounds": 0.0, "known-good-unit": 1.0, "gpu-pinned": 0.0, "enforce-eager": 0.0,
        "concurrency": 1.0, "prediction": 0.0, "crash-loop": 0.0, "fallback-route": 0.0}
    assert {labels[0] for labels in drift} == {HOST}
    checked = parse_samples(text, LAST_CHECK)
    assert len(checked) == 1
    set_args(rehearsal, GOOD_ARGS)
    rehearsal.faults([{"verb": "list", "resource": "deployments", "error_rate": 1.0, "error_code": 500}])
    assert cli("drift", "-i", inv, "--metrics-file", str(prom)).returncode == 2
    after = prom.read_text()
    # a failed check looks stale (the last-check time does not move) and resolves nothing it could not see
    assert parse_samples(after, LAST_CHECK) == checked
    assert parse_samples(after, DRIFT_DETECTED) == drift


def test_a_usage_error_under_detailed_exitcode_is_an_error_not_drift(cli) -> None:
    """Terraform's convention reads 2 as "drift": argparse's usage exit (2) must become 1, or a CronJob that
    accepts 2 would pass with a mistyped flag."""
    for argv in (["drift", "--detailed-exitcode"], ["drift", "-i", "inv.py", "--bogus", "--detailed-exitcode"]):
        got = cli(*argv)
        assert got.returncode == 1, argv
        assert len(got.stderr.strip().splitlines()) == 1 and "error:" in got.stderr
    assert cli("drift", "--bogus").returncode == 2  # without the flag: kubectl's convention, 2 = error


def test_an_inventory_that_raises_names_the_users_error(tmp_path: Path, cli) -> None:
    inv = tmp_path / "broken.py"
    inv.write_text('raise RuntimeError("boom: no such cluster list")\n')
    got = cli("drift", "-i", str(inv))
    assert got.returncode == 2
    assert got.stderr.strip() == (f"vllm-remedy: error: {inv}: cannot load the inventory: RuntimeError: "
                                  "boom: no such cluster list")


def test_a_policy_directory_serves_a_whole_namespace(rehearsal: Rehearsal, tmp_path: Path, cli,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-cluster CronJob's inventory: every vLLM Deployment of the namespace, each under the policy that
    names it most narrowly - a second model no longer turns the whole check into an error."""
    add_vllm_deployment(rehearsal, "qwen-7b", ["Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "16384"])
    shipped = pyinfra_run.ROOT / "policies"
    monkeypatch.setenv("KUBECONFIG", str(rehearsal.kubeconfig))  # namespace hosts expand at inventory load
    inv = inventory(tmp_path, rehearsal.kubeconfig, str(shipped), hosts=["@k8s/rehearsal/llm"])
    got = cli("drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    assert got.returncode in (0, 1) and doc["status"]["errors"] == 0, got.stderr
    chosen = {h["host"]: Path(h["policy"]).name for h in doc["hosts"]}
    assert chosen == {HOST: "llama-8b.yaml", "@k8s/rehearsal/llm/qwen-7b": "default.yaml"}
    assert next(h for h in doc["hosts"] if h["host"] == HOST)["status"] == "InSync"


def _crash_looping(rehearsal: Rehearsal) -> bool:
    """A pod of llama-8b's newest revision in CrashLoopBackOff or restarted twice after a failure."""
    for pod in rehearsal.client().list_pods("llm", "app=llama-8b"):
        for s in pod["status"].get("containerStatuses") or []:
            if ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff" or (
                    s.get("restartCount", 0) >= 2):
                return True
    return False


def test_a_crash_looping_model_outside_the_catalog_is_never_in_sync(rehearsal: Rehearsal, tmp_path: Path,
                                                                     cli) -> None:
    """gpt-oss-20b is not in the model catalog and, offline with an empty Hugging Face cache, resolves nowhere:
    nothing can be predicted and vLLM refuses to start. Both are findings - an unknown prediction (saying why) and a
    crash loop - and the budget refuses to plan a fix it cannot predict, so the run exits 3 (drift whose fix is
    refused, in both conventions), never 0."""
    # the model as vLLM 0.8.5's `vllm serve` takes it: a positional (its `--model` is refused before the model is
    # looked up: "you should provide the model as a positional argument", entrypoints/cli/main.py@0.8.5)
    set_args(rehearsal, ["openai/gpt-oss-20b", "--max-model-len", "16384",
                         "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"])
    assert rehearsal.cluster.wait_for(lambda: _crash_looping(rehearsal), timeout=60)
    # the policy covers the model and lists no unit to miss: every other check passes
    covers = "target: {namespaces: [llm], deployments: [llama-8b], models: [openai/gpt-oss-20b]}\nknown_good: []\n"
    inv = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, covers))
    got = cli("drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    host = doc["hosts"][0]
    assert got.returncode == 3, json.dumps(host["checks"])
    assert host["status"] == "FixRefused" and doc["status"]["result"] == "DriftFixRefused"
    checks = {c["check"]: c for c in host["checks"]}
    assert checks["prediction"]["status"] == "unknown"
    assert checks["prediction"]["detail"] == ("model openai/gpt-oss-20b: not in the catalog nor the local Hugging Face "
                                              "cache, and HF_HUB_OFFLINE is set")
    assert checks["crash-loop"]["status"] == "drift", checks["crash-loop"]
    assert checks["crash-loop"]["detail"].startswith("revision 15 crash-loops: pod llama-8b-"), checks["crash-loop"]
    # vLLM's refusal of a model it cannot get: its own class, not an OOM one
    assert checks["crash-loop"]["detail"].endswith("; startup log: model_unavailable")
    assert host["drifted"] == ["crash-loop"] and host["unknown"] == ["concurrency", "prediction"]
    assert host["fix"]["refused"] == {"operation": "Smallest change that restores headroom",
                                      "reason": f"deployment llm/llama-8b: {checks['prediction']['detail']}"}
    assert cli("drift", "-i", inv, "--detailed-exitcode").returncode == 3
    human = cli("drift", "-i", inv).stdout.splitlines()
    assert human[0].startswith(f"{HOST}: DRIFTED (") and "crash-loop" in human[0], human
    # a policy that accepts unknown still sees the crash loop: acceptance covers what cannot be judged, only
    accepting = inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, covers + "drift: {unknown: in-sync}\n",
                                                                 name="accepting"), name="inv2")
    host = as_json(cli("drift", "-i", accepting, "-o", "json"))["hosts"][0]
    assert (host["status"], host["acceptsUnknown"], host["unknown"]) == ("FixRefused", True,
                                                                         ["concurrency", "prediction"])


# Real vLLM 0.6.4 log, Llama-3.1-8B at max-model-len 29000 (source: tests/data/logs/SOURCES.md).
MAX_LEN_LOG = pyinfra_run.ROOT / "tests" / "data" / "logs" / "v0.6.4_rtx3090_llama8b_29k_max_len.log"


def test_a_crash_loop_is_drift_whatever_the_other_checks_say(rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    """The shipped policy's known-good unit, exactly, yet every pod dies at start: drift, with the failure class
    read from the classified startup log. Pods are read once per host, as the fix plan reads them anyway."""
    def crashing(dep: dict) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(GOOD_ARGS)
        dep["spec"]["template"]["metadata"]["annotations"] = crash_on_start(MAX_LEN_LOG.read_text())

    rehearsal.change(crashing)
    assert rehearsal.cluster.wait_for(lambda: _crash_looping(rehearsal), timeout=60)
    inv = inventory(tmp_path, rehearsal.kubeconfig, str(pyinfra_run.ROOT / "policies" / "llama-8b.yaml"))
    got = cli("drift", "-i", inv, "-o", "json")
    doc = as_json(got)
    host = doc["hosts"][0]
    # the budget's fix is refused: the known-good unit is predicted to fit already
    assert (got.returncode, host["status"], host["drifted"], host["unknown"]) == (
        3, "FixRefused", ["crash-loop"], []), json.dumps(host["checks"])
    assert host["fix"]["changes"] == 0 and "no change within policy" in host["fix"]["refused"]["reason"]
    detail = next(c["detail"] for c in host["checks"] if c["check"] == "crash-loop")
    assert detail.startswith("revision 15 crash-loops: pod llama-8b-") and "(last exit 1, Error)" in detail, detail
    assert "startup log: max_len_exceeds_kv" in detail, detail
