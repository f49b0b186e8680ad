"""The K8sConnector class in-process (pyinfra's own Inventory/State) against the rehearsal cluster.

Covers what the CLI tests cannot see directly: the exact names/data make_names_data yields, the exact
ConnectError lines, and the verb language's answers and refusals through ``run_shell_command``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyinfra.api import Config, Inventory, State
from pyinfra.api.exceptions import ConnectError, InventoryError

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.sim_world import deployment as vllm_deployment
from fixtures.sim_world import nginx
from fixtures.sts_world import vllm_statefulset
from vllm_remedy.connectors.k8s import K8sConnector, vllm_hosts
from vllm_remedy.connectors.verbs import DEFAULT_TAIL

rehearsal = pyinfra_run.rehearsal

POLICY = str(ROOT / "policies" / "llama-8b.yaml")
HOST = "@k8s/rehearsal/llm/llama-8b"


def create(rehearsal: Rehearsal, manifest: dict[str, Any]) -> None:
    rehearsal.client().request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=manifest)


def connected(rehearsal: Rehearsal, host: str = HOST, **data: Any) -> tuple[State, Any]:
    inventory = Inventory(([(host, {"kubeconfig": str(rehearsal.kubeconfig), **data})], {}))
    state = State(inventory, Config())
    target = inventory.get_host(host)
    target.connect(raise_exceptions=True, show_errors=False)
    return state, target


def connect_error(rehearsal: Rehearsal, host: str = HOST, **data: Any) -> str:
    with pytest.raises(ConnectError) as err:
        connected(rehearsal, host, **data)
    message = str(err.value)
    assert "\n" not in message
    return message


# ---- make_names_data -----------------------------------------------------------------------

def test_deployment_form_is_one_host_without_io() -> None:
    assert list(K8sConnector.make_names_data("prod/llm/llama-8b")) == [
        ("@k8s/prod/llm/llama-8b", {"k8s_cluster": "prod", "k8s_namespace": "llm", "k8s_deployment": "llama-8b"},
         ["@k8s"])]


def test_kind_form_is_one_host_carrying_its_kind() -> None:
    assert list(K8sConnector.make_names_data("prod/llm/statefulset/llama-8b")) == [
        ("@k8s/prod/llm/statefulset/llama-8b", {"k8s_cluster": "prod", "k8s_namespace": "llm",
                                                "k8s_deployment": "llama-8b", "k8s_kind": "statefulset"}, ["@k8s"])]
    assert list(K8sConnector.make_names_data("prod/llm/deployment/llama-8b")) == list(
        K8sConnector.make_names_data("prod/llm/llama-8b"))


def test_unknown_kind_fails_its_host_at_connect() -> None:
    """Not an InventoryError: that stopped every host of the inventory."""
    [(name, data, groups)] = list(K8sConnector.make_names_data("prod/llm/daemonset/llama-8b"))
    assert (name, data, groups) == ("@k8s/prod/llm/daemonset/llama-8b", {"k8s_name_error": (
        "@k8s/prod/llm/daemonset/llama-8b: unknown kind 'daemonset'; expected one of deployment, statefulset, "
        "leaderworkerset, inferenceservice")},
        ["@k8s"])


@pytest.mark.parametrize(("host", "expected"), [
    ("@k8s/rehearsal/llm/leaderworkerset/llama-405b",
     "leaderworkerset llm/llama-405b: kind LeaderWorkerSet (leaderworkersets.leaderworkerset.x-k8s.io) is not "
     "served by context rehearsal: its API group or CRD is not installed"),
    ("@k8s/rehearsal/llm/inferenceservice/qwen",
     "inferenceservice llm/qwen: kind InferenceService (inferenceservices.serving.kserve.io) is not served by "
     "context rehearsal: its API group or CRD is not installed"),
])
def test_a_kind_the_cluster_does_not_serve_fails_connect_naming_it(rehearsal: Rehearsal, host: str,
                                                                   expected: str) -> None:
    before = rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["resourceVersion"]
    assert connect_error(rehearsal, host) == expected
    assert rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["resourceVersion"] == before


def test_a_statefulset_host_connects_or_says_what_is_wrong(rehearsal: Rehearsal) -> None:
    """The rehearsal cluster serves StatefulSets: a missing one and one without vLLM fail connect with their own
    line, nothing written; one running vLLM connects, its verbs reading the set."""
    client = rehearsal.client()
    served = vllm_statefulset()
    client.request("POST", client.object_path("llm", "statefulsets"), body=served)
    plain = vllm_statefulset("web")
    plain["spec"]["template"]["spec"]["containers"] = nginx()["spec"]["template"]["spec"]["containers"]
    client.request("POST", client.object_path("llm", "statefulsets"), body=plain)
    before = client.request("GET", client.object_path("llm", "statefulsets", "llama-70b"))["metadata"]
    assert connect_error(rehearsal, "@k8s/rehearsal/llm/statefulset/nope") == (
        'statefulset llm/nope not found in context rehearsal (statefulsets.apps "nope" not found)')
    assert connect_error(rehearsal, "@k8s/rehearsal/llm/statefulset/web").startswith(
        "statefulset llm/web: no container runs a vLLM server (containers: nginx;")
    _, host = connected(rehearsal, "@k8s/rehearsal/llm/statefulset/llama-70b")
    assert (host.connector.scope.kind, host.connector.server.container_name) == ("statefulset", "vllm")
    ok, out = host.run_shell_command("k8s-statefulset")
    doc = json.loads(out.stdout)
    assert ok and (doc["statefulset"]["metadata"]["name"], doc["container"]) == ("llama-70b", "vllm")
    ok, out = host.run_shell_command("k8s-deployment")
    assert (ok, out.stderr) == (False, "k8s-deployment: reads a deployment, and this host is a statefulset (not "
                                       "supported for it yet)")
    after = client.request("GET", client.object_path("llm", "statefulsets", "llama-70b"))["metadata"]
    # what only a write changes (the controller's status writes move resourceVersion while its pod starts)
    assert [after.get(k) for k in ("generation", "annotations", "labels")] == \
        [before.get(k) for k in ("generation", "annotations", "labels")]


def test_bad_host_form_fails_its_host_at_connect() -> None:
    [(name, data, _)] = list(K8sConnector.make_names_data("onlyone"))
    assert (name, data) == ("@k8s/onlyone", {"k8s_name_error": (
        "@k8s/onlyone: expected @k8s/<cluster>/<namespace>/[<kind>/]<name> or @k8s/<cluster>/<namespace>")})


def test_namespace_form_expands_to_vllm_deployments_only(rehearsal: Rehearsal,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    create(rehearsal, vllm_deployment("qwen-7b", replicas=1))
    create(rehearsal, nginx())
    monkeypatch.setenv("KUBECONFIG", str(rehearsal.kubeconfig))
    got = list(K8sConnector.make_names_data("rehearsal/llm"))
    assert got == [
        ("@k8s/rehearsal/llm/llama-8b", {"k8s_cluster": "rehearsal", "k8s_namespace": "llm",
                                         "k8s_deployment": "llama-8b"}, ["@k8s"]),
        ("@k8s/rehearsal/llm/qwen-7b", {"k8s_cluster": "rehearsal", "k8s_namespace": "llm",
                                        "k8s_deployment": "qwen-7b"}, ["@k8s"])]


def test_namespace_form_finds_vllm_behind_a_wrapper(rehearsal: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    wrapped = vllm_deployment("qwen-7b", replicas=1)
    pod = wrapped["spec"]["template"]["spec"]["containers"][0]
    pod["command"], pod["args"] = ["tini", "--", "vllm", "serve"], ["Qwen/Qwen2.5-7B-Instruct"]
    create(rehearsal, wrapped)
    monkeypatch.setenv("KUBECONFIG", str(rehearsal.kubeconfig))
    assert [h for h, _d, _g in K8sConnector.make_names_data("rehearsal/llm")] == [
        "@k8s/rehearsal/llm/llama-8b", "@k8s/rehearsal/llm/qwen-7b"]


def test_namespace_form_says_which_gpu_deployment_it_skips(rehearsal: Rehearsal, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    odd = vllm_deployment("qwen-7b", replicas=1)
    pod = odd["spec"]["template"]["spec"]["containers"][0]
    pod["command"], pod["args"] = ["/opt/launch.sh"], ["Qwen/Qwen2.5-7B-Instruct"]
    create(rehearsal, odd)
    create(rehearsal, nginx())
    monkeypatch.setenv("KUBECONFIG", str(rehearsal.kubeconfig))
    with caplog.at_level("WARNING"):
        got = [h for h, _d, _g in K8sConnector.make_names_data("rehearsal/llm")]
    assert got == ["@k8s/rehearsal/llm/llama-8b"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "@k8s/rehearsal/llm: skipping Deployment qwen-7b: it requests GPUs (container vllm) but no vLLM server was "
        "recognised in its command/args; name it as @k8s/rehearsal/llm/qwen-7b to see why"]


def test_namespace_form_that_cannot_expand_keeps_one_host_carrying_the_reason(
        rehearsal: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(rehearsal.kubeconfig))
    [(name, data, groups)] = list(K8sConnector.make_names_data("prod/llm"))
    assert (name, groups) == ("@k8s/prod/llm", ["@k8s"])
    assert data["k8s_expand_error"] == (
        "cannot expand @k8s/prod/llm (namespace hosts expand at inventory load with the default kubeconfig and "
        "'prod' as context; for aliases or another kubeconfig list hosts with "
        f"vllm_remedy.connectors.k8s.vllm_hosts): kubeconfig {rehearsal.kubeconfig} (from KUBECONFIG): context "
        "'prod' not found (available: rehearsal)")
    [(_, empty, _)] = list(K8sConnector.make_names_data("rehearsal/nothing-here"))
    assert empty["k8s_expand_error"] == "no workload in namespace nothing-here runs vLLM (context rehearsal)"
    # ... and connect fails with exactly that line
    assert connect_error(rehearsal, "@k8s/prod/llm", k8s_expand_error=data["k8s_expand_error"]) == \
        data["k8s_expand_error"]


def test_vllm_hosts_helper_lists_with_the_given_kubeconfig_and_records_it(rehearsal: Rehearsal,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    create(rehearsal, nginx())
    got = vllm_hosts("prod", "llm", context="rehearsal", kubeconfig=str(rehearsal.kubeconfig),
                     data={"policy": POLICY})
    assert got == [("@k8s/prod/llm/llama-8b", {"policy": POLICY, "context": "rehearsal",
                                               "kubeconfig": str(rehearsal.kubeconfig)})]
    with pytest.raises(InventoryError) as err:
        vllm_hosts("prod", "llm", kubeconfig=str(rehearsal.kubeconfig))
    assert str(err.value) == (f"@k8s/prod/llm: cannot list vLLM workloads: kubeconfig {rehearsal.kubeconfig}: "
                              "context 'prod' not found (available: rehearsal)")


# ---- connect -------------------------------------------------------------------------------

def test_connect_builds_one_client_and_finds_the_server(rehearsal: Rehearsal) -> None:
    _, host = connected(rehearsal, policy=POLICY)
    connector = host.connector
    assert isinstance(connector, K8sConnector)
    assert (connector.client.context, connector.server.container_name, connector.server.model) == (
        "rehearsal", "vllm", "meta-llama/Llama-3.1-8B-Instruct")
    assert (connector.policy.name, connector.keys.prefix) == ("llama-8b", "vllm-remedy.io/")
    assert connector.scope.container == "vllm"
    connector.disconnect()
    assert connector.client is None


def test_policy_may_be_a_loaded_policy_object(rehearsal: Rehearsal) -> None:
    from vllm_remedy.policy import load_policy

    policy = load_policy(POLICY)
    _, host = connected(rehearsal, policy=policy)
    assert host.connector.policy == policy  # pyinfra hands connectors a (shallow) copy of host data
    assert host.connector.policy.name == "llama-8b"


def test_connect_through_an_alias(rehearsal: Rehearsal) -> None:
    _, host = connected(rehearsal, "@k8s/prod/llm/llama-8b", k8s_contexts={"prod": "rehearsal"})
    assert host.connector.client.context == "rehearsal"


@pytest.mark.parametrize(("host", "data", "expected"), [
    ("@k8s/nope/llm/llama-8b", {}, "kubeconfig {kc}: context 'nope' not found (available: rehearsal)"),
    (HOST, {"kubeconfig": "/nonexistent/kubeconfig"}, "host data kubeconfig: /nonexistent/kubeconfig: no such file"),
    ("@k8s/prod/llm/llama-8b", {"k8s_contexts": {"prod": {"context": "rehearsal", "kubeconfig": "/nope"}},
                                "kubeconfig": None},
     "host data k8s_contexts.prod.kubeconfig: /nope: no such file"),
    ("@k8s/rehearsal/llm/missing", {},
     'deployment llm/missing not found in context rehearsal (deployments.apps "missing" not found)'),
    (HOST, {"context": 3}, "host data context: expected a non-empty string, got 3"),
    (HOST, {"container": "sidecar"},
     "deployment llm/llama-8b: container sidecar: not in this pod spec (containers: vllm)"),
    (HOST, {"policy": 7}, "host data policy: expected a policy file or directory, got int"),
])
def test_connect_errors_are_one_line(rehearsal: Rehearsal, host: str, data: dict[str, Any], expected: str) -> None:
    assert connect_error(rehearsal, host, **data) == expected.format(kc=rehearsal.kubeconfig)


def test_connect_refuses_a_deployment_without_vllm(rehearsal: Rehearsal) -> None:
    create(rehearsal, nginx())
    assert connect_error(rehearsal, "@k8s/rehearsal/llm/gateway") == (
        "deployment llm/gateway: no container runs a vLLM server (containers: nginx; looked for vllm serve / "
        "python -m vllm.entrypoints... in command/args)")


def test_connect_refuses_an_invalid_policy_and_a_policy_for_another_deployment(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("flags:\n  max-model-len: {min: 9000, max: 100}\n")
    message = connect_error(rehearsal, policy=str(broken))
    assert message.startswith(f"{broken}: flags.max-model-len")
    other = tmp_path / "other.yaml"
    other.write_text("target:\n  deployments: [qwen-7b]\n")
    assert connect_error(rehearsal, policy=str(other)) == (
        f"policy {other}: target does not cover deployment llm/llama-8b (model meta-llama/Llama-3.1-8B-Instruct); "
        "pick the policy for this Deployment in host data")


# ---- run_shell_command: the verb language ----------------------------------------------------

def test_verbs_answer_with_json_lines(rehearsal: Rehearsal) -> None:
    _, host = connected(rehearsal)
    ok, out = host.run_shell_command("k8s-get deployment")
    assert ok and len(out.stdout_lines) == 1 and out.stderr_lines == []
    assert json.loads(out.stdout_lines[0]) == rehearsal.client().get_deployment("llm", "llama-8b")
    ok, out = host.run_shell_command("k8s-get replicasets")
    assert ok and sorted(json.loads(line)["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                         for line in out.stdout_lines) == ["12", "13", "14"]
    ok, out = host.run_shell_command("k8s-get node gpu-l40s-1")
    assert ok and json.loads(out.stdout)["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-L40S"
    ok, out = host.run_shell_command("k8s-history")
    doc = json.loads(out.stdout)
    assert ok and sorted(doc) == ["annotation_prefix", "container", "deployment", "replicasets"]
    assert (doc["container"], doc["annotation_prefix"], len(doc["replicasets"])) == ("vllm", "vllm-remedy.io/", 3)
    pod = rehearsal.client().list_pods("llm", "app=llama-8b")[0]["metadata"]["name"]
    ok, out = host.run_shell_command(f"k8s-logs {pod} vllm --tail 1")
    assert ok and json.loads(out.stdout) == {"pod": pod, "container": "vllm", "previous": False,
                                             "text": "INFO:     Application startup complete.\n"}


@pytest.mark.parametrize(("command", "error"), [
    ("ls -la", "ls: not a @k8s verb (a cluster has no shell; known verbs: k8s-get, k8s-deployment, k8s-history, "
               "k8s-pods, k8s-logs, k8s-nodes, k8s-gpu-metrics, k8s-events, k8s-statefulset, k8s-leaderworkerset, "
               "k8s-inferenceservice)"),
    ("", "empty command; the @k8s connector runs verbs: k8s-get, k8s-deployment, k8s-history, k8s-pods, k8s-logs, "
         "k8s-nodes, k8s-gpu-metrics, k8s-events, k8s-statefulset, k8s-leaderworkerset, k8s-inferenceservice"),
    ("k8s-events now", "usage: k8s-events"),
    ("k8s-get", "usage: k8s-get deployment|replicasets|pods|node <name>"),
    ("k8s-get secrets", "usage: k8s-get deployment|replicasets|pods|node <name>"),
    ("k8s-history now", "usage: k8s-history"),
    ("k8s-pods --logs everything", "--logs 'everything': expected one of none, crashed, all"),
    ("k8s-pods --tail 0", "--tail '0': expected a positive number of lines"),
    ("k8s-pods --follow", "unknown option --follow; usage: k8s-pods [--logs none|crashed|all] [--tail N]"),
    ("k8s-pods --logs", "--logs needs a value; usage: k8s-pods [--logs none|crashed|all] [--tail N]"),
    ("k8s-logs only-a-pod", "usage: k8s-logs <pod> <container> [--previous] [--tail N]"),
    ("k8s-get 'unterminated", "cannot parse command \"k8s-get 'unterminated\": No closing quotation"),
    ("k8s-logs nope vllm", "rehearsal: GET /api/v1/namespaces/llm/pods/nope/log: HTTP 404: pods \"nope\" not found"),
])
def test_bad_commands_fail_with_one_stderr_line(rehearsal: Rehearsal, command: str, error: str) -> None:
    _, host = connected(rehearsal)
    ok, out = host.run_shell_command(command)
    assert (ok, out.stdout_lines, out.stderr_lines) == (False, [], [error])


def test_files_cannot_move_to_or_from_a_cluster(rehearsal: Rehearsal, tmp_path: Path) -> None:
    _, host = connected(rehearsal)
    assert host.put_file(str(tmp_path / "x"), "/etc/x") is False
    assert host.get_file("/etc/x", str(tmp_path / "x")) is False


def test_default_tail_reads_a_whole_vllm_start() -> None:
    assert DEFAULT_TAIL == 3000
