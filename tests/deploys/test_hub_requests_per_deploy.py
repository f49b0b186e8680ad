"""What one deploy run asks the Hub for a model outside the catalog: one HEAD for its config.json, nothing else
(rehearsal cluster, real pyinfra CLI, Hub-compatible servers on 127.0.0.1 via HF_ENDPOINT).

The deploys are pointed at a Hub of their own (the same repository at the same commit), so what the cluster's pods
ask — vLLM asks at each container start, which is where a count of every request in one Hub's log finds more than
one HEAD per diagnose or restore run beside crash-looping pods — is not counted. Before, each deploy process also
sent ``GET /api/agent-harnesses`` (huggingface_hub's agent detection for its User-Agent) every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, rolled_out, with_args
from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID, HubServer, Repo, hub_server, use_hub
from fixtures.hub_deploys import inventory_for
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import DIAGNOSE, RESTORE, quiet, vllm_runtime

rehearsal = pyinfra_run.exact_rehearsal
SERVE = [SMOLLM2_ID, "--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    """The cluster's Hub (this process's HF_ENDPOINT)."""
    with hub_server({SMOLLM2_ID: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf")
        yield server


def test_diagnose_restore_and_budget_each_send_one_head_per_run(hub, rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(SERVE), change_cause="serve SmolLM2-1.7B")
    rolled_out(rehearsal)
    quiet(rehearsal)
    inv = inventory_for(rehearsal, SMOLLM2_ID)
    head = ("HEAD", f"/{SMOLLM2_ID}/resolve/main/config.json")
    with hub_server({SMOLLM2_ID: Repo({"config.json": SMOLLM2_CONFIG})}) as own:
        for deploy in (DIAGNOSE, RESTORE, BUDGET):
            own.requests.clear()
            got = rehearsal.pyinfra(inv, deploy, "--dry", env={"HF_ENDPOINT": own.url})
            assert got.returncode == 0, got.stderr
            assert own.requests == [head], (deploy, own.requests)
