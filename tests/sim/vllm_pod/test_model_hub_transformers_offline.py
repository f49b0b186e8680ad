"""TRANSFORMERS_OFFLINE=1 in a rehearsal pod is offline, as huggingface_hub reads it (``HF_HUB_OFFLINE = HF_HUB_OFFLINE
or TRANSFORMERS_OFFLINE``, constants.py in every release's huggingface_hub) and so vLLM: with nothing in its own
cache the pod dies as one with HF_HUB_OFFLINE=1 does; HF_HUB_OFFLINE=0 set beside it wins, as the ``or`` reads it.
Before, the pod downloaded the model it must not and served (tests/fixtures/hf_hub_server through HF_ENDPOINT; the
served cluster and the kubernetes client).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Transformers-Offline"
OFFLINE = "outgoing traffic has been disabled"  # 0.19.0 offline with nothing cached (``hub_refusal``)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        mp.delenv("TRANSFORMERS_OFFLINE", raising=False)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


def start(api: Any, name: str, env: dict[str, str]) -> tuple[str, int | None]:
    return run(api, name, "vllm/vllm-openai:v0.19.0", ["vllm", "serve"], [MODEL, "--max-model-len", "4096"], env=env)


def test_a_pod_with_transformers_offline_and_an_empty_cache_dies_offline(api, hub) -> None:
    log, code = start(api, "toff", {"TRANSFORMERS_OFFLINE": "1"})
    assert code == 1 and OFFLINE in log and "OSError: We couldn't connect to " in log, log[-2000:]
    assert not [r for r in hub.requests if "/resolve/" in r[1]], hub.requests


def test_hf_hub_offline_0_beside_it_wins(api, hub) -> None:
    log, code = start(api, "toff-not", {"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"})
    assert code is None and "GPU KV cache size" in log, log[-2000:]
