"""The full-pool strategy switch (maxSurge 0 / maxUnavailable 1) trades availability for progress: on a *serving*
one-replica Deployment set to ``maxUnavailable: 0`` it would stop the only Ready pod before its successor starts.
The eager toggle now refuses that write — in ``--dry``, with ``-y`` and at the prompt, exit 1, one line saying why and
what to do — unless the run consents (``--data override=capacity``); then the line says the service serves nothing
until the new pod is Ready (not "replaced one at a time"). The switch is part of the toggle: recorded with its prior
argv and put back with the flag by ``vllm-remedy expire`` — unless a colleague changed the strategy since. Before,
the switch was written silently as "one at a time" and outlived the toggle for good (real pyinfra CLI and
``vllm-remedy expire``, rehearsal cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import (
    BUDGET,
    EAGER,
    GOOD_ARGS,
    LOCAL,
    MODEL,
    args_of,
    deployment,
    live_pods,
    prompted_run,
    quiet,
    rolled_out,
)
from fixtures.drift_world import add_vllm_deployment
from fixtures.dry_run import dry_then_apply
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, vllm_runtime, wait_until
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.kube.errors import ConflictError

rehearsal = pyinfra_run.rehearsal

NO_DOWN = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
SWITCHED = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
EXPIRES, PRIOR = "vllm-remedy.io/enforce-eager-expires", "vllm-remedy.io/enforce-eager-prior"
FILLER = "/apis/apps/v1/namespaces/llm/deployments/filler"
CONSENT = ("--data", "override=capacity")


def scale_filler(rehearsal: Rehearsal, replicas: int) -> None:
    """filler (llama-8b's template under another name) to ``replicas`` pods, each holding an L40S GPU."""
    client = rehearsal.client()
    for _ in range(20):
        body = client.request("GET", FILLER)
        body["spec"]["replicas"] = replicas
        try:
            client.request("PUT", FILLER, body=body)
            break
        except ConflictError:
            continue
    wait_until(lambda: len([p for p in client.list_pods("llm", "app=filler")
                            if (p.get("spec") or {}).get("nodeName")
                            and not p["metadata"].get("deletionTimestamp")]) == replicas,
               what=f"filler at {replicas} placed pod(s)")


def one_serving_on_a_full_pool(rehearsal: Rehearsal, args: list[str] = GOOD_ARGS) -> dict[str, Any]:
    """llama-8b: one Ready replica on one L40S node, maxSurge 1 / maxUnavailable 0; filler holds the other two."""
    vllm_runtime(rehearsal)

    def one(dep: dict[str, Any]) -> None:
        dep["spec"]["replicas"] = 1
        dep["spec"]["strategy"] = dict(SWITCHED)  # only to get there
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(args)

    rehearsal.change(one, change_cause="one replica")
    rolled_out(rehearsal)
    add_vllm_deployment(rehearsal, "filler")
    scale_filler(rehearsal, 2)
    rehearsal.change(lambda d: d["spec"].update(strategy=dict(NO_DOWN)))
    before = quiet(rehearsal)
    assert len(live_pods(rehearsal)) == 1 and before["status"].get("readyReplicas") == 1
    return before


def remedy(rehearsal: Rehearsal, *args: str) -> subprocess.CompletedProcess[str]:
    """``vllm-remedy ARGS`` with the rehearsal's KUBECONFIG."""
    return subprocess.run([sys.executable, "-m", "vllm_remedy", *args], capture_output=True, text=True,
                          env=rehearsal.env(), cwd=rehearsal.tmp, timeout=300)


def refusal(stderr: str) -> list[str]:
    return [line for line in host_out(stderr) if line.startswith("refused")]


def test_eager_on_the_only_serving_pod_of_a_full_pool_is_refused(rehearsal: Rehearsal) -> None:
    before = one_serving_on_a_full_pool(rehearsal)
    version, pods = before["metadata"]["resourceVersion"], {p["metadata"]["name"] for p in live_pods(rehearsal)}
    runs = [rehearsal.pyinfra(LOCAL, EAGER, "--dry", "--data", "eager_ttl=30m"),
            rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=30m"),
            prompted_run(rehearsal, EAGER, lambda: None)]
    for got in runs:
        assert got.returncode == 1, got.stderr
        said = sorted(set(refusal(got.stderr)))  # the prompt's run prints it when planning and when executing
        assert len(said) == 1, got.stderr
        assert "--enforce-eager on deployment llm/llama-8b: no free NVIDIA-L40S GPU for a surge pod" in said[0], said
        assert "it would serve nothing until the new pod is Ready" in said[0], said
        assert said[0].endswith("free a NVIDIA-L40S GPU, or accept the outage with --data override=capacity"), said
        assert not [line for line in host_out(got.stderr) if "one at a time" in line], got.stderr
    after = deployment(rehearsal)
    assert after["metadata"]["resourceVersion"] == version  # nothing written
    assert {p["metadata"]["name"] for p in live_pods(rehearsal)} == pods  # the serving pod still serves


@pytest.mark.parametrize("colleague", [False, True], ids=["ours", "colleague-changed-it"])
def test_a_consented_switch_says_the_outage_and_goes_back_with_the_toggle(rehearsal: Rehearsal,
                                                                           colleague: bool) -> None:
    one_serving_on_a_full_pool(rehearsal)
    _dry, got = dry_then_apply(rehearsal, LOCAL, EAGER, "--data", "eager_ttl=10m", *CONSENT, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    shown = host_out(got.stderr)
    assert ("strategy: RollingUpdate maxSurge 1, maxUnavailable 0 -> RollingUpdate maxSurge 0, maxUnavailable 1: "
            "no free NVIDIA-L40S GPU for a surge pod: it serves nothing from the old pod's stop until the new one is "
            "Ready (--data override=capacity)") in shown, shown
    assert not [line for line in shown if "one at a time" in line], shown
    on = rolled_out(rehearsal)
    assert on["spec"]["strategy"] == SWITCHED and args_of(on) == [*GOOD_ARGS, "--enforce-eager"]
    record = json.loads(on["metadata"]["annotations"][PRIOR])
    assert record["strategy"] == {"before": NO_DOWN, "written": SWITCHED}

    scale_filler(rehearsal, 1)  # a GPU is free again: the strategy from before the toggle can roll
    mine = {"type": "Recreate"}
    if colleague:
        rehearsal.change(lambda d: d["spec"].update(strategy=dict(mine)))
    client = rehearsal.client()
    while client.server_time() < parse_rfc3339(on["metadata"]["annotations"][EXPIRES]):
        time.sleep(0.05)
    expired = remedy(rehearsal, "expire", "-i", LOCAL)
    assert expired.returncode == 0, expired.stdout + expired.stderr
    after = rolled_out(rehearsal)
    assert args_of(after) == GOOD_ARGS
    assert EXPIRES not in after["metadata"]["annotations"] and PRIOR not in after["metadata"]["annotations"]
    text = expired.stdout + expired.stderr
    if colleague:
        assert after["spec"]["strategy"] == mine
        assert "the rollout strategy the toggle switched was changed since; it is left as it is" in text, text
    else:
        assert after["spec"]["strategy"] == NO_DOWN
        assert ("strategy: back to RollingUpdate maxSurge 1, maxUnavailable 0, as before the toggle's write switched "
                "it") in text, text


def test_the_budget_rung_on_the_only_serving_pod_of_a_full_pool_is_refused_too(rehearsal: Rehearsal) -> None:
    """The budget's rung asks the same rule (``pin_gpu.set_template_on_pool``): refused in --dry and with -y."""
    before = one_serving_on_a_full_pool(rehearsal, [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"])
    for got in (rehearsal.pyinfra(LOCAL, BUDGET, "--dry"), rehearsal.pyinfra(LOCAL, BUDGET, "-y")):
        assert got.returncode == 1, got.stderr
        said = sorted(set(refusal(got.stderr)))
        assert len(said) == 1 and said[0].startswith("refused: budget deployment llm/llama-8b: --max-model-len"), said
        assert "it would serve nothing until the new pod is Ready" in said[0], said
    assert deployment(rehearsal)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_turning_the_toggle_off_puts_its_switch_back_where_the_pool_has_room(rehearsal: Rehearsal) -> None:
    one_serving_on_a_full_pool(rehearsal)
    on = rehearsal.pyinfra(LOCAL, EAGER, "-y", "--data", "eager_ttl=30m", *CONSENT)
    assert on.returncode == 0, on.stderr
    assert rolled_out(rehearsal)["spec"]["strategy"] == SWITCHED
    scale_filler(rehearsal, 1)
    _dry, off = dry_then_apply(rehearsal, LOCAL, EAGER, "--data", "enforce_eager=false", expect_diffs=2)
    assert off.returncode == 0, off.stderr
    assert ("strategy: back to RollingUpdate maxSurge 1, maxUnavailable 0, as before the toggle's write switched it"
            in host_out(off.stderr)), off.stderr
    after = rolled_out(rehearsal)
    assert after["spec"]["strategy"] == NO_DOWN and args_of(after) == GOOD_ARGS
