"""The @k8s connector through the REAL pyinfra CLI (subprocess, gevent-patched) on the rehearsal cluster.

Bad input must give one clear line per host, a non-zero exit, and leave the cluster untouched; good
hosts in the same run still get their answer.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal, fact_output, host_lines, inventory, plain
from fixtures.sim_world import deployment as vllm_deployment
from fixtures.sim_world import nginx
from fixtures.sts_world import vllm_statefulset

rehearsal = pyinfra_run.rehearsal

DEPLOYMENT = "vllm_remedy.facts.deployment.Deployment"
HOST = "@k8s/rehearsal/llm/llama-8b"
POLICY = str(ROOT / "policies" / "llama-8b.yaml")


def snapshot(rehearsal: Rehearsal) -> list[tuple[str, str]]:
    """(name, resourceVersion) of every Deployment and ReplicaSet in llm: equal before/after = nothing changed."""
    client = rehearsal.client()
    objs = client.list_deployments("llm") + client.list_replicasets("llm")
    return sorted((o["kind"] + "/" + o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in objs)


def write_inventory(tmp: Path, text: str) -> str:
    path = tmp / "inventory.py"
    path.write_text(text)
    return str(path)


def test_local_inventory_through_the_cli(rehearsal: Rehearsal) -> None:
    got = rehearsal.pyinfra(inventory("local"), "fact", DEPLOYMENT)
    assert got.returncode == 0, got.stderr
    assert host_lines(got.stderr, HOST)[:2] == ["Connected", f"Loaded fact {DEPLOYMENT}"]
    fact = fact_output(got.stderr, DEPLOYMENT)[HOST]
    assert (fact["name"], fact["revision"], fact["context"], fact["server"]["image"]) == (
        "llama-8b", 14, "rehearsal", "vllm/vllm-openai:v0.8.5")


def test_local_inventory_falls_back_to_the_sim_default_kubeconfig(rehearsal: Rehearsal) -> None:
    state = rehearsal.tmp / "state"
    (state / "vllm-remedy" / "sim").mkdir(parents=True)
    shutil.copy(rehearsal.kubeconfig, state / "vllm-remedy" / "sim" / "kubeconfig")
    env = rehearsal.env({"XDG_STATE_HOME": str(state)})
    del env["KUBECONFIG"]
    got = pyinfra_run.run_pyinfra(inventory("local"), "fact", DEPLOYMENT, env=env, cwd=rehearsal.tmp)
    assert got.returncode == 0, got.stderr
    assert fact_output(got.stderr, DEPLOYMENT)[HOST]["resource_version"] == \
        rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["resourceVersion"]


def test_unknown_host_form_is_one_line_and_exit_1(rehearsal: Rehearsal) -> None:
    got = rehearsal.pyinfra("@k8s/onlyone", "fact", DEPLOYMENT)
    assert got.returncode == 1
    assert host_lines(got.stderr, "@k8s/onlyone") == [
        "@k8s/onlyone: expected @k8s/<cluster>/<namespace>/[<kind>/]<name> or @k8s/<cluster>/<namespace>"]
    assert plain(got.stderr).rstrip().endswith("--> pyinfra error: No hosts remaining!")


def test_bad_hosts_each_get_one_line_and_the_good_one_its_answer(rehearsal: Rehearsal) -> None:
    rehearsal.client().request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=nginx())
    # Let the controllers settle first: a rollout still writing status would move resourceVersions.
    assert rehearsal.cluster.wait_for(lambda: rehearsal.cluster.rolled_out("llm", "gateway"), timeout=20)
    before = snapshot(rehearsal)
    inv = write_inventory(rehearsal.tmp, (
        f'hosts = ["{HOST}", "@k8s/nope/llm/llama-8b", "@k8s/rehearsal/llm/missing", '
        '"@k8s/rehearsal/llm/gateway"]\n'))
    got = rehearsal.pyinfra(inv, "fact", DEPLOYMENT, "-y")
    assert got.returncode == 1
    assert host_lines(got.stderr, "@k8s/nope/llm/llama-8b") == [
        f"kubeconfig {rehearsal.kubeconfig} (from KUBECONFIG): context 'nope' not found (available: rehearsal)"]
    assert host_lines(got.stderr, "@k8s/rehearsal/llm/missing") == [
        'deployment llm/missing not found in context rehearsal (deployments.apps "missing" not found)']
    assert host_lines(got.stderr, "@k8s/rehearsal/llm/gateway") == [
        "deployment llm/gateway: no container runs a vLLM server (containers: nginx; looked for vllm serve / "
        "python -m vllm.entrypoints... in command/args)"]
    assert list(fact_output(got.stderr, DEPLOYMENT)) == [HOST]
    assert snapshot(rehearsal) == before


def test_all_hosts_bad_exits_non_zero_with_one_line_each(rehearsal: Rehearsal, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("flags:\n  max-model-len: {min: 9000, max: 100}\n")
    inv = write_inventory(rehearsal.tmp, f'hosts = [("{HOST}", {{"policy": "{broken}"}})]\n')
    got = rehearsal.pyinfra(inv, "fact", DEPLOYMENT)
    assert got.returncode == 1
    [line] = host_lines(got.stderr, HOST)
    assert line.startswith(f"{broken}: flags.max-model-len")
    assert plain(got.stderr).rstrip().endswith("--> pyinfra error: No hosts remaining!")
    assert "Traceback" not in got.stderr


def test_a_missing_kubeconfig_in_host_data_names_the_key(rehearsal: Rehearsal) -> None:
    inv = write_inventory(rehearsal.tmp, f'hosts = [("{HOST}", {{"kubeconfig": "/nonexistent/config"}})]\n')
    got = rehearsal.pyinfra(inv, "fact", DEPLOYMENT)
    assert got.returncode == 1
    assert host_lines(got.stderr, HOST) == ["host data kubeconfig: /nonexistent/config: no such file"]


def test_a_cluster_has_no_shell(rehearsal: Rehearsal) -> None:
    got = rehearsal.pyinfra(HOST, "exec", "--", "nvidia-smi")
    assert got.returncode == 1
    lines = host_lines(got.stderr, HOST)
    assert "nvidia-smi: not a @k8s verb (a cluster has no shell; known verbs: k8s-get, k8s-deployment, " \
           "k8s-history, k8s-pods, k8s-logs, k8s-nodes, k8s-gpu-metrics, k8s-events, k8s-statefulset, " \
           "k8s-leaderworkerset, k8s-inferenceservice)" in lines
    assert lines[-1] == "Error: executed 0 commands"


def test_namespace_host_expands_to_each_vllm_deployment(rehearsal: Rehearsal) -> None:
    client = rehearsal.client()
    client.request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=vllm_deployment("qwen-7b", replicas=1))
    client.request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=nginx())
    got = rehearsal.pyinfra("@k8s/rehearsal/llm", "fact", DEPLOYMENT)
    assert got.returncode == 0, got.stderr
    facts = fact_output(got.stderr, DEPLOYMENT)
    assert sorted(facts) == [HOST, "@k8s/rehearsal/llm/qwen-7b"]
    assert facts["@k8s/rehearsal/llm/qwen-7b"]["server"]["flags"] == {"max-model-len": "16384"}


def test_alias_and_policy_from_group_data(rehearsal: Rehearsal) -> None:
    inv = write_inventory(rehearsal.tmp, (
        f'prod = (["@k8s/prod/llm/llama-8b"], {{"k8s_contexts": {{"prod": "rehearsal"}}, "policy": "{POLICY}"}})\n'))
    got = rehearsal.pyinfra(inv, "fact", DEPLOYMENT)
    assert got.returncode == 0, got.stderr
    fact = fact_output(got.stderr, DEPLOYMENT)["@k8s/prod/llm/llama-8b"]
    assert (fact["context"], fact["name"]) == ("rehearsal", "llama-8b")


def test_many_hosts_are_read_in_parallel_under_gevent(rehearsal: Rehearsal) -> None:
    """Each GET of a Deployment takes 1.5 s: 12 hosts x (connect + fact) would take 36 s one after another; the
    bound is half that, so a loaded machine's slower start-up cannot pass for serial reads, nor fail parallel ones."""
    client = rehearsal.client()
    names = [f"m{i}" for i in range(12)]
    for name in names:
        client.request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=vllm_deployment(name, replicas=0))
    rehearsal.faults([{"verb": "get", "resource": "deployments", "latency_ms": 1500}])
    hosts = ",".join(f"@k8s/rehearsal/llm/{n}" for n in names)
    started = time.monotonic()
    got = rehearsal.pyinfra(hosts, "fact", DEPLOYMENT)
    elapsed = time.monotonic() - started
    assert got.returncode == 0, got.stderr
    facts = fact_output(got.stderr, DEPLOYMENT)
    assert sorted(facts) == sorted(f"@k8s/rehearsal/llm/{n}" for n in names)
    assert {f["name"] for f in facts.values()} == set(names)
    assert elapsed < 18.0, f"{elapsed:.1f} s: hosts were not read concurrently"


def test_flaky_api_is_retried_and_converges(rehearsal: Rehearsal) -> None:
    rehearsal.faults([{"verb": "get", "resource": "deployments", "error_rate": 0.5, "error_code": 503}])
    got = rehearsal.pyinfra(inventory("local"), "fact", DEPLOYMENT, "vllm_remedy.facts.history.RolloutHistory")
    assert got.returncode == 0, got.stderr
    assert fact_output(got.stderr, DEPLOYMENT)[HOST]["revision"] == 14


def test_an_api_that_keeps_failing_is_one_line_per_host(rehearsal: Rehearsal) -> None:
    rehearsal.faults([{"verb": "list", "resource": "pods", "error_rate": 1.0, "error_code": 503}])
    got = rehearsal.pyinfra(inventory("local"), "fact", "vllm_remedy.facts.pods.Pods")
    lines = host_lines(got.stderr, HOST)
    assert lines[0] == "Connected"
    assert lines[1] == ("rehearsal: GET /api/v1/namespaces/llm/pods: HTTP 503: injected fault: 503 on list "
                        "(after 5 attempts)")
    assert lines[2].startswith("Error: could not load fact: vllm_remedy.facts.pods.Pods")
    assert "Traceback" not in got.stderr
    # pyinfra's `fact` command never fails a host for a fact (exit 0); in a deploy the host fails (exit 1):
    assert got.returncode == 0


def test_example_prod_inventory_fails_cleanly_without_its_clusters(rehearsal: Rehearsal) -> None:
    env = rehearsal.env()
    del env["KUBECONFIG"]
    got = pyinfra_run.run_pyinfra(inventory("prod"), "fact", DEPLOYMENT, "-y", env=env, cwd=rehearsal.tmp)
    assert got.returncode == 1
    assert host_lines(got.stderr, "@k8s/prod-eu/llm/llama-8b") == [
        "kubeconfig ~/.kube/config (no such file): no kubeconfig found; set KUBECONFIG or set host data kubeconfig"]
    assert host_lines(got.stderr, "@k8s/prod-us/llm/llama-8b") == [
        "host data k8s_contexts.prod-us.kubeconfig: ~/.kube/eks-prod: no such file"]
    staging = pyinfra_run.run_pyinfra(inventory("staging"), "debug-inventory", env=env, cwd=rehearsal.tmp)
    assert staging.returncode == 0, staging.stderr
    assert "[@k8s/staging/llm-staging/llama-8b]" in plain(staging.stderr)


def test_workload_kinds_through_the_cli(rehearsal: Rehearsal) -> None:
    """A kind the cluster does not serve and a StatefulSet without vLLM: one line each, exit 1, the Deployment
    host still answers; an unknown kind stops the inventory in one line."""
    client = rehearsal.client()
    no_vllm = vllm_statefulset()
    no_vllm["spec"]["template"]["spec"]["containers"] = nginx()["spec"]["template"]["spec"]["containers"]
    client.request("POST", client.object_path("llm", "statefulsets"), body=no_vllm)
    before = snapshot(rehearsal)
    inv = write_inventory(rehearsal.tmp, (
        f'hosts = ["{HOST}", "@k8s/rehearsal/llm/leaderworkerset/llama-405b", '
        '"@k8s/rehearsal/llm/statefulset/llama-70b"]\n'))
    got = rehearsal.pyinfra(inv, "fact", DEPLOYMENT, "-y")
    assert got.returncode == 1
    assert host_lines(got.stderr, "@k8s/rehearsal/llm/leaderworkerset/llama-405b") == [
        "leaderworkerset llm/llama-405b: kind LeaderWorkerSet (leaderworkersets.leaderworkerset.x-k8s.io) is not "
        "served by context rehearsal: its API group or CRD is not installed"]
    assert host_lines(got.stderr, "@k8s/rehearsal/llm/statefulset/llama-70b") == [
        "statefulset llm/llama-70b: no container runs a vLLM server (containers: nginx; looked for vllm serve / "
        "python -m vllm.entrypoints... in command/args)"]
    assert list(fact_output(got.stderr, DEPLOYMENT)) == [HOST]
    unknown = write_inventory(rehearsal.tmp, 'hosts = ["@k8s/rehearsal/llm/daemonset/llama-8b"]\n')
    got = rehearsal.pyinfra(unknown, "fact", DEPLOYMENT, "-y")
    assert got.returncode != 0
    assert host_lines(got.stderr, "@k8s/rehearsal/llm/daemonset/llama-8b") == [
        "@k8s/rehearsal/llm/daemonset/llama-8b: unknown kind 'daemonset'; expected one of deployment, statefulset, "
        "leaderworkerset, inferenceservice"]
    assert "Traceback" not in got.stderr
    assert snapshot(rehearsal) == before
