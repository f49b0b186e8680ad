"""The process-wide model registries (``hub``'s memo, ``vllm.resolved``) across environments and across tests.

A process keeps what it resolved for its life; predictions only look it up. Two ways that went wrong: ``resolved``
(keyed without the environment) kept another environment's answer while ``hub`` answered for the current one, and
a test's in-process rehearsal cluster left its resolution for the next test in the same pytest worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID, Repo, hub_server
from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import resolved

OFFLINE = f"model {SMOLLM2_ID}: not in the catalog nor the local Hugging Face cache, and HF_HUB_OFFLINE is set"


def test_predictions_follow_the_environment_of_the_latest_resolution(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline, then a Hub, then offline again: ``hub`` answers from its memo for the first environment, and
    predictions must read that answer too, not the Hub's spec from the environment before."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert hub.learn(SMOLLM2_ID) == OFFLINE
    with hub_server({SMOLLM2_ID: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        assert hub.learn(SMOLLM2_ID) is None
        assert resolved.model(SMOLLM2_ID).num_layers == 24
    monkeypatch.delenv("HF_ENDPOINT")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.learn(SMOLLM2_ID) == OFFLINE
    with pytest.raises(UserError, match=f"^{OFFLINE}$"):
        resolved.model(SMOLLM2_ID)
