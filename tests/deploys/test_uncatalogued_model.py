"""A Deployment serving a model outside the catalog, on the rehearsal cluster through the real pyinfra CLI: the
cluster's pods and the deploys resolve its config.json the same way (a Hub-compatible server on 127.0.0.1 via
HF_ENDPOINT, then the shared Hugging Face cache), and a model that resolves nowhere is "no prediction: <why>"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, args_of, deployment, kv_logged, policy_file, rolled_out, with_args
from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID, HubServer, Repo, hub_server, use_hub
from fixtures.hub_deploys import inventory_for, pods_refuse
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    DIAGNOSE,
    HOST,
    RESTORE,
    crash_looping,
    host_out,
    quiet,
    vllm_runtime,
    wait_until,
    write_inventory,
)

# the pods' logged KV cache is compared with the prediction number for number
rehearsal = pyinfra_run.exact_rehearsal
SERVE = [SMOLLM2_ID, "--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    """The Hub for this test, for the in-process cluster and (through the environment) the pyinfra CLI."""
    with hub_server({SMOLLM2_ID: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf")
        yield server


def test_an_uncatalogued_model_starts_and_goes_through_diagnose_and_budget(hub, rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(SERVE), change_cause="serve SmolLM2-1.7B")
    rolled_out(rehearsal)
    quiet(rehearsal)
    logged = set(kv_logged(rehearsal).values())  # the pods started: the cluster resolved the model from the Hub
    assert len(logged) == 1
    inv = inventory_for(rehearsal, SMOLLM2_ID)
    diagnosed = rehearsal.pyinfra(inv, DIAGNOSE, "-y")
    assert diagnosed.returncode == 0, diagnosed.stderr
    planned = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert planned.returncode == 0, planned.stderr
    lines = host_out(planned.stderr)
    kv = next(iter(logged))
    report = host_out(diagnosed.stderr)
    assert "step 2 — startup log: 2/2 pods Ready, crash-looping: none" in report, report
    assert f"model: meta-llama/Llama-3.1-8B-Instruct → {SMOLLM2_ID}" in report, report
    # the deploy's prediction is the number the pods' own startup log printed (197,200 on an L40S)
    assert ("noop: deployment llm/llama-8b fits on NVIDIA-L40S with headroom and an explicit --max-model-len "
            f"(prediction on NVIDIA-L40S: fits — KV cache {kv:,} tokens, maximum concurrency 24.07x at max-model-len "
            "8192)") in lines, lines
    assert args_of(deployment(rehearsal)) == SERVE
    fetched = [r for r in hub.requests if "/resolve/" in r[1] and not r[1].endswith("/hf_quant_config.json")]
    head, get = ("HEAD", f"/{SMOLLM2_ID}/resolve/main/config.json"), ("GET", f"/{SMOLLM2_ID}/resolve/main/config.json")
    # each pod's start asked as vLLM does at each start: the first fetched it (one GET), the second revalidated main
    # in the shared cache with one HEAD; so did each deploy's process
    assert fetched == [get, head, head, head]


def test_a_model_that_resolves_nowhere_is_no_prediction_and_the_pods_say_invalid_repository(
        hub, rehearsal: Rehearsal) -> None:
    missing = "acme-corp/NoSuch-7B"
    vllm_runtime(rehearsal)
    rehearsal.change(with_args([missing, *SERVE[1:]]), change_cause="serve a model nobody has")
    wait_until(lambda: pods_refuse(rehearsal, missing), 30, "the pods to refuse the model")
    got = rehearsal.pyinfra(inventory_for(rehearsal, missing), BUDGET, "--dry")
    lines = host_out(got.stderr)
    assert got.returncode == 1, got.stderr  # no budget change without a prediction, why in one line: the host fails
    assert (f"no prediction: deployment llm/llama-8b: model {missing}: not found on the Hub ({hub.url}) nor in the "
            "local Hugging Face cache") in lines, lines


def test_offline_the_policys_configmap_is_the_last_resort(rehearsal: Rehearsal) -> None:
    """No Hub (HF_HUB_OFFLINE, empty cache): the policy's model_config names a ConfigMap holding config.json."""
    private = "acme-corp/SmolLM2-1.7B-FineTune"
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "smollm-config", "namespace": "llm"},
                  "data": {"config.json": json.dumps(SMOLLM2_CONFIG)}}
    rehearsal.cluster.apply_seed({"models": [{"id": private, "config": SMOLLM2_CONFIG}],  # what its pods load
                                  "objects": [{"resource": "configmaps", "object": config_map}]})
    vllm_runtime(rehearsal)
    rehearsal.change(with_args([private, *SERVE[1:]]), change_cause="serve the private fine-tune")
    rolled_out(rehearsal)
    quiet(rehearsal)
    kv = next(iter(set(kv_logged(rehearsal).values())))
    target = f"target:\n  namespaces: [llm]\n  deployments: [llama-8b]\n  models: [{private}]\n"
    without = rehearsal.pyinfra(write_inventory(rehearsal.tmp, HOST, policy=policy_file(rehearsal.tmp, target),
                                                kubeconfig=str(rehearsal.kubeconfig)), BUDGET, "--dry")
    assert (f"no prediction: deployment llm/llama-8b: model {private}: not in the catalog nor the local Hugging Face "
            "cache, and HF_HUB_OFFLINE is set") in host_out(without.stderr), without.stderr
    assert without.returncode == 1, without.stderr  # nothing changed: --dry exits 1 as -y would
    policy = policy_file(rehearsal.tmp, target + "model_config:\n  config_map: smollm-config\n")
    got = rehearsal.pyinfra(write_inventory(rehearsal.tmp, HOST, policy=policy, kubeconfig=str(rehearsal.kubeconfig)),
                            BUDGET, "--dry")
    assert got.returncode == 0, got.stderr
    assert any(f"(prediction on NVIDIA-L40S: fits — KV cache {kv:,} tokens" in line
               for line in host_out(got.stderr)), got.stderr


def test_restore_rolls_back_by_evidence_when_the_model_resolves_nowhere(rehearsal: Rehearsal) -> None:
    """The tools are offline and the model is nowhere they look: no prediction, and restore still rolls back to
    the revision that served, by the crash evidence alone."""
    private = "acme-corp/SmolLM2-1.7B-Private"
    rehearsal.cluster.apply_seed({"models": [{"id": private, "config": SMOLLM2_CONFIG}]})  # only the pods have it
    vllm_runtime(rehearsal)
    rehearsal.change(with_args([private, *SERVE[1:]]), change_cause="serve the private model")
    rolled_out(rehearsal)
    starved = [private, "--max-model-len", "8192", "--gpu-memory-utilization", "0.05"]
    rehearsal.change(with_args(starved), change_cause="starve it")
    wait_until(lambda: crash_looping(rehearsal, 1), 60, "revision 16 to crash-loop")
    inv = inventory_for(rehearsal, private, "known_good: []\n")  # the runbook's pinned Llama unit is not this
    got = rehearsal.pyinfra(inv, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert (f"no prediction: model {private}: not in the catalog nor the local Hugging Face cache, and "
            "HF_HUB_OFFLINE is set") in lines, lines
    assert any(line.startswith("roll back deployment llm/llama-8b from revision 16 to revision 15 ")
               and ": written (resourceVersion " in line for line in lines), lines
    assert args_of(rolled_out(rehearsal)) == [private, *SERVE[1:]]
