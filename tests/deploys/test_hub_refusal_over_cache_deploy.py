"""A deploy predicts a Deployment's pods with the Hub's answer to them, not with this machine's cached copy
(rehearsal cluster, real pyinfra CLI, the Hub-compatible server on 127.0.0.1 via HF_ENDPOINT).

The cluster's pods downloaded the model's config.json into the Hugging Face cache this machine shares with them;
then the repository is gated. Pods without a token that start now die (the Hub's 401), so budget's prediction is the
Hub's "no", whatever the cache holds. Before, the copy served, with a stderr warning, and budget said "fits"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, rolled_out, with_args
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.hub_deploys import inventory_for
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, quiet, vllm_runtime

rehearsal = pyinfra_run.exact_rehearsal
MODEL = "acme-corp/SmolLM2-Gated-Later"
SERVE = [MODEL, "--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", drop_token=True)
        yield server


def test_a_repository_gated_since_the_pods_started_is_the_hubs_no_not_the_cached_copy(hub, rehearsal: Rehearsal
                                                                                      ) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(SERVE), change_cause="serve an open model")
    rolled_out(rehearsal)
    quiet(rehearsal)  # the pods served: config.json is in the cache
    hub.repos[MODEL].gated = True
    got = rehearsal.pyinfra(inventory_for(rehearsal, MODEL), BUDGET, "--dry")
    lines = "\n".join(host_out(got.stderr))
    assert got.returncode == 1, got.stderr
    assert (f"no prediction: deployment llm/llama-8b: model {MODEL}: gated repository on the Hub ({hub.url}) and the "
            "pod sets no HF_TOKEN: vLLM's download is refused (401)") in lines, got.stderr
    assert "fits" not in lines, got.stderr
