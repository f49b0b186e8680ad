"""`estimate --model` for a model outside the catalog: the local Hugging Face cache, then the Hub (a local
Hub-compatible server through HF_ENDPOINT, never the real Hub), one line for each way it cannot be had."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID, HubServer, Repo, hub_server

GATED = "acme-corp/Gated-Llama-13B"
ARGS = ("--gpu", "NVIDIA-L4", "--max-model-len", "8192", "--vllm-version", "0.19.0")


@pytest.fixture
def hub() -> Iterator[HubServer]:
    short = {**SMOLLM2_CONFIG, "max_position_embeddings": 2048}  # an earlier revision, 2k context
    with hub_server({SMOLLM2_ID: Repo({"config.json": SMOLLM2_CONFIG}, revisions={"v0-2k": {"config.json": short}}),
                     GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        yield server


def estimate(hub: HubServer, home: Path, *args: str, **env: str):
    """`vllm-remedy estimate` online against ``hub``, with its own Hugging Face home."""
    return run_with(home, *args, **{"HF_ENDPOINT": hub.url, **env})


def config_requests(hub: HubServer) -> list[tuple[str, str]]:
    """The requests for files (huggingface_hub may also ask the Hub for its own registries)."""
    return [r for r in hub.requests if "/resolve/" in r[1] and not r[1].endswith("/hf_quant_config.json")]


def test_an_uncatalogued_model_is_estimated_from_the_hub_and_then_from_the_cache(hub, tmp_path):
    first = estimate(hub, tmp_path, "--model", SMOLLM2_ID, *ARGS, "-o", "json")
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert (data["model"], data["outcome"], data["max_model_len"]) == (SMOLLM2_ID, "fits", 8192)
    # 24 layers x 32 KV heads x 64 dims x K and V x 2 bytes = 192 KiB per token; 1.7 B bf16 weights
    assert 3.0 < data["weights_gib"] < 3.5 and data["kv_cache_tokens"] > 8192
    # one GET (before: our HEAD for the commit main names now and the size, then hf_hub_download's HEAD and GET)
    assert config_requests(hub) == [("GET", f"/{SMOLLM2_ID}/resolve/main/config.json")]
    again = estimate(hub, tmp_path, "--model", SMOLLM2_ID, *ARGS, "-o", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["kv_cache_tokens"] == data["kv_cache_tokens"]
    # the second run revalidated main with one HEAD (as vLLM does) and read the cache: no download
    assert config_requests(hub)[1:] == [("HEAD", f"/{SMOLLM2_ID}/resolve/main/config.json")], hub.requests
    offline = estimate(hub, tmp_path, "--model", SMOLLM2_ID, *ARGS, "-o", "json", HF_HUB_OFFLINE="1")
    assert offline.returncode == 0 and json.loads(offline.stdout)["kv_cache_tokens"] == data["kv_cache_tokens"]


def test_gated_without_a_token_is_one_line_and_a_token_opens_it(hub, tmp_path):
    got = estimate(hub, tmp_path, "--model", GATED, *ARGS)
    assert got.returncode == 2
    assert got.stderr == (f"vllm-remedy: error: model {GATED}: gated repository on the Hub ({hub.url}); set HF_TOKEN "
                          "to a token with access to it; pass --model-config with its config.json\n")
    opened = estimate(hub, tmp_path, "--model", GATED, *ARGS, "-o", "json", HF_TOKEN="hf_test_token")
    assert opened.returncode == 0, opened.stderr
    assert json.loads(opened.stdout)["model"] == GATED


def test_not_found_and_offline_are_one_line_each(hub, tmp_path):
    missing = estimate(hub, tmp_path, "--model", "acme-corp/NoSuch-7B", *ARGS)
    assert missing.returncode == 2
    assert missing.stderr == (f"vllm-remedy: error: model acme-corp/NoSuch-7B: not found on the Hub ({hub.url}) nor "
                              "in the local Hugging Face cache; pass --model-config with its config.json\n")
    offline = estimate(hub, tmp_path, "--model", SMOLLM2_ID, *ARGS, HF_HUB_OFFLINE="1")
    assert offline.returncode == 2
    assert offline.stderr == (f"vllm-remedy: error: model {SMOLLM2_ID}: not in the catalog nor the local Hugging "
                              "Face cache, and HF_HUB_OFFLINE is set; pass --model-config with its config.json\n")
    assert config_requests(hub) == [("GET", "/acme-corp/NoSuch-7B/resolve/main/config.json")]


def test_an_unreachable_hub_is_one_line_at_once(tmp_path):
    """No Hub at HF_ENDPOINT (nothing listens): one line, without huggingface_hub's half-minute of retries."""
    with hub_server({}) as gone:
        url = gone.url
    got = run_with(tmp_path, "--model", SMOLLM2_ID, *ARGS, HF_ENDPOINT=url)
    assert got.returncode == 2
    assert got.stderr == (f"vllm-remedy: error: model {SMOLLM2_ID}: the Hub ({url}) is unreachable (Connection "
                          "refused) and the local Hugging Face cache has no config.json; pass --model-config with "
                          "its config.json\n")


def run_with(home: Path, *args: str, **env: str):
    """`vllm-remedy estimate ARGS` online (HF_HUB_OFFLINE=0) with ``home`` as HF_HOME and ``env`` on top."""
    saved = dict(os.environ)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", **env})
    try:
        return run_cli("estimate", *args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_revision_pins_the_config_it_reads(hub, tmp_path):
    """vLLM's --revision picks the config.json of that revision (here an earlier one with a 2k context)."""
    main = estimate(hub, tmp_path, "--model", SMOLLM2_ID, "--gpu", "NVIDIA-L4", "-o", "json")
    pinned = estimate(hub, tmp_path, "--model", SMOLLM2_ID, "--revision", "v0-2k", "--gpu", "NVIDIA-L4", "-o", "json")
    assert main.returncode == pinned.returncode == 0, main.stderr + pinned.stderr
    assert (json.loads(main.stdout)["max_model_len"], json.loads(pinned.stdout)["max_model_len"]) == (8192, 2048)
    assert json.loads(pinned.stdout)["model_source"] == f"the Hub ({hub.url})"
    assert ("GET", f"/{SMOLLM2_ID}/resolve/v0-2k/config.json") in config_requests(hub)
