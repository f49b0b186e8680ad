"""The poll wait (what the deploys fall back to when the API server will not watch) holds a probe-less vLLM pod until
it serves, as the watch wait does (hostile review 15b, F8): against the rehearsal cluster's vLLM pods."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from vllm_remedy.kube.serving import NOTE, ServingGate
from vllm_remedy.kube.wait import wait_restored

rehearsal = pyinfra_run.rehearsal


def no_probe(dep: dict[str, Any]) -> None:
    for c in dep["spec"]["template"]["spec"]["containers"]:
        c.pop("readinessProbe", None)


def test_the_poll_wait_holds_a_probe_less_pod_until_its_serving_line(rehearsal: Rehearsal) -> None:
    clock = rehearsal.cluster.clock
    clock.set_speed(60.0)
    client = rehearsal.client()
    rehearsal.change(no_probe)
    plain = wait_restored(client, "llm", "llama-8b", 900, clock)  # as before: kubelet's Ready, i.e. started
    assert plain.ok and NOTE not in plain.message and plain.elapsed < 60, plain
    gated = wait_restored(client, "llm", "llama-8b", 900, clock, gate=ServingGate(client, "llm"))
    assert gated.ok and gated.message.endswith(f"({NOTE})"), gated
    assert plain.elapsed + gated.elapsed >= 60, (plain.elapsed, gated.elapsed)  # Llama-3.1-8B's start, ~110 s
    for pod in client.list_pods("llm", "app=llama-8b"):
        if not pod["metadata"].get("deletionTimestamp"):
            assert "Application startup complete" in client.pod_log("llm", pod["metadata"]["name"], "vllm")
