"""The Hub's "no" to a manifest's pod beats this machine's cached copy: `check` (and `plan -f`, drift and the deploys,
which resolve a pod's model the same way) predicts model_unavailable whatever this machine's Hugging Face cache holds.

The pod's cache is its own, not this machine's: a tokenless pod whose repository became gated, or was deleted, dies
at start. Before, a cache filled by an earlier run (a CI runner's ~/.cache) turned the same manifest into "fits" with
a stderr warning, while a fresh cache failed it: the merge gate's verdict hung on the runner's cache. A Hub that errs
(5xx) still lets the cached copy serve, with a warning; `estimate` (this machine's what-if) keeps it for a "no" too.
Real CLI against the Hub-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_COMMIT, SMOLLM2_CONFIG, HubServer, Repo, hub_server

MODEL = "acme-corp/Was-Open"
SERVE = ["--max-model-len", "8192", "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64"]


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        yield server


def manifest(tmp_path: Path, revision: list[str] | None = None) -> Path:
    container: dict[str, Any] = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"],
                                 "args": [MODEL, *(revision or []), *SERVE],
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "llm"},
           "spec": {"selector": {"matchLabels": {"app": "m"}}, "template": {
               "metadata": {"labels": {"app": "m"}},
               "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container]}}}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    return path


def cli(hub: HubServer, home: Path, *args: str) -> tuple[int, str]:
    saved = dict(os.environ)
    for name in ("HF_TOKEN", "HF_HUB_CACHE", "TRANSFORMERS_OFFLINE"):
        os.environ.pop(name, None)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url,
                       "VLLM_REMEDY_HUB_TIMEOUT": "2"})  # a Hub that errs is retried within this limit
    try:
        got = run_cli(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout + got.stderr


@pytest.mark.parametrize("refusal", ["gated", "deleted", "deleted, at a pinned commit"])
def test_the_hubs_no_to_the_pod_is_model_unavailable_with_or_without_a_cached_copy(hub, tmp_path, refusal):
    warm, fresh = tmp_path / "warm", tmp_path / "fresh"
    pinned = ["--revision", SMOLLM2_COMMIT] if "commit" in refusal else None
    code, out = cli(hub, warm, "check", "-f", str(manifest(tmp_path, pinned)))
    assert code == 0 and "fits" in out, out  # the config is now in this machine's cache
    if refusal == "gated":
        hub.repos[MODEL].gated = True
    else:
        del hub.repos[MODEL]
    verdicts = {}
    for home in (warm, fresh):
        for command in ("check", "plan"):
            code, out = cli(hub, home, command, "-f", str(manifest(tmp_path, pinned)))
            verdicts[home.name, command] = code
            assert code != 0, (home.name, command, out)
            assert "fits" not in out, (home.name, command, out)
            if command == "check":
                assert "predicted model_unavailable" in out, (home.name, out)
    assert verdicts["warm", "check"] == verdicts["fresh", "check"] == 1, verdicts
    assert verdicts["warm", "plan"] == verdicts["fresh", "plan"], verdicts


def test_a_hub_that_errs_still_lets_the_cached_copy_serve_with_a_warning(hub, tmp_path):
    warm = tmp_path / "warm"
    assert cli(hub, warm, "check", "-f", str(manifest(tmp_path)))[0] == 0
    hub.repos[MODEL].misbehave = "error-500"
    code, out = cli(hub, warm, "check", "-f", str(manifest(tmp_path)))
    assert code == 0 and "fits" in out, out
    assert "warning: model acme-corp/Was-Open: config.json from the local Hugging Face cache" in out, out
    assert "answered HTTP 500" in out, out


def test_estimate_keeps_this_machines_cached_copy_for_a_gated_repository_with_a_warning(hub, tmp_path):
    """`estimate` sizes a start on this machine, whose vLLM would read its own cache (huggingface_hub falls back to
    it on the Hub's 401): the copy serves, and the warning names the refusal."""
    warm = tmp_path / "warm"
    args = ["estimate", "--model", MODEL, "--gpu", "NVIDIA-L40S", *SERVE]
    assert cli(hub, warm, *args)[0] == 0
    hub.repos[MODEL].gated = True
    code, out = cli(hub, warm, *args)
    assert code == 0, out
    assert "not revalidated: the Hub" in out and "refused it (gated repository)" in out, out
