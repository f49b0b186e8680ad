"""restore predicts each rollback candidate on its own model and ``--revision``, through the real pyinfra CLI on the
rehearsal cluster with a Hub-compatible server on 127.0.0.1: an earlier revision pinned to another revision of a Hub
model is resolved (one request for its file) and, predicted to fail on the card its pods would get, skipped with why.

Before, only the current template's (model, revision) was ever resolved: the earlier revision printed "no prediction:
model acme/Tagged is not in the catalog", the Hub was never asked for it, and restore rolled back into a start the
tool's own estimate calls ``oom_loading_weights``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import with_args
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.hub_deploys import inventory_for
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import (
    RESTORE,
    crash_looping,
    host_out,
    newest_revision,
    skipped,
    vllm_runtime,
    wait_until,
)

rehearsal = pyinfra_run.rehearsal
MODEL = "acme/Tagged"
#: The tag ``v1`` of the repository: a 70B-wide checkpoint (Llama-3.3-70B's shape), whose 16-bit weights alone
#: (~131 GiB) are more than an L40S holds; ``main`` is SmolLM2-1.7B's config.
BIG = {**SMOLLM2_CONFIG, "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
       "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}
V1 = [MODEL, "--revision", "v1", "--max-model-len", "4096", "--gpu-memory-utilization", "0.90"]
#: main at a length above its 8,192-token maximum: vLLM refuses it at config time, and the pods crash-loop
MAIN_TOO_LONG = [MODEL, "--max-model-len", "65536", "--gpu-memory-utilization", "0.90"]


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    repo = Repo({"config.json": SMOLLM2_CONFIG}, revisions={"v1": {"config.json": BIG}})
    with hub_server({MODEL: repo}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf")
        yield server


def _scaled(replicas: int, args: list[str]) -> Any:
    def mutate(dep: dict[str, Any]) -> None:
        with_args(args)(dep)
        dep["spec"]["replicas"] = replicas
    return mutate


def test_an_earlier_revision_at_another_model_revision_is_resolved_predicted_and_skipped(
        hub: HubServer, rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    # revision 15: the tag v1, applied scaled to zero (it never ran: no crash evidence speaks against it)
    rehearsal.change(_scaled(0, V1), change_cause="acme/Tagged v1, not started")
    wait_until(lambda: newest_revision(rehearsal) == 15, 60, "revision 15's ReplicaSet")  # its own revision
    # revision 16: main, at a length vLLM refuses: the incident
    rehearsal.change(_scaled(2, MAIN_TOO_LONG), change_cause="acme/Tagged main at 64k")
    wait_until(lambda: crash_looping(rehearsal, 2, 16), 120, "revision 16 to crash-loop")
    before = len(hub.requests)
    got = rehearsal.pyinfra(inventory_for(rehearsal, MODEL, "known_good: []\n"), RESTORE, "--dry")
    lines = host_out(got.stderr)
    assert got.returncode == 1, got.stderr  # nothing earlier serves acme/Tagged (hostile16 G10: no model swap)
    line = skipped(lines, 15)
    assert "predicted oom_loading_weights on NVIDIA-L40S" in line, line
    assert "it serves meta-llama/Llama-3.1-8B-Instruct, not acme/Tagged" in skipped(lines, 14), lines
    assert not any("not in the catalog" in x for x in lines), lines
    # the Hub was asked for the tag's files once each (main's by the connector, revalidated as usual)
    asked = [r for r in hub.requests[before:] if r[1].startswith(f"/{MODEL}/resolve/v1/")]
    assert ("GET", f"/{MODEL}/resolve/v1/config.json") in asked, hub.requests[before:]
    assert len(asked) == len(set(asked)), asked


def test_an_earlier_revision_at_a_revision_the_hub_does_not_have_is_skipped(
        hub: HubServer, rehearsal: Rehearsal) -> None:
    """The Hub's own "no" to revision 15's ``--revision`` is what vLLM would die on (model_unavailable): skipped with
    the Hub's words, not rolled back to as "no prediction"."""
    vllm_runtime(rehearsal)
    rehearsal.change(_scaled(0, [MODEL, "--revision", "v9", *V1[3:]]), change_cause="acme/Tagged v9, not started")
    wait_until(lambda: newest_revision(rehearsal) == 15, 60, "revision 15's ReplicaSet")
    rehearsal.change(_scaled(2, MAIN_TOO_LONG), change_cause="acme/Tagged main at 64k")
    wait_until(lambda: crash_looping(rehearsal, 2, 16), 120, "revision 16 to crash-loop")
    got = rehearsal.pyinfra(inventory_for(rehearsal, MODEL, "known_good: []\n"), RESTORE, "--dry")
    lines = host_out(got.stderr)
    assert got.returncode == 1, got.stderr  # nothing earlier serves acme/Tagged (hostile16 G10: no model swap)
    line = skipped(lines, 15)
    assert f"predicted model_unavailable: model {MODEL}: revision v9 not found on the Hub ({hub.url})" in line, line
    assert "it serves meta-llama/Llama-3.1-8B-Instruct, not acme/Tagged" in skipped(lines, 14), lines
