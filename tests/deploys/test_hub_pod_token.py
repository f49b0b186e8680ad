"""A gated model on the rehearsal cluster through the real pyinfra CLI (tests/fixtures/hf_hub_server via
HF_ENDPOINT): the token that counts is the pod's, for the cluster's vLLM pods and for the deploys' prediction alike.
Before, both used the token of the process they ran in: a Deployment without HF_TOKEN was predicted to fit (and its
rehearsal pods served) because the operator had a token, and one with its own token crash-looped without one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, kv_logged, rolled_out
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.hub_deploys import inventory_for, pods_refuse
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, quiet, vllm_runtime, wait_until

rehearsal = pyinfra_run.exact_rehearsal
GATED = "acme-corp/SmolLM2-Gated"
SERVE = [GATED, "--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", drop_token=True)
        yield server


def serving(env: list[dict[str, Any]]):
    def mutate(dep: dict[str, Any]) -> None:
        container = dep["spec"]["template"]["spec"]["containers"][0]
        container["args"] = list(SERVE)
        container["env"] = [*(e for e in container.get("env") or [] if e.get("name") != "HF_TOKEN"), *env]
    return mutate


def test_a_pod_without_a_token_is_refused_though_the_operator_has_one(hub, rehearsal: Rehearsal,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_operator")  # the cluster's process and the deploys' have one; the pod has none
    vllm_runtime(rehearsal)
    rehearsal.change(serving([]), change_cause="serve a gated model without a token")
    wait_until(lambda: pods_refuse(rehearsal, GATED), 30, "the pods to refuse the gated model")
    got = rehearsal.pyinfra(inventory_for(rehearsal, GATED), BUDGET, "--dry")
    assert got.returncode == 1, got.stderr
    assert (f"no prediction: deployment llm/llama-8b: model {GATED}: gated repository on the Hub ({hub.url}) and the "
            "pod sets no HF_TOKEN: vLLM's download is refused (401)") in "\n".join(host_out(got.stderr)), got.stderr


def test_a_pod_with_its_own_token_serves_and_is_predicted_without_one_here(hub, rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(serving([{"name": "HF_TOKEN", "value": "hf_pod"}]), change_cause="serve it with the pod's token")
    rolled_out(rehearsal)
    quiet(rehearsal)
    kv = next(iter(set(kv_logged(rehearsal).values())))
    got = rehearsal.pyinfra(inventory_for(rehearsal, GATED), BUDGET, "--dry")
    assert got.returncode == 0, got.stderr
    assert any(f"(prediction on NVIDIA-L40S: fits — KV cache {kv:,} tokens" in line
               for line in host_out(got.stderr)), got.stderr
    assert ("GET", f"/{GATED}/resolve/main/config.json") in hub.authorized
