"""hub.resolve in-process: the order of sources, and each (model, revision) asked of the Hub once per process —
failures too — as a fleet run needs (every host serving a model resolves it at connect)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID, HubServer, Repo, hub_server
from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import resolved

GATED = "acme-corp/Gated-13B"


@pytest.fixture
def online(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({SMOLLM2_ID: Repo({"config.json": SMOLLM2_CONFIG}),
                     GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        yield server


def files(server: HubServer) -> list[tuple[str, str]]:
    return [r for r in server.requests if "/resolve/" in r[1]]


def test_a_catalog_model_never_asks_the_hub(online):
    spec, source = hub.resolve("meta-llama/Llama-3.1-8B-Instruct")
    assert (source, spec.num_layers, files(online)) == ("catalog", 32, [])


def test_each_model_is_asked_once_per_process_failures_included(online):
    for _ in range(3):  # three hosts serving the same model
        spec, source = hub.resolve(SMOLLM2_ID)
        with pytest.raises(UserError, match="gated repository"):
            hub.resolve(GATED)
    assert (spec.num_layers, spec.num_kv_heads, source) == (24, 32, f"the Hub ({online.url})")
    assert files(online) == [("HEAD", f"/{SMOLLM2_ID}/resolve/main/config.json"),  # ours: commit and size
                             ("HEAD", f"/{SMOLLM2_ID}/resolve/main/config.json"),  # hf_hub_download's
                             ("GET", f"/{SMOLLM2_ID}/resolve/main/config.json"),
                             ("HEAD", f"/{GATED}/resolve/main/config.json")]
    assert resolved.model(SMOLLM2_ID) == spec  # what predictions look up
    with pytest.raises(UserError, match=f"^model {GATED}: gated repository"):
        resolved.model(GATED)


def test_the_policys_copy_is_the_last_resort(online, tmp_path):
    copy = tmp_path / "config.json"
    copy.write_text(json.dumps(SMOLLM2_CONFIG))
    spec, source = hub.resolve("acme-corp/Private-1.7B", None, ("policy p.yaml model_config.path", lambda: json.loads(
        copy.read_text())))
    assert (spec.hidden_size, source) == (2048, "policy p.yaml model_config.path")
    assert files(online) == [("HEAD", "/acme-corp/Private-1.7B/resolve/main/config.json")]  # the Hub was asked first


def test_a_broken_policy_copy_says_both_reasons(online):
    def broken() -> dict:
        raise UserError("policy p.yaml model_config.path c.json: cannot read (No such file or directory)")
    with pytest.raises(UserError) as got:
        hub.resolve("acme-corp/Nowhere-1B", None, ("policy p.yaml model_config.path", broken))
    assert str(got.value) == (f"model acme-corp/Nowhere-1B: not found on the Hub ({online.url}) nor in the local "
                              "Hugging Face cache; policy p.yaml model_config.path c.json: cannot read (No such file "
                              "or directory)")


def test_the_environment_at_the_call_rules_not_the_one_at_import(online, monkeypatch):
    """huggingface_hub froze HF_HUB_OFFLINE=1 when something imported it under the test session's offline default;
    the environment now says online (as the rehearsal cluster's process sees it after a test sets its Hub)."""
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    spec, source = hub.resolve(SMOLLM2_ID)
    assert (spec.num_layers, source) == (24, f"the Hub ({online.url})")
