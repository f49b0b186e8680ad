"""The LeaderWorkerSet wait on a vLLM leader with no readiness or startup probe (hostile review 16, G2): Kubernetes
counts such a container Ready the moment it starts, so a group "ready" on Ready alone is not serving yet. Through
the real pyinfra CLI against the rehearsal cluster: a restore to a probe-less good revision waits for the leader's
serving line and says so (the workers, which join the leader's Ray cluster, print none and are not waited for); a
forced restore to a probe-less revision whose leader dies after starting fails as a crash loop, exit 1."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.lws_world import ARGS, BAD_ARGS, HOST, NAME, RESTORE, inventory, patch, read, serve_set, vllm_lws
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines
from fixtures.restore_world import vllm_runtime, wait_until
from vllm_remedy.kube.lws_history import NAME_LABEL
from vllm_remedy.kube.lws_wait import wait_for_lws_rollout
from vllm_remedy.kube.serving import ServingGate

rehearsal = pyinfra_run.rehearsal
LOAD_GUARD = str(ROOT / "deploys" / "load_guard.py")
VERDICT = re.compile(r"^wait for revision (\d+) to roll out: (.*)$")


def probe_less() -> dict[str, Any]:
    lws = vllm_lws(NAME)
    for role in ("leaderTemplate", "workerTemplate"):
        for c in lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"]:
            c.pop("readinessProbe", None)
    return lws


def start_set(rehearsal: Rehearsal) -> None:
    """The probe-less set serving (revision 1), then the bad rollout (revision 2) crash-looping: without a probe
    its leader is Ready as soon as it starts, so only the serving gate sees the crash before "ready"."""
    vllm_runtime(rehearsal)
    serve_set(rehearsal, probe_less())
    patch(rehearsal, [{"op": "replace", "path": ARGS, "value": BAD_ARGS}])
    client, clock = rehearsal.client(), rehearsal.clusters["rehearsal"].clock
    failed = wait_for_lws_rollout(client, "llm", NAME, timeout=1800, clock=clock, interval=5, fetch_log=False,
                                  gate=ServingGate(client, "llm"))
    assert (failed.outcome, failed.crash.pod if failed.crash else None) == ("crash-loop", f"{NAME}-0"), failed.message

    def restarting() -> bool:  # restore judges a crash loop by restarts: let the leader reach two
        return any(c.get("restartCount", 0) >= 2 for p in client.list_pods("llm", f"{NAME_LABEL}={NAME}")
                   if p["metadata"]["name"] == f"{NAME}-0" for c in p["status"].get("containerStatuses") or [])

    wait_until(restarting, 120, "the leader of revision 2 to crash-loop")


def verdict(lines: list[str]) -> tuple[int, str]:
    found = [m for m in map(VERDICT.search, lines) if m and " after " in m.group(2)]
    assert found, lines
    return int(found[0].group(1)), found[0].group(2)


def test_an_lws_restore_to_a_revision_without_probe_waits_for_the_leaders_serving_line(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    revision, said = verdict(host_lines(got.stderr, HOST))
    assert revision == 1
    assert re.fullmatch(r"leaderworkerset qwen-lws: 1 groups of 2 pods ready \(no readiness probe: waited for "
                        r"vLLM's serving line\) after \d+s \(cluster time\)", said), said


def test_an_lws_restore_to_a_revision_without_probe_that_dies_after_starting_fails_as_a_crash_loop(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)
    back = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", "--data", "revision=1", timeout=300)
    assert back.returncode == 0, back.stderr
    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", "--data", "revision=2", "--data",
                            "override=evidence", timeout=300)
    lines = host_lines(got.stderr, HOST)
    assert got.returncode == 1, got.stderr
    revision, said = verdict(lines)
    assert revision == 2
    assert said.startswith("crash-loop after "), said
    assert "Success" not in lines, lines


def test_a_deploy_that_writes_nothing_does_not_call_a_loading_probe_less_leader_rolled_out(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    """A rerun after a run died mid-wait (or any deploy with nothing to write): groups Ready while the leader's vLLM
    still loads are waited for, not "noop: ... is rolled out"."""
    vllm_runtime(rehearsal)
    serve_set(rehearsal, probe_less())
    rehearsal.clusters["rehearsal"].clock.set_speed(8.0)  # the run meets the new leader loading
    env = "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/env"
    patch(rehearsal, [{"op": "add", "path": env, "value": [{"name": "COLLEAGUE", "value": "1"}]}])

    def ready_but_loading() -> bool:
        lws = read(rehearsal)
        status = lws.get("status") or {}
        pods = rehearsal.client().list_pods("llm", f"{NAME_LABEL}={NAME}")
        leader = [p for p in pods if p["metadata"]["name"] == f"{NAME}-0" and not p["metadata"].get(
            "deletionTimestamp")]
        return (status.get("observedGeneration") == lws["metadata"]["generation"]
                and status.get("readyReplicas") == status.get("updatedReplicas") == 1 and bool(leader)
                and "Application startup complete" not in rehearsal.client().pod_log("llm", f"{NAME}-0",
                                                                                     "vllm-leader"))

    wait_until(ready_but_loading, 60, "the group Ready while the leader loads")
    got = rehearsal.pyinfra(inventory(tmp_path), LOAD_GUARD, "-y", "--data", "progress_seconds=0", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert f"noop: leaderworkerset llm/{NAME} is rolled out" not in lines, lines
    assert any(re.fullmatch(rf"wait for leaderworkerset llm/{NAME} to roll out: no readiness probe, and pod\(s\) "
                            rf"{NAME}-0 do not show vLLM's serving line yet: waiting for it", line)
               for line in lines), lines
    assert any(re.fullmatch(rf"wait for leaderworkerset llm/{NAME} to roll out: leaderworkerset {NAME}: 1 groups of 2 "
                            r"pods ready \(no readiness probe: waited for vLLM's serving line\) after \d+s "
                            r"\(cluster time\)", line) for line in lines), lines
