"""The model named in vLLM's ``--config`` YAML, through the real CLI against a Hub-compatible server on 127.0.0.1.

``vllm serve --config FILE`` with no model in argv serves the file's ``model:`` from 0.8.3 (``model_in_config``,
utils.py@0.8.3 l.1343-1359, utils/argparse_utils.py@0.34.0 l.569-596), at the file's ``revision:``. Before, ``check``
read the file's revision and length but said "the vLLM command names no model" (a pod of the same file runs), and the
connector behind ``drift`` and the deploys asked the Hub for a repository named "None".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

MODEL = "acme/Tagged"
SHORT = {**SMOLLM2_CONFIG, "max_position_embeddings": 4096}  # the tag v1: a 4k context


@pytest.fixture
def hub(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG}, revisions={"v1": {"config.json": SHORT}})}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield server


def manifests(image: str, config: str, args: list[str] | None = None) -> str:
    """A ConfigMap holding ``config`` mounted at /etc/vllm, and a Deployment running ``vllm serve --config``."""
    container = {"name": "vllm", "image": image, "command": ["vllm", "serve"],
                 "args": [*(args or []), "--config", "/etc/vllm/config.yaml", "--gpu-memory-utilization", "0.9"],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}},
                 "volumeMounts": [{"name": "c", "mountPath": "/etc/vllm"}]}
    spec = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container],
            "volumes": [{"name": "c", "configMap": {"name": "vcfg"}}]}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "tag", "namespace": "llm"},
           "spec": {"selector": {"matchLabels": {"app": "tag"}},
                    "template": {"metadata": {"labels": {"app": "tag"}}, "spec": spec}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vcfg", "namespace": "llm"},
          "data": {"config.yaml": config}}
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [cm, dep]})


def check(text: str) -> tuple[int, dict[str, Any]]:
    got = run_cli("check", "-f", "-", "-o", "json", stdin=text)
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return got.returncode, json.loads(got.stdout)["items"][0]


def test_the_model_in_the_config_file_is_resolved_at_its_revision_and_predicted(hub: HubServer) -> None:
    code, item = check(manifests("vllm/vllm-openai:v0.34.0", f"model: {MODEL}\nrevision: v1\nmax-model-len: 8192\n"))
    reasons = [f["reason"] for f in item["findings"]]
    assert not any("names no model" in r for r in reasons), reasons
    # the tag's own 4,096-token maximum: the file's model at the file's revision was the one sized
    assert code == 1 and item["prediction"]["outcome"] == "max_len_exceeds_model", item
    assert ("GET", f"/{MODEL}/resolve/v1/config.json") in hub.requests, hub.requests
    assert not any("/None/" in path for _, path in hub.requests), hub.requests


def test_a_model_in_argv_wins_over_the_files(hub: HubServer) -> None:
    code, item = check(manifests("vllm/vllm-openai:v0.34.0", "model: acme/Elsewhere\nmax-model-len: 4096\n",
                                 [MODEL]))
    assert code == 0, item
    assert item["prediction"]["outcome"] == "fits", item
    assert not any("Elsewhere" in path for _, path in hub.requests), hub.requests


def test_before_0_8_3_vllm_serve_does_not_take_the_model_from_the_file(hub: HubServer) -> None:
    """0.8.0 raises "No model_tag specified!" for ``vllm serve --config FILE`` (the model tag is required)."""
    code, item = check(manifests("vllm/vllm-openai:v0.8.0", f"model: {MODEL}\nmax-model-len: 4096\n"))
    assert code == 1, item
    assert item["prediction"]["outcome"] != "fits", item
    assert not any(MODEL in path for _, path in hub.requests), hub.requests
