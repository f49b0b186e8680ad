"""The process-wide model registries (``hub``'s memo, ``vllm.resolved``) across environments and across tests.

A process keeps what it resolved for its life; predictions only look it up. Two ways that went wrong: ``resolved``
(keyed without the environment) kept another environment's answer while ``hub`` answered for the current one, and
a test's in-process rehearsal cluster left its resolution for the next test in the same pytest worker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID, Repo, hub_server
from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.sim.vllm_pod import launch
from vllm_remedy.vllm import resolved

ROOT = Path(__file__).resolve().parents[1]
GPT_OSS = "openai/gpt-oss-20b"  # outside the catalog; offline with an empty cache it resolves nowhere
OFFLINE = f"model {SMOLLM2_ID}: not in the catalog nor the local Hugging Face cache, and HF_HUB_OFFLINE is set"
#: Passes alone; failed after tests/commands/test_drift.py in one process (the offline reason, not the catalog's).
PURE = "tests/drift/test_checks.py::test_a_model_outside_the_catalog_is_an_explicit_unknown_prediction"


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


def test_a_rehearsal_pod_records_what_it_resolved() -> None:
    """A rehearsal pod finds its model as vLLM would and records the answer where predictions look (the leak the
    next test must not see)."""
    with pytest.raises(UserError, match="HF_HUB_OFFLINE is set"):
        launch.model_spec(GPT_OSS, None)
    assert isinstance(resolved.known(GPT_OSS), str)


def test_the_next_test_in_the_same_process_starts_from_nothing_resolved() -> None:
    """The pod above, then the pure prediction test, in one pytest process and in that order (as an xdist worker
    may run them): the prediction is still "not in the catalog"."""
    leak = f"{Path(__file__).relative_to(ROOT)}::test_a_rehearsal_pod_records_what_it_resolved"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # no outer worker's settings
    got = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", leak, PURE],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stdout[-3000:]
    assert "2 passed" in got.stdout, got.stdout[-3000:]
