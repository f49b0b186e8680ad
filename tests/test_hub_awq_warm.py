"""Resolving an AWQ checkpoint through ``hub`` (what ``check``, ``drift`` and the deploys do: ``hub.learn`` with the
pod's environment) replays its AWQ Marlin load there, so the estimate that follows replays nothing (the "under 5 ms
once resolved" promise; the replay is ~10 ms for a shape outside the packaged table on 0.26-0.29). Before, only
``estimate``/``plan``'s own loading warmed it. Checked by the replay's cache counters, not by a clock; the config
comes from the tests' Hub on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.awq_warm import cold_memo, estimate_replays_nothing, yarn_72b
from fixtures.hf_hub_server import Repo, hub_server, use_hub
from vllm_remedy import hub
from vllm_remedy.vllm import resolved
from vllm_remedy.vllm.memory import awq_marlin_load
from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED

AWQ = "acme-corp/Qwen2.5-72B-YaRN-AWQ"


@pytest.fixture
def awq_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with hub_server({AWQ: Repo({"config.json": yarn_72b()})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf")  # a cold memo too: HF_HOME holds the replay memo
        cold_memo(monkeypatch)
        yield


def test_a_pods_awq_model_learned_through_the_hub_is_replayed_then_not_in_the_estimate(awq_hub) -> None:
    assert hub.learn(AWQ, None, None, {"HF_TOKEN": None}) is None
    with resolved.scope(hub.answer_key({"HF_TOKEN": None})):
        spec = resolved.model(AWQ)
    assert tuple(awq_marlin_load.replay_inputs(spec, 2, 2)) not in REPLAYED
    warmed = estimate_replays_nothing(spec, {"tensor-parallel-size": "2", "max-model-len": "32768"}, "0.28.0")
    assert warmed >= 2  # TP 1 and 2 at least (the 72B's shapes divide at 1, 2, 4 and 8)
