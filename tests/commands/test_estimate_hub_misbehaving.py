"""`estimate --model` against a Hub that misbehaves or moves (tests/fixtures/hf_hub_server through HF_ENDPOINT):
each failure is one line naming the model and the endpoint within VLLM_REMEDY_HUB_TIMEOUT, never a traceback or a
wait of minutes; a branch is revalidated as vLLM does (main moved: the new config), a commit is read from the cache
without a request, and a cached branch whose Hub does not answer is read with a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

MODEL = "acme-corp/SmolLM2-Mirror"
ARGS = ("--gpu", "NVIDIA-L4", "--max-model-len", "8192", "--vllm-version", "0.19.0")
LIMIT = 1  # VLLM_REMEDY_HUB_TIMEOUT for these runs: a stall costs the suite this, not the default 20 s
RESOLVE = ("HEAD", f"/{MODEL}/resolve/main/config.json")
DOWNLOAD = ("GET", f"/{MODEL}/resolve/main/config.json")


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        yield server


def estimate(hub: HubServer, home: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`vllm-remedy estimate ARGS` online against ``hub`` with ``home`` as HF_HOME; (the run, its seconds)."""
    environ = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_OFFLINE": "0",
               "VLLM_REMEDY_HUB_TIMEOUT": str(LIMIT), **env}
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "vllm_remedy", "estimate", *args], capture_output=True, text=True,
                         cwd=ROOT, env=environ, timeout=30)
    return run, time.monotonic() - start


def config_requests(hub: HubServer) -> list[tuple[str, str]]:
    return [r for r in hub.requests if "/resolve/" in r[1] and not r[1].endswith("/hf_quant_config.json")]


@pytest.mark.parametrize(("how", "said"), [
    ("redirect-loop", "sent too many redirects (Exceeded 20 redirects while resolving "),
    ("huge", "announced a config.json of 100,000,000,000 bytes (refused: larger than 4 MiB) and the local Hugging "
             "Face cache has no config.json"),
    ("bad-commit", "answered with an X-Repo-Commit that is not a commit id ('../../../escape')"),
    ("endless", "sent a config.json larger than 4 MiB (refused) and the local Hugging Face cache has no config.json"),
    ("error-500", "answered HTTP 500 Internal Server Error and the local Hugging Face cache has no config.json"),
    ("rate-limit", "answered HTTP 429 Too Many Requests (Retry-After 3600 s) and the local Hugging Face cache has "
                   "no config.json"),
    ("stall", f"did not answer within {LIMIT} s (VLLM_REMEDY_HUB_TIMEOUT) and the local Hugging Face cache has no "
              "config.json"),
])
def test_a_misbehaving_hub_is_one_line_within_the_limit(hub, tmp_path, how, said):
    """Before: a redirect loop or a 10^11-byte Content-Length was a traceback (exit 1); 500 every time was "did not
    answer" after 23 s; 429 with Retry-After: 3600 and a stall hung for minutes; a body without a Content-Length that
    never ends was read (into the cache) until the limit."""
    hub.repos[MODEL].misbehave = how
    got, seconds = estimate(hub, tmp_path, "--model", MODEL, *ARGS)
    assert (got.returncode, got.stdout) == (2, ""), got.stderr
    assert got.stderr.startswith(f"vllm-remedy: error: model {MODEL}: the Hub ({hub.url}) {said}"), got.stderr
    assert got.stderr.count("\n") == 1 and got.stderr.endswith("; pass --model-config with its config.json\n")
    assert seconds < LIMIT + 3, seconds  # the limit, plus starting Python
    assert not list(tmp_path.glob("hub/models--*/*/*")), list(tmp_path.rglob("*"))  # nothing written in the cache


def test_main_moving_is_seen_on_the_next_run_and_a_commit_is_read_from_the_cache(hub, tmp_path):
    """vLLM revalidates a branch against the Hub (hf_hub_download's etag HEAD): after main moves to a config with a
    4k context, 8192 is refused. Before, the cached config answered forever without a request ("fits")."""
    first, _ = estimate(hub, tmp_path, "--model", MODEL, *ARGS, "-o", "json")
    assert first.returncode == 0 and json.loads(first.stdout)["outcome"] == "fits", first.stderr
    assert config_requests(hub) == [DOWNLOAD]  # before: our HEAD (commit, size), then hf_hub_download's HEAD and GET
    again, _ = estimate(hub, tmp_path, "--model", MODEL, *ARGS, "-o", "json")
    assert json.loads(again.stdout)["model_source"].endswith(f"revalidated with the Hub ({hub.url})"), again.stdout
    assert config_requests(hub)[1:] == [RESOLVE]  # one HEAD, no download
    old = hub.repos[MODEL].commit
    hub.repos[MODEL].move({"config.json": {**SMOLLM2_CONFIG, "max_position_embeddings": 4096}})
    moved, _ = estimate(hub, tmp_path, "--model", MODEL, *ARGS, "-o", "json")
    assert (moved.returncode, json.loads(moved.stdout)["outcome"]) == (0, "max_len_exceeds_model"), moved.stdout
    assert config_requests(hub)[2:] == [RESOLVE, DOWNLOAD]  # before: our HEAD, then hf_hub_download's HEAD and GET
    offline, _ = estimate(hub, tmp_path, "--model", MODEL, *ARGS, "-o", "json", HF_HUB_OFFLINE="1")
    assert json.loads(offline.stdout)["outcome"] == "max_len_exceeds_model"  # the cache's main is the new commit
    pinned, _ = estimate(hub, tmp_path, "--model", MODEL, "--revision", old, *ARGS, "-o", "json")
    assert json.loads(pinned.stdout)["outcome"] == "fits", pinned.stderr  # the old commit, as cached
    assert len(config_requests(hub)) == 4  # a commit never changes: no request


@pytest.mark.parametrize(("how", "said"), [("error-500", "answered HTTP 500 Internal Server Error"),
                                           ("stall", f"did not answer within {LIMIT} s (VLLM_REMEDY_HUB_TIMEOUT)")])
def test_a_cached_branch_is_read_with_a_warning_when_the_hub_does_not_answer(hub, tmp_path, how, said):
    """As hf_hub_download falls back to its cache, but saying so: the config may be older than the Hub's."""
    first, _ = estimate(hub, tmp_path, "--model", MODEL, *ARGS, "-o", "json")
    assert first.returncode == 0, first.stderr
    hub.repos[MODEL].misbehave = how
    got, seconds = estimate(hub, tmp_path, "--model", MODEL, *ARGS, "-o", "json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["kv_cache_tokens"] == json.loads(first.stdout)["kv_cache_tokens"]
    source = json.loads(got.stdout)["model_source"]
    assert source.startswith(f"the local Hugging Face cache ({tmp_path}/hub/models--acme-corp--SmolLM2-Mirror/"
                             "snapshots/"), source
    assert source.endswith(f"config.json), not revalidated: the Hub ({hub.url}) {said}"), source
    assert got.stderr == f"vllm-remedy: warning: model {MODEL}: config.json from {source}\n"
    assert seconds < LIMIT + 3, seconds


def test_a_number_no_size_can_be_is_named_by_its_key(tmp_path):
    """``"vocab_size": 1e308`` overflowed the parameter count: the line said "int too large to convert to float"."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMOLLM2_CONFIG, "vocab_size": 1e308}))
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "estimate", "--model-config", str(path), *ARGS],
                         capture_output=True, text=True, cwd=ROOT, timeout=20)
    assert (got.returncode, got.stderr) == (2, f"vllm-remedy: error: {path}: not a usable model config "
                                               "(vocab_size = 1e+308: beyond any model's size)\n")


@pytest.mark.parametrize("value", ["abc", "0", "-5", "inf", "nan"])
def test_a_time_limit_that_is_not_a_positive_number_is_named(hub, tmp_path, value):
    """A typo in VLLM_REMEDY_HUB_TIMEOUT used to become the 20 s default without a word (and 0 the same)."""
    got, _ = estimate(hub, tmp_path, "--model", MODEL, *ARGS, VLLM_REMEDY_HUB_TIMEOUT=value)
    assert (got.returncode, got.stdout) == (2, ""), got.stderr
    assert f"VLLM_REMEDY_HUB_TIMEOUT: '{value}' is not a positive number of seconds" in got.stderr, got.stderr
    assert got.stderr.count("\n") == 1 and not config_requests(hub), got.stderr
