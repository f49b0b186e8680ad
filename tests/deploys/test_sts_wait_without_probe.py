"""The StatefulSet wait on a vLLM container with no readiness or startup probe (hostile review 16, G2): Kubernetes
counts such a container Ready the moment it starts, so a set "rolled out" on Ready alone is not serving yet — a
forced restore onto a revision whose vLLM dies after loading exited 0 "Success" and crash-looped seconds later.
Through the real pyinfra CLI against the rehearsal cluster: a restore to a probe-less good revision waits for
vLLM's serving line and says so, as the Deployment wait does; a restore to a probe-less revision that dies after
its container started fails as a crash loop, exit 1."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines
from fixtures.restore_world import vllm_runtime, wait_until
from vllm_remedy.kube.client import JSON_PATCH
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.patch import json_patch

rehearsal = pyinfra_run.rehearsal
HOST = "@k8s/rehearsal/llm/statefulset/sts"
RESTORE = str(ROOT / "deploys" / "restore.py")
VERDICT = re.compile(r"^wait for revision (\d+) to roll out: (.*)$")


def _set(rehearsal: Rehearsal) -> dict[str, Any]:
    client = rehearsal.client()
    return client.request("GET", client.object_path("llm", "statefulsets", "sts"))


def _patch(rehearsal: Rehearsal, utilization: str) -> None:
    """A colleague's edit of the set's ``--gpu-memory-utilization`` (0.30: vLLM loads, then finds no KV cache)."""
    client = rehearsal.client()
    current = _set(rehearsal)
    wanted = copy.deepcopy(current)
    args = wanted["spec"]["template"]["spec"]["containers"][0]["args"]
    args[args.index("--gpu-memory-utilization") + 1] = utilization
    client.request("PATCH", client.object_path("llm", "statefulsets", "sts"), body=json_patch(current, wanted),
                   content_type=JSON_PATCH)


def _pod(rehearsal: Rehearsal) -> dict[str, Any] | None:
    found = [p for p in rehearsal.client().list_pods("llm", "app=sts") if not p["metadata"].get("deletionTimestamp")]
    return found[0] if found else None


def serving(rehearsal: Rehearsal) -> bool:
    """The set's pod is on the update revision and its log says uvicorn serves (the test's own look)."""
    pod, sts = _pod(rehearsal), _set(rehearsal)
    update = (sts.get("status") or {}).get("updateRevision")  # a set its controller has not yet seen has no status
    if pod is None or update is None or pod["metadata"]["labels"].get("controller-revision-hash") != update:
        return False
    return pod_health(pod).ready and "Application startup complete" in rehearsal.client().pod_log(
        "llm", pod["metadata"]["name"], "vllm")


def crash_looping(rehearsal: Rehearsal) -> bool:
    pod = _pod(rehearsal)
    return pod is not None and any(s.get("restartCount", 0) >= 2 for s in pod["status"].get("containerStatuses") or [])


def start_set(rehearsal: Rehearsal) -> None:
    """llama-8b's healthy template, probes dropped, as a 1-replica StatefulSet (revision 1, serving)."""
    vllm_runtime(rehearsal)
    client = rehearsal.client()
    template = copy.deepcopy(client.get_deployment("llm", "llama-8b")["spec"]["template"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))  # its L40S cards go to the set
    template["metadata"] = {"labels": {"app": "sts"}}
    for c in template["spec"]["containers"]:
        for probe in ("readinessProbe", "startupProbe", "livenessProbe"):
            c.pop(probe, None)
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sts", "namespace": "llm"},
           "spec": {"replicas": 1, "serviceName": "sts", "selector": {"matchLabels": {"app": "sts"}},
                    "template": template}}
    client.request("POST", client.object_path("llm", "statefulsets"), body=sts)
    wait_until(lambda: serving(rehearsal), 120, "revision 1 to serve")


def inventory(tmp: Path) -> str:
    policy = tmp / "policy.yaml"
    policy.write_text("restore:\n  delete_pods: blocking\n")
    path = tmp / "inventory.py"
    path.write_text(f'hosts = [("{HOST}", {{"policy": "{policy}"}})]\n')
    return str(path)


def verdict(lines: list[str]) -> tuple[int, str]:
    """(revision, verdict) of the wait's last line (a deleted pod's line and a crash record's may share the label)."""
    found = [m for m in map(VERDICT.search, lines) if m and " after " in m.group(2)]
    assert found, lines
    return int(found[0].group(1)), found[0].group(2)


def test_a_statefulset_restore_to_a_revision_without_probe_waits_for_the_serving_line(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)
    _patch(rehearsal, "0.30")  # revision 2: no_cache_blocks after the weights load
    wait_until(lambda: crash_looping(rehearsal), 120, "revision 2 to crash-loop")
    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", "--data", "progress_seconds=0", timeout=300)
    assert got.returncode == 0, got.stderr
    revision, said = verdict(host_lines(got.stderr, HOST))
    assert revision == 1
    assert re.fullmatch(r".* \(no readiness probe: waited for vLLM's serving line\) after (\d+)s \(cluster time\)",
                        said), said
    assert serving(rehearsal)  # what the verdict claimed holds when the run has ended


def test_a_statefulset_restore_to_a_revision_without_probe_that_dies_after_starting_fails_as_a_crash_loop(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)
    _patch(rehearsal, "0.30")  # revision 2: dies after its container started
    wait_until(lambda: crash_looping(rehearsal), 120, "revision 2 to crash-loop")
    _patch(rehearsal, "0.90")  # revision 3 (revision 1's template): serving again
    wait_until(lambda: serving(rehearsal), 120, "revision 3 to serve")
    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", "--data", "revision=2", "--data", "override=evidence",
                            "--data", "progress_seconds=0", timeout=300)
    lines = host_lines(got.stderr, HOST)
    assert got.returncode == 1, got.stderr
    revision, said = verdict(lines)
    assert revision == 2
    assert said.startswith("crash-loop after "), said
    assert "no_cache_blocks" in said, said
    assert "Success" not in lines, lines


def test_a_deploy_that_writes_nothing_does_not_call_a_loading_probe_less_set_rolled_out(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    """A rerun after a run died mid-wait (or any deploy with nothing to write) ends with the wait: a probe-less set
    kubectl calls rolled out while vLLM still loads is waited for, not "noop: ... is rolled out"."""
    start_set(rehearsal)
    rehearsal.clusters["rehearsal"].clock.set_speed(8.0)  # the ~110 s start takes ~14 s: the run meets it loading

    def colleague(env: str) -> None:
        client = rehearsal.client()
        current = _set(rehearsal)
        wanted = copy.deepcopy(current)
        wanted["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append({"name": env, "value": "1"})
        client.request("PATCH", client.object_path("llm", "statefulsets", "sts"), body=json_patch(current, wanted),
                       content_type=JSON_PATCH)

    colleague("COLLEAGUE")

    def complete_but_loading() -> bool:
        sts, pod = _set(rehearsal), _pod(rehearsal)
        status = sts.get("status") or {}
        return (pod is not None and status.get("currentRevision") == status.get("updateRevision")
                and status.get("updatedReplicas") == status.get("readyReplicas") == 1
                and sts["metadata"]["generation"] == status.get("observedGeneration") and not serving(rehearsal))

    wait_until(complete_but_loading, 60, "kubectl's rollout complete while vLLM loads")
    got = rehearsal.pyinfra(inventory(tmp_path), str(ROOT / "deploys" / "load_guard.py"), "-y", "--data",
                            "progress_seconds=0", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert "noop: statefulset llm/sts is rolled out" not in lines, lines
    assert any(re.fullmatch(r"wait for statefulset llm/sts to roll out: no readiness probe, and pod\(s\) sts-0 do not "
                            r"show vLLM's serving line yet: waiting for it", line) for line in lines), lines
    assert any(re.fullmatch(r"wait for statefulset llm/sts to roll out: .* \(no readiness probe: waited for vLLM's "
                            r"serving line\) after \d+s \(cluster time\)", line) for line in lines), lines
    assert serving(rehearsal)
