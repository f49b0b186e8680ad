"""transformers' "is not a local folder" refusal names the login command of the transformers the release runs:
`hf auth login` from vLLM 0.11.0 (transformers 4.57.1 and 5.0.0, utils/hub.py@4.57.1 l.514, @5.0.0 l.452), where
0.11.0 to 0.22 said `huggingface-cli login`, words no transformers taken for them prints. End to end: the served
cluster, the kubernetes client, a pod asking tests/fixtures/hf_hub_server for a repository it does not hold."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Login-Words"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


@pytest.mark.parametrize("release", ["0.11.0", "0.19.0", "0.25.0"])
def test_the_missing_repository_refusal_names_hf_auth_login(api, hub, release: str, tmp_path: Path) -> None:
    log, code = run(api, f"login-{release.replace('.', '-')}", f"vllm/vllm-openai:v{release}", None,
                    ["--model", f"{MODEL}-Missing", "--max-model-len", "4096"])
    assert code == 1 and "is not a local folder and is not a valid model identifier" in log, log[-2000:]
    assert "logging in with `hf auth login` or by passing `token=<your_token>`" in log, log[-2000:]
    assert "huggingface-cli" not in log, log[-2000:]
