"""The deploys' wait on a vLLM Deployment with no readinessProbe (hostile review 15b, F8): Kubernetes counts such a
container Ready the moment it starts, so the wait must not call the rollout done on Ready alone. Through the real
pyinfra CLI against the rehearsal cluster: restore to a probe-less revision waits for vLLM's serving line and says
so; restore to a probe-less revision that dies after its container started fails as a crash loop, exit 1."""

from __future__ import annotations

import re
from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal
from fixtures.restore_world import (
    LOCAL,
    RESTORE,
    bad_revision,
    crash_looping,
    host_out,
    newest_revision,
    pods,
    vllm_runtime,
    wait_until,
)
from vllm_remedy.kube.health import pod_health

rehearsal = pyinfra_run.rehearsal
LOAD_GUARD = str(ROOT / "deploys" / "load_guard.py")
VERDICT = re.compile(r"wait for revision (\d+)'s template to roll out: (.*)$")


def no_probe(dep: dict[str, Any]) -> None:
    for c in dep["spec"]["template"]["spec"]["containers"]:
        c.pop("readinessProbe", None)
        c.pop("startupProbe", None)


def colleague(dep: dict[str, Any]) -> None:
    dep["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append({"name": "COLLEAGUE", "value": "1"})


def template_hash(rehearsal: Rehearsal, revision: int) -> str | None:
    """``revision``'s pod-template-hash (a rollback reuses the ReplicaSet under the next revision number)."""
    rs = next((r for r in rehearsal.client().list_replicasets("llm", "app=llama-8b")
               if r["metadata"]["annotations"].get("deployment.kubernetes.io/revision") == str(revision)), None)
    return None if rs is None else str(rs["metadata"]["labels"]["pod-template-hash"])


def served(rehearsal: Rehearsal, hash_: str | None) -> bool:
    """The two pods of the template ``hash_`` are up and their logs say uvicorn serves (the test's own look)."""
    client = rehearsal.client()
    mine = [p for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp")
            and p["metadata"]["labels"].get("pod-template-hash") == hash_]
    return len(mine) == 2 and all(pod_health(p).ready and "Application startup complete" in
                                  client.pod_log("llm", p["metadata"]["name"], "vllm") for p in mine)


def verdict(lines: list[str]) -> tuple[int, str]:
    """(revision, verdict) of the wait's line (a crash record's line may follow it under the same label)."""
    found = [m for m in map(VERDICT.search, lines) if m]
    assert found, lines
    return int(found[0].group(1)), found[0].group(2)


def test_a_restore_to_a_revision_without_probe_waits_for_the_serving_line(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    good = newest_revision(rehearsal) + 1
    rehearsal.change(no_probe, change_cause="readinessProbe dropped")  # a hand-written manifest: no probe
    wait_until(lambda: served(rehearsal, template_hash(rehearsal, good)), 60, f"revision {good} to serve")
    good_hash = template_hash(rehearsal, good)
    bad = good + 1
    rehearsal.change(bad_revision, change_cause="drop --max-model-len; move to the L4 pool")
    wait_until(lambda: crash_looping(rehearsal, revision=bad), 60, f"revision {bad} to crash-loop")
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y", "--data", f"revision={good}", "--data", "progress_seconds=0")
    assert got.returncode == 0, got.stderr
    revision, said = verdict(host_out(got.stderr))
    assert revision == good
    waited = re.fullmatch(r'deployment "llama-8b" successfully rolled out \(no readiness probe: waited for vLLM\'s '
                          r"serving line\) after (\d+)s \(cluster time\)", said)
    assert waited, said
    # Recreate: both pods start from scratch; Llama-3.1-8B's start (weights, profiling, graphs) is ~110 cluster s,
    # Ready (no probe) comes within a second or two of the container's start
    assert int(waited.group(1)) >= 60, said
    assert served(rehearsal, good_hash)  # what the verdict claimed holds when the run has ended


def test_a_restore_to_a_revision_without_probe_that_dies_after_starting_fails_as_a_crash_loop(
        rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    dying = newest_revision(rehearsal) + 1

    def bad_without_probe(dep: dict[str, Any]) -> None:
        bad_revision(dep)
        no_probe(dep)

    rehearsal.change(bad_without_probe, change_cause="drop --max-model-len and the probe; move to the L4 pool")
    wait_until(lambda: crash_looping(rehearsal, revision=dying), 60, f"revision {dying} to crash-loop")
    rehearsal.change(colleague, change_cause="a colleague's env change")  # still crash-looping
    wait_until(lambda: crash_looping(rehearsal, revision=dying + 1), 60, f"revision {dying + 1} to crash-loop")
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y", "--data", f"revision={dying}", "--data", "override=evidence",
                            "--data", "progress_seconds=0")
    lines = host_out(got.stderr)
    assert got.returncode == 1, got.stderr
    revision, said = verdict(lines)
    assert revision == dying
    assert said.startswith("crash-loop after "), said
    assert "max_len_exceeds_kv" in said, said
    assert "successfully rolled out" not in got.stderr


def test_a_deploy_that_writes_nothing_does_not_call_a_loading_probe_less_rollout_done(rehearsal: Rehearsal) -> None:
    """A rerun after a run died mid-wait (or any deploy with nothing to write) ends with the wait: a probe-less
    rollout kubectl calls complete while vLLM still loads is waited for, not "noop: ... is rolled out"."""
    vllm_runtime(rehearsal)
    rehearsal.cluster.clock.set_speed(8.0)  # the ~110 s start takes ~14 s: the run below meets it loading
    client = rehearsal.client()
    fresh = newest_revision(rehearsal) + 1
    rehearsal.change(no_probe, change_cause="readinessProbe dropped")

    def complete_but_loading() -> bool:
        dep = client.get_deployment("llm", "llama-8b")
        status, want = dep.get("status") or {}, dep["spec"]["replicas"]
        return (status.get("updatedReplicas") == status.get("availableReplicas") == status.get("replicas") == want
                and dep["metadata"]["generation"] == status.get("observedGeneration")
                and not served(rehearsal, template_hash(rehearsal, fresh)))

    wait_until(complete_but_loading, 60, "kubectl's rollout complete while vLLM loads")
    got = rehearsal.pyinfra(LOCAL, LOAD_GUARD, "-y", "--data", "progress_seconds=0")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert "noop: deployment llm/llama-8b is rolled out" not in lines, lines
    assert any(re.fullmatch(r"wait for deployment llm/llama-8b to roll out: no readiness probe, and pod\(s\) "
                            r"llama-8b-\S+(, llama-8b-\S+)? do not show vLLM's serving line yet: waiting for it", line)
               for line in lines), lines
    assert any(re.fullmatch(r'wait for deployment llm/llama-8b to roll out: deployment "llama-8b" successfully rolled '
                            r"out \(no readiness probe: waited for vLLM's serving line\) after \d+s \(cluster time\)",
                            line) for line in lines), lines
    assert served(rehearsal, template_hash(rehearsal, fresh))
