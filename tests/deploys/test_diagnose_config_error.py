"""deploys/diagnose.py through the real pyinfra CLI on a revision whose env names a Secret that does not exist: the
kubelet never creates the container (CreateContainerConfigError), so there is no log and no crash loop; the report
must name the kubelet's reason and message, not read as "no crashed container"."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import DIAGNOSE, LOCAL, host_out, newest_revision, pods, vllm_runtime, wait_until

rehearsal = pyinfra_run.rehearsal


def _hf_token_from_a_missing_secret(dep: dict[str, Any]) -> None:
    dep["spec"]["strategy"] = {"type": "Recreate"}
    dep["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append(
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}})


def _config_errors(rehearsal: Rehearsal) -> list[str]:
    return [p["metadata"]["name"] for p in pods(rehearsal) if not p["metadata"].get("deletionTimestamp")
            and any(((s.get("state") or {}).get("waiting") or {}).get("reason") == "CreateContainerConfigError"
                    for s in (p.get("status") or {}).get("containerStatuses") or [])]


def test_a_container_the_kubelet_would_not_create_is_reported_with_its_reason(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    bad = newest_revision(rehearsal) + 1
    rehearsal.change(_hf_token_from_a_missing_secret, change_cause="read HF_TOKEN from a Secret")
    wait_until(lambda: len(_config_errors(rehearsal)) == 2 and newest_revision(rehearsal) == bad,
               what="both new pods in CreateContainerConfigError")
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert any(line.startswith("step 2 — startup log: 0/2 pods Ready, crash-looping: none") for line in lines), lines
    for pod in _config_errors(rehearsal):
        assert (f'{pod}/vllm: CreateContainerConfigError — secret "hf-token" not found (the kubelet did not create '
                "the container: there is no log; create the Secret or ConfigMap it names, or mark the reference "
                "optional)") in lines, lines
    assert "no crashed container" not in lines
    assert "env HF_TOKEN: (absent) → {valueFrom: {secretKeyRef: {key: token, name: hf-token}}}" in lines, lines
