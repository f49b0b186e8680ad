"""A probe-less ``--headless`` Deployment on the rehearsal cluster (hostile review 16, G6): its pods log the
release's headless line and never serve, and the rollout wait counts them as started once they have run unrestarted
for the settle time — it used to wait for a serving line that never comes, until the rollout timeout. Both waits:
the poll wait (``wait_restored``) and a deploy's ``-y`` (the watch wait), through the real pyinfra CLI."""

from __future__ import annotations

from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, host_out
from vllm_remedy.kube.serving import HEADLESS_NOTE, ServingGate
from vllm_remedy.kube.wait import wait_restored

rehearsal = pyinfra_run.rehearsal


def headless_no_probe(dep: dict[str, Any]) -> None:
    for c in dep["spec"]["template"]["spec"]["containers"]:
        c.pop("readinessProbe", None)
        c["image"] = "vllm/vllm-openai:v0.10.1"  # --headless is 0.9.0 on
        c["args"] = [*c.get("args", []), "--headless", "--data-parallel-size", "1"]


def test_a_headless_rollout_is_done_once_its_engine_stays_up(rehearsal: Rehearsal) -> None:
    clock = rehearsal.cluster.clock
    clock.set_speed(60.0)
    client = rehearsal.client()
    rehearsal.change(headless_no_probe)
    got = wait_restored(client, "llm", "llama-8b", 900, clock, gate=ServingGate(client, "llm", settle=2.0))
    assert got.ok and got.message.endswith(f"({HEADLESS_NOTE.format(settle=2)})"), got.message
    for pod in client.list_pods("llm", "app=llama-8b"):
        if not pod["metadata"].get("deletionTimestamp"):
            log = client.pod_log("llm", pod["metadata"]["name"], "vllm")
            assert "in headless mode" in log and "Application startup complete" not in log, log
    ran = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=10m", timeout=300)
    said = host_out(ran.stderr)
    assert ran.returncode == 0, ran.stderr
    assert any(HEADLESS_NOTE.format(settle=30) in line for line in said), said  # the deploys' settle time
