"""manifests/: least-privilege RBAC computed per ServiceAccount from the bindings, no secrets anywhere,
CronJobs that run the right commands with the right accounts, and one-word namespace substitution."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fixtures.manifests import MANIFESTS, all_docs, load
from vllm_remedy.alerts import EXPIRY_GRACE, STALE_AFTER

ROOT = Path(__file__).resolve().parents[2]
READ = frozenset({"get", "list", "watch"})
Perm = tuple[str | None, str, str, str]  # (namespace or None for cluster-wide, apiGroup, resource, verb)


def permissions(docs: list[dict[str, Any]], namespace: str, account: str) -> set[Perm]:
    """What ``namespace/account`` may do, following RoleBindings and ClusterRoleBindings as RBAC does."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d["rules"]
             for d in docs if d["kind"] in ("Role", "ClusterRole")}
    out: set[Perm] = set()
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        if {"kind": "ServiceAccount", "name": account, "namespace": namespace} not in binding["subjects"]:
            continue
        ref = binding["roleRef"]
        assert ref["apiGroup"] == "rbac.authorization.k8s.io"
        scope = binding["metadata"].get("namespace")  # None for a ClusterRoleBinding: cluster-wide
        rules = roles[(ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"])]
        for rule in rules:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add((scope, group, resource, verb))
    return out


def _expand(resources: dict[tuple[str, str], frozenset[str]], scope: str | None) -> set[Perm]:
    return {(scope, g, r, v) for (g, r), verbs in resources.items() for v in verbs}


DRIFT = _expand({("apps", "deployments"): READ, ("apps", "replicasets"): READ, ("", "pods"): READ,
                 ("apps", "statefulsets"): READ, ("apps", "controllerrevisions"): READ,
                 ("leaderworkerset.x-k8s.io", "leaderworkersets"): frozenset({"get", "list"}),
                 ("serving.kserve.io", "inferenceservices"): frozenset({"get", "list"}),
                 ("serving.kserve.io", "servingruntimes"): frozenset({"get", "list"}),
                 ("", "pods/log"): READ, ("", "events"): frozenset({"list"}),
                 ("gateway.networking.k8s.io", "httproutes"): READ}, "llm") | _expand(
    {("", "nodes"): READ, ("", "pods"): READ, ("serving.kserve.io", "clusterservingruntimes"): frozenset({"list"})},
    None)
REMEDIATE = DRIFT | _expand({("apps", "deployments"): frozenset({"patch"}),
                             ("apps", "replicasets"): frozenset({"patch"}), ("", "pods/proxy"): frozenset({"get"}),
                             ("apps", "statefulsets"): frozenset({"patch"}),
                             ("apps", "controllerrevisions"): frozenset({"patch"}),
                             ("gateway.networking.k8s.io", "httproutes"): frozenset({"patch"}),
                             ("leaderworkerset.x-k8s.io", "leaderworkersets"): frozenset({"patch"}),
                             ("serving.kserve.io", "inferenceservices"): frozenset({"patch"})}, "llm") | {
    ("gpu-operator", "", "pods/proxy", "get")}  # the DCGM exporter's /metrics, for diagnose's GPU report


def test_files_and_kinds():
    assert sorted(p.name for p in MANIFESTS.iterdir()) == ["cronjob-drift.yaml", "rbac-drift.yaml",
                                                           "rbac-remediate.yaml", "rbac-responder.yaml",
                                                           "responder.yaml"]
    assert [d["kind"] for d in load("rbac-drift.yaml")] == [
        "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]
    assert [d["kind"] for d in load("rbac-remediate.yaml")] == [
        "ServiceAccount", "Role", "RoleBinding", "RoleBinding", "ClusterRoleBinding", "Role", "RoleBinding"]
    assert [d["kind"] for d in load("cronjob-drift.yaml")] == ["ConfigMap", "CronJob", "CronJob"]
    assert [d["kind"] for d in load("rbac-responder.yaml")] == [
        "ServiceAccount", "Role", "RoleBinding", "RoleBinding", "RoleBinding", "ClusterRoleBinding", "RoleBinding"]
    assert [d["kind"] for d in load("responder.yaml")] == ["Deployment", "Service"]


def test_drift_account_is_read_only_exactly():
    assert permissions(all_docs(), "llm", "vllm-remedy-drift") == DRIFT


def test_remediate_account_adds_only_patch_and_the_metrics_proxy():
    """patch for rollback/flags/toggles (Deployments), confirm's mark (ReplicaSets), a StatefulSet's rollback and the
    crash record on its ControllerRevisions, the fallback route;
    get on pods/proxy for confirm's /metrics reads. Nothing else."""
    got = permissions(all_docs(), "llm", "vllm-remedy-remediate")
    assert got == REMEDIATE
    assert got - DRIFT == {("llm", "apps", "deployments", "patch"), ("llm", "apps", "replicasets", "patch"),
                           ("llm", "apps", "statefulsets", "patch"), ("llm", "apps", "controllerrevisions", "patch"),
                           ("llm", "", "pods/proxy", "get"), ("gpu-operator", "", "pods/proxy", "get"),
                           ("llm", "gateway.networking.k8s.io", "httproutes", "patch"),
                           ("llm", "leaderworkerset.x-k8s.io", "leaderworkersets", "patch"),
                           ("llm", "serving.kserve.io", "inferenceservices", "patch")}


def test_responder_account_is_the_remediate_account_plus_creating_events():
    assert permissions(all_docs(), "llm", "vllm-remedy-responder") == REMEDIATE | {("llm", "", "events", "create")}


def test_permission_calculator_sees_a_widened_role():
    """Control: adding delete to the read-only Role shows up for the drift account."""
    docs = all_docs()
    before = permissions(docs, "llm", "vllm-remedy-drift")
    role = next(d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "vllm-remedy-read")
    role["rules"][0]["verbs"].append("delete")
    assert permissions(docs, "llm", "vllm-remedy-drift") - before == {
        ("llm", "apps", resource, "delete")
        for resource in ("deployments", "replicasets", "statefulsets", "controllerrevisions")}


def test_no_wildcards_no_secrets_no_dangerous_verbs():
    for doc in all_docs():
        for rule in doc.get("rules", []):
            assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames, no nonResourceURLs
            assert not {"*"} & (set(rule["apiGroups"]) | set(rule["resources"]) | set(rule["verbs"]))
            allowed = READ | {"patch"} | ({"create"} if rule["resources"] == ["events"] else set())
            assert set(rule["verbs"]) <= allowed, rule
            assert "secrets" not in rule["resources"]
        assert doc["kind"] != "Secret"
    drift_roles = {b["roleRef"]["name"] for b in all_docs() if "Binding" in b["kind"]
                   and any(s["name"] == "vllm-remedy-drift" for s in b["subjects"])}
    assert drift_roles == {"vllm-remedy-read", "vllm-remedy-gpu-read"}


def _walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{path}.{key}", value
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


#: The one Secret any manifest names: the responder's bearer token, which Alertmanager must present too. It is
#: mounted by the kubelet (no RBAC on secrets for any of our accounts) and created by the operator, not shipped.
TOKEN_VOLUME = ".spec.template.spec.volumes[2].secret"


def test_no_secret_reference_anywhere():
    for doc in all_docs():
        for path, value in _walk(doc):
            key = path.rsplit(".", 1)[-1]
            if doc["kind"] == "Deployment" and path.startswith(TOKEN_VOLUME):
                assert path != TOKEN_VOLUME or value == {"secretName": "vllm-remedy-respond-token"}, value
                continue
            assert "secret" not in key.lower(), path  # secretKeyRef, secretRef, secret volumes, imagePullSecrets


def _namespaces(docs: list[dict[str, Any]]) -> list[str]:
    return [v for d in docs for p, v in _walk(d) if p.endswith(".namespace") and isinstance(v, str)]


def test_namespace_is_one_word_to_change():
    text = "\n---\n".join((MANIFESTS / n).read_text() for n in ("rbac-drift.yaml", "rbac-remediate.yaml",
                                                         "cronjob-drift.yaml", "rbac-responder.yaml",
                                                         "responder.yaml"))
    # "gpu-operator" is the DCGM exporter's namespace (the GPU operator's), not ours: the sed leaves it alone.
    assert set(_namespaces(load("", text))) == {"llm", "gpu-operator"} and len(load("", text)) == len(all_docs())
    moved = re.sub(r"namespace: llm$", "namespace: gpu-serving", text, flags=re.MULTILINE)  # the documented sed
    docs = load("", moved)
    assert set(_namespaces(docs)) == {"gpu-serving", "gpu-operator"}
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding"}
    assert all(d["metadata"].get("namespace") == "gpu-serving" for d in docs if d["kind"] not in cluster_scoped
               and d["metadata"]["name"] not in ("vllm-remedy-gpu-metrics", "vllm-remedy-remediate-gpu-metrics",
                                                 "vllm-remedy-responder-gpu-metrics"))
    assert permissions(docs, "gpu-serving", "vllm-remedy-remediate") >= {("gpu-operator", "", "pods/proxy", "get")}
    assert permissions(docs, "gpu-serving", "vllm-remedy-drift") == {
        (None if ns is None else "gpu-serving", g, r, v) for ns, g, r, v in DRIFT}


def _cronjobs() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in load("cronjob-drift.yaml") if d["kind"] == "CronJob"}


def _pod(cronjob: dict[str, Any]) -> dict[str, Any]:
    return cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def test_cronjobs_commands_accounts_and_hardening():
    jobs = _cronjobs()
    assert set(jobs) == {"vllm-remedy-drift", "vllm-remedy-expire"}
    drift, expire = _pod(jobs["vllm-remedy-drift"]), _pod(jobs["vllm-remedy-expire"])
    assert (drift["serviceAccountName"], expire["serviceAccountName"]) == ("vllm-remedy-drift",
                                                                          "vllm-remedy-remediate")
    drift_script = " ".join(drift["containers"][0]["args"][0].replace("\\\n", " ").split())
    expire_script = " ".join(expire["containers"][0]["args"][0].replace("\\\n", " ").split())
    assert ("vllm-remedy drift -i /etc/vllm-remedy/inventory.py --detailed-exitcode"
            ' --pushgateway "$VLLM_REMEDY_PUSHGATEWAY" || [ $? -eq 2 ]') in drift_script
    assert 'vllm-remedy expire -i /etc/vllm-remedy/inventory.py --pushgateway "$VLLM_REMEDY_PUSHGATEWAY"' in \
        expire_script
    for job in jobs.values():
        assert job["spec"]["concurrencyPolicy"] == "Forbid"
        pod = _pod(job)
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["restartPolicy"] == "Never"
        (container,) = pod["containers"]
        assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                "capabilities": {"drop": ["ALL"]}}
        assert {v["name"] for v in pod["volumes"]} == {"inventory", "policies", "tmp"}
        assert "automountServiceAccountToken" not in pod  # it needs its token to read the API
        assert "hostPath" not in str(pod)


def test_schedules_match_the_alerts_assumptions():
    """Stale after three missed runs; an overdue toggle alerts only after expire had its run."""
    jobs = _cronjobs()
    assert jobs["vllm-remedy-drift"]["spec"]["schedule"] == "*/10 * * * *"
    assert jobs["vllm-remedy-expire"]["spec"]["schedule"] == "5-59/10 * * * *"
    assert 3 * timedelta(minutes=10) == STALE_AFTER
    assert timedelta(minutes=10) < EXPIRY_GRACE
    assert jobs["vllm-remedy-drift"]["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] < 600


def _script_exit(script: str, code: int, tmp_path: Path) -> int:
    """Run the container's shell script with a ``vllm-remedy`` on PATH that exits ``code``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub = bin_dir / "vllm-remedy"
    stub.write_text(f"#!/bin/sh\nexit {code}\n")
    stub.chmod(0o755)
    env = {**os.environ, "VLLM_REMEDY_PUSHGATEWAY": "http://pg:9091", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.run(["/bin/sh", "-c", script], env=env, timeout=30).returncode


def test_cronjobs_run_the_image_the_dockerfile_builds():
    """The Jobs install nothing at run time: the image is this repository's, with vllm-remedy on PATH."""
    dockerfile = (MANIFESTS.parent / "Dockerfile").read_text()
    tag = re.search(r"docker build -t (\S+) \.", dockerfile)
    assert tag is not None
    for job in _cronjobs().values():
        (container,) = _pod(job)["containers"]
        assert container["image"] == tag.group(1)
        assert "pip" not in container["args"][0] and container["args"][0].count("vllm-remedy ") == 1
    assert "USER 65534:65534" in dockerfile  # the Jobs' runAsUser: nothing in the image needs root
    copied = re.findall(r"^COPY (.+) /src/", dockerfile, re.M)
    assert copied == ["pyproject.toml README.md", "src"]  # all that `pip install` of the project reads


@pytest.mark.parametrize("code,job_ok", [(0, True), (2, True), (1, False), (3, False)])
def test_drift_job_fails_only_on_error(tmp_path, code, job_ok):
    """--detailed-exitcode: 0 none / 2 drift are findings (Job succeeds), 1 error fails the Job."""
    script = _pod(_cronjobs()["vllm-remedy-drift"])["containers"][0]["args"][0]
    assert (_script_exit(script, code, tmp_path) == 0) is job_ok


@pytest.mark.parametrize("code", [0, 1, 2])
def test_expire_job_passes_the_exit_code_through(tmp_path, code):
    script = _pod(_cronjobs()["vllm-remedy-expire"])["containers"][0]["args"][0]
    assert _script_exit(script, code, tmp_path) == code


def test_inventory_configmap_reads_the_pod_namespace(monkeypatch):
    (config,) = [d for d in load("cronjob-drift.yaml") if d["kind"] == "ConfigMap"]
    monkeypatch.setenv("POD_NAMESPACE", "gpu-serving")
    monkeypatch.setenv("VLLM_REMEDY_POLICY", "llama-8b.yaml")
    scope: dict[str, Any] = {}
    exec(compile(config["data"]["inventory.py"], "inventory.py", "exec"), scope)
    assert scope["vllm"] == (["@k8s/in-cluster/gpu-serving"], {"policy": "/etc/vllm-remedy/policies/llama-8b.yaml"})
    monkeypatch.setenv("VLLM_REMEDY_POLICY", "")  # as shipped: the directory, a policy chosen per Deployment
    exec(compile(config["data"]["inventory.py"], "inventory.py", "exec"), scope)
    assert scope["vllm"] == (["@k8s/in-cluster/gpu-serving"], {"policy": "/etc/vllm-remedy/policies/"})


def test_responder_runs_the_image_with_its_account_token_and_hardening():
    dep, svc = load("responder.yaml")
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["serviceAccountName"] == "vllm-remedy-responder" and dep["spec"]["replicas"] == 1
    assert container["image"] == _cronjobs()["vllm-remedy-drift"]["spec"]["jobTemplate"]["spec"]["template"][
        "spec"]["containers"][0]["image"]
    assert container["args"][:3] == ["respond", "-i", "/etc/vllm-remedy/inventory.py"]
    assert container["args"][container["args"].index("--token-file") + 1] == "/etc/vllm-remedy/token/token"
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
    assert {v["name"] for v in pod["volumes"]} == {"inventory", "policies", "token", "incidents", "tmp"}
    assert svc["spec"]["ports"][0]["port"] == 9096 and svc["spec"]["selector"] == dep["spec"]["selector"][
        "matchLabels"]
    dockerfile = (MANIFESTS.parent / "Dockerfile").read_text()
    assert "COPY deploys /opt/vllm-remedy/deploys" in dockerfile  # the deploys respond runs through pyinfra
    assert "ENV VLLM_REMEDY_DEPLOYS=/opt/vllm-remedy/deploys" in dockerfile
