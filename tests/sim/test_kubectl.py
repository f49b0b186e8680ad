"""Real kubectl 1.32 runs the runbook's own commands against the rehearsal cluster, unchanged."""

from __future__ import annotations

import json
import re
import time

import pytest
import yaml

from fixtures import sim_world
from fixtures.sim_world import HEALTHY_STEP2, deployment, runbook_grep
from vllm_remedy.sim.runtime import EXIT_AFTER, EXIT_CODE, LOG_LINES, READY_AFTER

runbook_sim = sim_world.runbook_sim
live_sim = sim_world.live_sim
V = "32"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


@pytest.fixture(autouse=True)
def _need_kubectl() -> None:
    sim_world.require_kubectl(V)


def table(text: str) -> list[list[str]]:
    """kubectl's column output split on runs of 2+ spaces."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def ok(got) -> str:
    assert got.returncode == 0, got.stderr
    return got.stdout


def test_get_tables_show_kubectls_columns(runbook_sim):
    k = runbook_sim.kubectl
    deploy = table(ok(k(V, "-n", "llm", "get", "deploy")))
    assert deploy[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert deploy[1][:4] == ["llama-8b", "2/2", "2", "2"]
    rs = table(ok(k(V, "-n", "llm", "get", "rs")))
    assert rs[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert sorted(r[1:4] for r in rs[1:]) == [["0", "0", "0"], ["0", "0", "0"], ["2", "2", "2"]]
    pods = table(ok(k(V, "-n", "llm", "get", "pod", "-l", "app=llama-8b", "-o", "wide")))
    assert pods[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
                       "READINESS GATES"]
    assert len(pods) == 3
    for row in pods[1:]:
        assert row[1:4] == ["1/1", "Running", "0"]
        assert row[6].startswith("gpu-l40s-")  # pinned to L40S by the seed's nodeSelector
        assert re.fullmatch(r"10\.\d+\.\d+\.\d+", row[5])
    nodes = table(ok(k(V, "get", "nodes")))
    assert nodes[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert {r[1] for r in nodes[1:]} == {"Ready"} and len(nodes) == 7
    events = table(ok(k(V, "-n", "llm", "get", "events")))
    assert events[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]


def test_get_json_and_yaml(runbook_sim):
    k = runbook_sim.kubectl
    one = json.loads(ok(k(V, "-n", "llm", "get", "deploy", "llama-8b", "-o", "json")))
    assert (one["kind"], one["spec"]["template"]["spec"]["containers"][0]["name"]) == ("Deployment", "vllm")
    many = yaml.safe_load(ok(k(V, "-n", "llm", "get", "rs", "-o", "yaml")))
    assert many["kind"] == "List"
    revisions = sorted(int(r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]) for r in many["items"])
    assert len(revisions) == 3 and revisions == sim_world.revisions(runbook_sim.clusters["a"])


def test_patch_of_each_type(runbook_sim):
    k = runbook_sim.kubectl
    store = runbook_sim.clusters["a"].store
    patch = '{"spec":{"template":{"spec":{"containers":[{"name":"vllm","image":"vllm/vllm-openai:v0.9.0"}]}}}}'
    assert ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "-p", patch)).strip() == \
        "deployment.apps/llama-8b patched"
    container = store.get("deployments.apps", "llm", "llama-8b")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "vllm/vllm-openai:v0.9.0"
    assert "--max-model-len" in container["args"]  # merged by name, not replaced
    assert ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "-p", patch)).strip() == \
        "deployment.apps/llama-8b patched (no change)"
    ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "--type", "merge", "-p",
         '{"metadata":{"annotations":{"vllm-remedy.io/reason":"rehearsal"}}}'))
    assert store.get("deployments.apps", "llm", "llama-8b")["metadata"]["annotations"]["vllm-remedy.io/reason"] == \
        "rehearsal"
    # generation, not resourceVersion: the live controllers keep writing status (and so the resourceVersion)
    generation = store.get("deployments.apps", "llm", "llama-8b")["metadata"]["generation"]
    failed = k(V, "-n", "llm", "patch", "deploy", "llama-8b", "--type", "json", "-p",
               json.dumps([{"op": "test", "path": "/metadata/generation", "value": generation - 1},
                           {"op": "replace", "path": "/spec/replicas", "value": 1}]))
    assert failed.returncode == 1
    assert failed.stderr.strip() == \
        "The request is invalid: patch: testing value /metadata/generation failed: test failed"
    ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "--type", "json", "-p",
         json.dumps([{"op": "test", "path": "/metadata/generation", "value": generation},
                     {"op": "replace", "path": "/spec/replicas", "value": 1}])))
    assert store.get("deployments.apps", "llm", "llama-8b")["spec"]["replicas"] == 1


def _manifest(sim, replicas: int) -> str:
    live = sim.clusters["a"].store.get("deployments.apps", "llm", "llama-8b")
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "llama-8b", "namespace": "llm", "labels": live["metadata"].get("labels", {})},
                "spec": {"replicas": replicas, "selector": live["spec"]["selector"],
                         "template": live["spec"]["template"]}}
    path = sim.tmp / "llama-8b.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return str(path)


def test_apply_server_side_dry_run_changes_nothing(runbook_sim):
    k = runbook_sim.kubectl
    store = runbook_sim.clusters["a"].store
    before = store.get("deployments.apps", "llm", "llama-8b")
    out = ok(k(V, "apply", "--server-side", "--dry-run=server", "-f", _manifest(runbook_sim, 3)))
    assert out.strip() == "deployment.apps/llama-8b serverside-applied (server dry run)"
    assert store.get("deployments.apps", "llm", "llama-8b") == before


def test_apply_server_side_conflicts_with_kubectl_patch_unless_forced(runbook_sim):
    k = runbook_sim.kubectl
    ok(k(V, "-n", "llm", "scale", "deploy/llama-8b", "--replicas=3"))
    ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "--type", "merge", "-p", '{"spec":{"replicas":2}}'))
    clash = k(V, "apply", "--server-side", "-f", _manifest(runbook_sim, 4))
    assert clash.returncode == 1
    assert 'conflict with "kubectl-patch": .spec.replicas' in clash.stderr
    assert ok(k(V, "apply", "--server-side", "--force-conflicts", "-f", _manifest(runbook_sim, 4))).strip() == \
        "deployment.apps/llama-8b serverside-applied"
    assert runbook_sim.clusters["a"].store.get("deployments.apps", "llm", "llama-8b")["spec"]["replicas"] == 4


def test_unknown_field_is_a_strict_decoding_error(runbook_sim):
    _manifest(runbook_sim, 2)
    doc = yaml.safe_load((runbook_sim.tmp / "llama-8b.yaml").read_text())
    doc["spec"]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    (runbook_sim.tmp / "typo.yaml").write_text(yaml.safe_dump(doc))
    got = runbook_sim.kubectl(V, "apply", "--server-side", "-f", str(runbook_sim.tmp / "typo.yaml"))
    assert got.returncode == 1
    assert 'strict decoding error: unknown field "spec.template.spec.containers[0].imagee"' in got.stderr


def test_diff_exits_1_with_the_change(runbook_sim):
    generation = runbook_sim.clusters["a"].store.get("deployments.apps", "llm", "llama-8b")["metadata"]["generation"]
    got = runbook_sim.kubectl(V, "diff", "-f", _manifest(runbook_sim, 5))
    assert got.returncode == 1, got.stderr
    changed = [line for line in got.stdout.splitlines() if re.match(r"^[-+]\s", line)]
    assert changed == [f"-  generation: {generation}", f"+  generation: {generation + 1}", "-  replicas: 2",
                       "+  replicas: 5"]


def test_rollout_history_undo_status(runbook_sim):
    k = runbook_sim.kubectl
    revs = sim_world.revisions(runbook_sim.clusters["a"])
    history = table(ok(k(V, "-n", "llm", "rollout", "history", "deploy/llama-8b")))
    assert [r[0] for r in history[1:]] == ["REVISION", *map(str, revs)]
    previous = ok(k(V, "-n", "llm", "rollout", "history", "deploy/llama-8b", f"--revision={revs[-2]}"))
    assert f"deployment.apps/llama-8b with revision #{revs[-2]}" in previous
    assert "--max-model-len" in previous
    assert ok(k(V, "-n", "llm", "rollout", "undo", "deploy/llama-8b")).strip() == \
        "deployment.apps/llama-8b rolled back"
    status = k(V, "-n", "llm", "rollout", "status", "deploy/llama-8b", "--timeout=60s")
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip().splitlines()[-1] == 'deployment "llama-8b" successfully rolled out'
    after = table(ok(k(V, "-n", "llm", "rollout", "history", "deploy/llama-8b")))
    # the previous revision's template is reused under a new number
    assert [r[0] for r in after[2:]] == [str(revs[0]), str(revs[-1]), str(revs[-1] + 1)]


def test_runbook_step_2_grep_finds_the_memory_lines(runbook_sim):
    out = ok(runbook_sim.kubectl(V, "-n", "llm", "logs", "deploy/llama-8b"))
    assert runbook_grep(out) == HEALTHY_STEP2, out


def test_crash_loop_logs_previous_and_rollout_status_timeout(live_sim):
    k = live_sim.kubectl
    crashing = deployment("crashy", replicas=1)
    crashing["spec"]["template"]["metadata"]["annotations"] = {EXIT_CODE: "1", LOG_LINES: OOM, READY_AFTER: "600"}
    live_sim.clusters["a"].store.create("deployments.apps", crashing)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pods = live_sim.clusters["a"].store.list("pods", "llm")[0]
        if any(cs.get("restartCount", 0) >= 1 for p in pods for cs in p["status"].get("containerStatuses") or []):
            break
        time.sleep(0.2)
    logs = k(V, "-n", "llm", "logs", "deploy/crashy", "--previous")
    assert logs.returncode == 0, logs.stderr
    assert runbook_grep(logs.stdout) == [OOM]
    restarts = table(ok(k(V, "-n", "llm", "get", "pod", "-l", "app=crashy")))[1][3]
    assert re.fullmatch(r"\d+ \(\d+s ago\)", restarts)


def test_rollout_status_times_out_on_a_pod_that_never_gets_ready(live_sim):
    slow = deployment("slow", replicas=1)
    slow["spec"]["template"]["metadata"]["annotations"] = {READY_AFTER: "100000"}
    live_sim.clusters["a"].store.create("deployments.apps", slow)
    started = time.monotonic()
    status = live_sim.kubectl(V, "-n", "llm", "rollout", "status", "deploy/slow", "--timeout=3s")
    assert status.returncode == 1
    assert "timed out waiting for the condition" in status.stderr
    assert 3 <= time.monotonic() - started < 20


def test_read_only_role_can_check_drift_but_not_write(tmp_path):
    from vllm_remedy.sim.api.auth import load

    roles = load({"tokens": {
        "t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
        "t-drift": {"user": "drift", "rules": [{"verbs": ["get", "list", "watch"],
                                                "resources": ["deployments.apps", "replicasets.apps"],
                                                "namespaces": ["llm"]}]}}})
    s = sim_world.make_sim(tmp_path, auth=roles, users={"admin": "t-admin", "drift": "t-drift"})
    try:
        s.clusters["a"].store.create("deployments.apps", deployment())
        got = s.kubectl(V, "-n", "llm", "rollout", "history", "deploy/llama-8b", context="a-drift")
        assert got.returncode == 0, got.stderr
        can = s.kubectl(V, "-n", "llm", "auth", "can-i", "list", "deployments", context="a-drift")
        cannot = s.kubectl(V, "-n", "llm", "auth", "can-i", "patch", "deployments", context="a-drift")
        assert ((can.returncode, can.stdout.strip()), (cannot.returncode, cannot.stdout.strip())) == (
            (0, "yes"), (1, "no"))
        denied = s.kubectl(V, "-n", "llm", "scale", "deploy/llama-8b", "--replicas=0", context="a-drift")
        assert denied.returncode == 1
        assert denied.stderr.strip() == (
            'Error from server (Forbidden): deployments.apps "llama-8b" is forbidden: User "drift" cannot patch '
            'resource "deployments/scale" in API group "apps" in the namespace "llm"')
        assert ok(s.kubectl(V, "-n", "llm", "scale", "deploy/llama-8b", "--replicas=0")).strip() == \
            "deployment.apps/llama-8b scaled"
    finally:
        s.server.stop()


def test_typed_client_creates_send_protobuf_and_work(live_sim):
    k = live_sim.kubectl
    store = live_sim.clusters["a"].store
    assert ok(k(V, "-n", "llm", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=0",
                "--port=80")).strip() == "deployment.apps/web created"
    web = store.get("deployments.apps", "llm", "web")
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert (web["spec"]["replicas"], web["spec"]["selector"], container["image"], container["ports"]) == (
        0, {"matchLabels": {"app": "web"}}, "nginx:1.27", [{"containerPort": 80, "protocol": "TCP"}])
    assert "stdin" not in container and "generation" not in web["spec"]["template"]["metadata"]
    ok(k(V, "-n", "llm", "create", "configmap", "policy", "--from-literal=max-model-len=16384"))
    assert store.get("configmaps", "llm", "policy")["data"] == {"max-model-len": "16384"}
    assert ok(k(V, "create", "namespace", "staging")).strip() == "namespace/staging created"
    out = ok(k(V, "-n", "llm", "debug", "node/gpu-1", "--image=nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
               "--", "nvidia-smi"))
    assert "Creating debugging pod node-debugger-gpu-1-" in out
    (debugger,) = [p for p in store.list("pods", "llm")[0] if p["metadata"]["name"].startswith("node-debugger")]
    container = debugger["spec"]["containers"][0]
    assert (debugger["spec"]["nodeName"], debugger["spec"]["hostPID"], container.get("command", []) +
            container.get("args", [])) == ("gpu-1", True, ["nvidia-smi"])
    assert debugger["spec"]["volumes"][0]["hostPath"]["path"] == "/"  # inline VolumeSource lifted, as in JSON


def test_attach_streams_the_container_output_until_it_exits(live_sim):
    store = live_sim.clusters["a"].store
    store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "smi", "namespace": "llm", "annotations": {
            LOG_LINES: "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |",
            EXIT_CODE: "0", EXIT_AFTER: "120"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "debugger", "image": "cuda:12.4.1"}]}})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "running" not in (
            (store.get("pods", "llm", "smi").get("status", {}).get("containerStatuses") or [{}])[0].get("state") or {}):
        time.sleep(0.05)
    got = live_sim.kubectl(V, "-n", "llm", "attach", "smi", timeout=30)
    assert got.returncode == 0, got.stderr
    assert "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |" in got.stdout.splitlines()
    done = live_sim.kubectl(V, "-n", "llm", "exec", "smi", "--", "nvidia-smi")
    assert done.stderr.strip() == "error: cannot exec into a container in a completed pod; current phase is Succeeded"


def test_shipped_drift_rbac_manifest_grants_reads_and_denies_writes(tmp_path):
    """The product's own manifests/rbac-drift.yaml, applied to the cluster, is what the drift token gets."""
    from vllm_remedy.sim.api.auth import load

    manifest = sim_world.ROOT / "manifests" / "rbac-drift.yaml"
    if not manifest.exists():
        pytest.skip("manifests/rbac-drift.yaml not present")
    roles = load({"tokens": {"t-admin": {"user": "admin", "rules": [{"verbs": "*", "resources": "*"}]},
                             "t-drift": {"user": "system:serviceaccount:llm:vllm-remedy-drift"}}})
    s = sim_world.make_sim(tmp_path, auth=roles, users={"admin": "t-admin", "drift": "t-drift"})
    try:
        s.clusters["a"].store.create("deployments.apps", deployment())
        s.clusters["a"].store.create("nodes", sim_world.gpu_node("gpu-1"))
        before = s.kubectl(V, "-n", "llm", "get", "deploy", context="a-drift")
        assert before.returncode == 1 and "(Forbidden)" in before.stderr  # nothing bound yet
        ok(s.kubectl(V, "apply", "-f", str(manifest)))
        for args in (["-n", "llm", "get", "deploy"], ["-n", "llm", "rollout", "history", "deploy/llama-8b"],
                     ["get", "nodes"], ["-n", "llm", "get", "events"]):
            got = s.kubectl(V, *args, context="a-drift")
            assert got.returncode == 0, (args, got.stderr)
        for verb in ("patch", "delete", "update"):
            got = s.kubectl(V, "-n", "llm", "auth", "can-i", verb, "deployments", context="a-drift")
            assert (got.returncode, got.stdout.strip()) == (1, "no"), verb
        denied = s.kubectl(V, "-n", "llm", "patch", "deploy", "llama-8b", "-p", '{"spec":{"replicas":0}}',
                           context="a-drift")
        assert denied.stderr.strip() == (
            'Error from server (Forbidden): deployments.apps "llama-8b" is forbidden: User '
            '"system:serviceaccount:llm:vllm-remedy-drift" cannot patch resource "deployments" in API group "apps" '
            'in the namespace "llm"')
    finally:
        s.server.stop()


def test_runbook_incident_end_to_end(runbook_sim):
    """A bad deploy (no explicit --max-model-len, lower memory share) crash-loops in the vLLM simulator; the
    runbook's own commands find it, read the startup log and roll back."""
    k, store = runbook_sim.kubectl, runbook_sim.clusters["a"].store
    revs = sim_world.revisions(runbook_sim.clusters["a"])
    bad_args = ["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.40"]
    ok(k(V, "-n", "llm", "patch", "deploy", "llama-8b", "--type", "json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": bad_args},
        {"op": "add", "path": "/metadata/annotations/kubernetes.io~1change-cause", "value": "drop max-model-len"}])))
    stuck = k(V, "-n", "llm", "rollout", "status", "deploy/llama-8b", "--timeout=15m")
    assert stuck.returncode == 1
    assert 'error: deployment "llama-8b" exceeded its progress deadline' in stuck.stderr
    history = table(ok(k(V, "-n", "llm", "rollout", "history", "deploy/llama-8b")))
    assert history[-1] == [str(revs[-1] + 1), "drop max-model-len"]
    deadline = time.monotonic() + 30
    crashed: list[str] = []
    while not crashed and time.monotonic() < deadline:
        crashed = [p["metadata"]["name"] for p in store.list("pods", "llm")[0]
                   if any(cs.get("restartCount", 0) >= 1 for cs in p["status"].get("containerStatuses") or [])]
        time.sleep(0.1)
    assert crashed, "the bad revision's pod never restarted"
    previous = ok(k(V, "-n", "llm", "logs", crashed[0], "--previous"))
    assert runbook_grep(previous) == [
        HEALTHY_STEP2[0],
        "ERROR [core.py:396] ValueError: To serve at least one request with the models's max seq len (131072), "
        "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory (1.07 GiB). Based on the "
        "available memory,  Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
        "the engine."], previous
    assert ok(k(V, "-n", "llm", "rollout", "undo", "deploy/llama-8b")).strip() == "deployment.apps/llama-8b rolled back"
    done = k(V, "-n", "llm", "rollout", "status", "deploy/llama-8b", "--timeout=15m")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == 'deployment "llama-8b" successfully rolled out'
    after = table(ok(k(V, "-n", "llm", "rollout", "history", "deploy/llama-8b")))
    assert [r[0] for r in after[2:]] == [*map(str, revs[:-1]), str(revs[-1] + 1), str(revs[-1] + 2)]
    pods = table(ok(k(V, "-n", "llm", "get", "pod", "-l", "app=llama-8b", "-o", "wide")))
    assert all(r[1] == "1/1" and r[6].startswith("gpu-l40s-") for r in pods[1:])
