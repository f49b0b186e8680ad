"""A Deployment whose vLLM gets ``--hf-token`` without a value and has no token of its own, on the rehearsal cluster
through the real pyinfra CLI (tests/fixtures/hf_hub_server via HF_ENDPOINT, a public repository): its pods die on
huggingface_hub's LocalTokenNotFoundError (``hub.bare_token``), and the deploy's prediction says so in one line with
the fix instead of "fits". Before, the pods served and the deploy predicted a fit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.hub_deploys import inventory_for
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, vllm_runtime, wait_until
from vllm_remedy.kube.errors import KubeError

rehearsal = pyinfra_run.exact_rehearsal
MODEL = "acme-corp/SmolLM2-Bare-Deploy"
SERVE = [MODEL, "--hf-token", "--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
SAID = "huggingface_hub.errors.LocalTokenNotFoundError: Token is required (`token=True`), but no token found."


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", drop_token=True)
        yield server


def _serving(dep: dict[str, Any]) -> None:
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["args"] = list(SERVE)
    container["env"] = [e for e in container.get("env") or [] if e.get("name") not in ("HF_TOKEN",
                                                                                       "HUGGING_FACE_HUB_TOKEN")]


def _pods_say(rehearsal: Rehearsal) -> bool:
    client = rehearsal.client()
    for pod in client.list_pods("llm", "app=llama-8b"):
        try:
            if SAID in client.pod_log("llm", pod["metadata"]["name"], "vllm"):
                return True
        except KubeError:  # still ContainerCreating: no log yet
            continue
    return False


def test_a_bare_hf_token_without_a_token_fails_the_pods_and_the_prediction(hub, rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(_serving, change_cause="serve with a bare --hf-token and no token")
    wait_until(lambda: _pods_say(rehearsal), 30, "the pods to die on LocalTokenNotFoundError")
    got = rehearsal.pyinfra(inventory_for(rehearsal, MODEL), BUDGET, "--dry")
    assert got.returncode == 1, got.stderr
    out = "\n".join(host_out(got.stderr))
    assert (f"no prediction: deployment llm/llama-8b: model {MODEL}: vLLM's --hf-token without a value asks "
            "huggingface_hub for a stored token") in out, got.stderr
    assert "LocalTokenNotFoundError; set HF_TOKEN in the pod's env" in out, got.stderr
