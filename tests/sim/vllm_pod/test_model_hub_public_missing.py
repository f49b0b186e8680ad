"""A rehearsal pod whose --model is misspelled, against a Hub that answers as the public Hub does (an unknown
repository asked without a token: 401 RepoNotFound "Invalid username or password.", tests/fixtures/hf_hub_server
``public=True``), ends in huggingface_hub's RepositoryNotFoundError with the Hub's line after it, as public vLLM logs
show (vast-ai/base-image#128), and ``diagnose`` reads it back as a wrong --model (a private repository named second),
not a refused token.

End to end: the rehearsal cluster served over HTTP, driven with the official ``kubernetes`` client, the pods asking
the fixture through HF_ENDPOINT (never the real Hub), the log read back with the real CLI's ``diagnose``. One release
per way vLLM asks (``sim.vllm_pod.hub_refusal``): 0.8.5 (vLLM's own listing, wrapped in "Invalid repository ID"),
0.19.0 and 0.25.0 (transformers first, huggingface_hub over requests, then httpx).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import hf_hub_server
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server
from fixtures.served_pods import ended, served

MODEL, TYPO = "acme-corp/SmolLM2-Public", "acme-corp/SmolLM2-Pubilc"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})},
                                                        public=True) as server:
        hf_hub_server.use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


@pytest.mark.parametrize("version", ["0.8.5", "0.19.0", "0.25.0"])
def test_a_misspelled_model_on_the_public_hub_is_read_back_as_a_wrong_model(api, hub, cli, tmp_path: Path,
                                                                           version: str) -> None:
    """Before: the Hub's 401 was taken for a refused token and ``diagnose`` said "give the pod a valid HF_TOKEN"."""
    name = f"typo-{version.replace('.', '-')}"
    container = {"name": "vllm", "image": f"vllm/vllm-openai:v{version}",
                 "args": ["--model", TYPO, "--max-model-len", "4096"],
                 "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": {"containers": [container]}})
    log, code = ended(api, name, "vllm")
    assert code == 1, log[-2000:]
    assert "RepositoryNotFoundError: 401 Client Error." in log, log[-3000:]
    assert any(line.endswith(" Invalid username or password.") or line == "Invalid username or password."
               for line in log.splitlines()), log[-3000:]
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["reason"], data["failure_detail"].get("model")) == (
        "model_unavailable", "repository_not_found", TYPO), data["failure_detail"]
    assert data["hint"].endswith("if the repository is private, give the pod HF_TOKEN (from a Secret) for an account "
                                 "with access to it"), data["hint"]
