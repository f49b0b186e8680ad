"""A rehearsal pod offline by its own HF_HUB_OFFLINE reads its own Hugging Face cache and nothing else, as
huggingface_hub's ``local_files_only`` does: a config.json another pod downloaded is not in a cache on the container's
filesystem or an emptyDir, and may be in one on a claim pods share (tests/fixtures/hf_hub_server through HF_ENDPOINT;
the served cluster and the kubernetes client; ``sim.vllm_pod.hf_cache``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Offline-Own-Cache"
#: 0.19.0 offline with nothing in its cache: hf_hub_download's error, then transformers' (``hub_refusal``)
OFFLINE = "outgoing traffic has been disabled"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


def start(api: Any, name: str, offline: bool, volume: dict[str, Any] | None = None) -> tuple[str, int | None]:
    """A pod of the model, HF_HUB_OFFLINE=1 when ``offline``, its HF_HOME on ``volume`` (None: the container's own
    filesystem, the image's default cache)."""
    env = {**({"HF_HUB_OFFLINE": "1"} if offline else {}), **({"HF_HOME": "/data/hf"} if volume is not None else {})}
    return run(api, name, "vllm/vllm-openai:v0.19.0", ["vllm", "serve"], [MODEL, "--max-model-len", "4096"], env=env,
               mounts=[{"name": "cache", "mountPath": "/data"}] if volume is not None else None,
               volumes=[{"name": "cache", **volume}] if volume is not None else None)


@pytest.fixture(scope="module")
def fetched(api: Any) -> None:
    """A pod online has downloaded the model into the cluster's cache (its own, in the world rehearsed)."""
    log, code = start(api, "online", offline=False)
    assert code is None and "GPU KV cache size" in log, log[-2000:]


@pytest.mark.parametrize("name, volume", [("own-fs", None), ("own-emptydir", {"emptyDir": {}})])
def test_an_offline_pod_does_not_read_another_pods_download(api, fetched, name: str,
                                                           volume: dict[str, Any] | None) -> None:
    """Before: it served, on the config.json the online pod had downloaded into its own cache."""
    log, code = start(api, name, offline=True, volume=volume)
    assert code == 1 and OFFLINE in log and "OSError: We couldn't connect to " in log, log[-2000:]


def test_an_offline_pod_on_a_shared_claim_reads_what_another_pod_put_there(api, fetched) -> None:
    log, code = start(api, "shared-pvc", offline=True, volume={"persistentVolumeClaim": {"claimName": "hf-cache"}})
    assert code is None and "GPU KV cache size" in log, log[-2000:]
