"""A model id is matched against the catalog as vLLM receives it (hostile review 2026-12-06, finding 5): vLLM passes
the argv word as is to transformers / huggingface_hub, whose ``validate_repo_id`` refuses ``" meta-llama/..."``
(``REPO_ID_REGEX`` has no room for a space; huggingface_hub/utils/_validators.py), so a leading space is no catalog
model: check cannot size it, and a rehearsal pod does not start it."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Refusal, plan
from vllm_remedy.vllm.catalog import repo_model
from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize("written", [f" {LLAMA}", f"{LLAMA} ", f"{LLAMA}\n"])
def test_a_padded_id_is_no_catalog_model(written: str) -> None:
    assert repo_model(written) is None
    assert repo_model(LLAMA.upper()) is not None  # the Hub's ids are case-insensitive; only the spelling is padded


def test_the_rehearsal_pod_does_not_start_a_padded_id(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    c = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
         "args": [f" {LLAMA}", "--max-model-len", "8192"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(got, Refusal), got


def test_check_does_not_size_a_padded_id(cli, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    from pathlib import Path

    import yaml

    from fixtures.vllm_deployment import manifest

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L40S", image="vllm/vllm-openai:v0.11.0")).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["command"], container["args"] = ["vllm", "serve"], [f" {LLAMA}", "--max-model-len", "8192"]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    item = json.loads(cli("check", "-f", str(path), "-o", "json").stdout)["items"][0]
    assert item["prediction"]["outcome"] != "fits"
    assert "not a Hugging Face repository id" in item["prediction"]["note"]
