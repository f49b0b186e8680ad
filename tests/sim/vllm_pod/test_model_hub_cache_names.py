"""A rehearsal pod's Hugging Face cache is where its release's libraries look for it, under every name they read:
huggingface_hub's older HUGGINGFACE_HUB_CACHE (its constants.py: HF_HUB_CACHE falls back to it), and transformers 4's
TRANSFORMERS_CACHE, which it reads before either (utils/hub.py@4.57.1; releases before 0.23.0 here) and transformers 5
no longer reads (utils/hub.py@5.0.0). A read-only mount there refuses vLLM's download of an uncached config.json with
the mount's EROFS (``sim.vllm_pod.hf_cache``); a variable the release does not read leaves the cache where it was.

End to end: the served rehearsal cluster and the kubernetes client, tests/fixtures/hf_hub_server through HF_ENDPOINT
(never the real Hub), the log read back by the CLI's diagnose.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Cache-Names"
FOLDER = f"models--{MODEL.replace('/', '--')}"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=5, drop_token=True)
        yield server


@pytest.fixture
def api(hub: HubServer, tmp_path: Path) -> Iterator[Any]:
    yield from served(tmp_path / "kube")


def start(api: Any, name: str, version: str, variable: str) -> tuple[str, int | None]:
    return run(api, name, f"vllm/vllm-openai:v{version}", ["vllm", "serve"], [MODEL, "--max-model-len", "4096"],
               env={variable: "/cache/hub"}, mounts=[{"name": "cache", "mountPath": "/cache", "readOnly": True}],
               volumes=[{"name": "cache", "emptyDir": {}}])


@pytest.mark.parametrize("version, variable", [("0.34.0", "HUGGINGFACE_HUB_CACHE"), ("0.19.0", "HUGGINGFACE_HUB_CACHE"),
                                               ("0.19.0", "TRANSFORMERS_CACHE"), ("0.8.5", "TRANSFORMERS_CACHE")])
def test_a_read_only_cache_named_by_an_older_variable_refuses_the_download(api, cli, tmp_path: Path, version: str,
                                                                          variable: str) -> None:
    """Before: the pod served, its cache taken to be root's home (only HF_HUB_CACHE / HF_HOME / XDG_CACHE_HOME read)."""
    log, code = start(api, f"{variable.lower().replace('_', '-')}-{version.replace('.', '-')}", version, variable)
    assert code == 1, log[-2000:]
    assert f"OSError: [Errno 30] Read-only file system: '/cache/hub/{FOLDER}'" in log, log[-2000:]
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    detail = json.loads(got.stdout)["failure_detail"]
    assert (detail["reason"], detail["model"]) == ("cache_read_only", MODEL), detail


def test_transformers_5_releases_do_not_read_transformers_cache(api, tmp_path: Path) -> None:
    """transformers 5 dropped TRANSFORMERS_CACHE: the cache stays in root's home, writable, and the pod serves."""
    log, code = start(api, "transformers-cache-0-34-0", "0.34.0", "TRANSFORMERS_CACHE")
    assert code is None, log[-2000:]
