"""The Hugging Face cache under hostile or read-only conditions, through the real CLI against a Hub-compatible server
on 127.0.0.1 (HF_ENDPOINT, never the real Hub):

- a ``--revision`` that is no git ref name (an absolute path, ``..``, a backslash, a control character) is refused in
  one line naming the flag and value, before any request, and nothing is written — from the command line and from a
  manifest (``check -f``), whose revision comes from text this machine does not control;
- a read-only cache still gets the Hub's answer: the file just fetched serves this run (one warning naming the path
  that refused), and a cached older commit that the Hub has just superseded is never read in its stead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server
from fixtures.read_only import read_only

MODEL = "acme-corp/Llama-Guard-Hub"
SHORT = {**SMOLLM2_CONFIG, "max_position_embeddings": 4096}  # main after it moves: a 4k context
ARGS = ("--gpu", "NVIDIA-L40S", "--vllm-version", "0.19.0", "-o", "json")


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        yield server


def answer_any(hub: HubServer, revision: str) -> None:
    """Make the server answer 200 for ``revision`` as it arrives in the URL (quoted), as a mirror or proxy that
    ignores the revision does: what turned the unchecked join into a write."""
    hub.repos[MODEL].revisions = {quote(revision, safe=""): {"config.json": SMOLLM2_CONFIG}}


def run(hub: HubServer, home: Path, *args: str) -> tuple[int, str, str]:
    saved = dict(os.environ)
    os.environ.pop("HF_HUB_CACHE", None)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url})
    try:
        got = run_cli(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout, got.stderr


@pytest.mark.parametrize("revision", ["{victim}", "../../../../{name}", "refs/../../{name}", "a\\..\\b", "C:/x",
                                      "main\n", "v1 ", ".hidden", "x.lock", "@"])
def test_a_revision_that_is_no_ref_name_is_refused_before_any_request(hub, tmp_path, revision):
    """Before: ``--revision /abs/path`` wrote the commit id into that file (``store.point`` joined it onto refs/)."""
    victim = tmp_path / "PWNED"
    revision = revision.format(victim=victim, name=victim.name)
    answer_any(hub, revision)
    code, out, err = run(hub, tmp_path / "hf", "estimate", "--model", MODEL, "--revision", revision, *ARGS)
    assert code == 2, out + err
    assert err.count("\n") == 1 and err.startswith(f"vllm-remedy: error: model {MODEL}: --revision {revision!r} "
                                                   "is no branch, tag or commit name ("), err
    assert hub.requests == [] and not victim.exists()
    assert not (tmp_path / "hf").exists() or not any((tmp_path / "hf").rglob("*")), list((tmp_path / "hf").rglob("*"))


def test_a_manifests_revision_that_is_a_path_writes_nothing(hub, tmp_path):
    """Before: ``check -f`` on a Deployment passing ``--revision /abs/path`` created that file."""
    victim = tmp_path / "PWNED"
    answer_any(hub, str(victim))
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"],
                 "args": [MODEL, "--revision", str(victim), "--max-model-len", "8192"],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "llm"},
        "spec": {"selector": {"matchLabels": {"app": "m"}}, "template": {"metadata": {"labels": {"app": "m"}}, "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container]}}}}))
    code, out, err = run(hub, tmp_path / "hf", "check", "-f", str(manifest))
    assert code == 1, out + err
    assert f"--revision {str(victim)!r} is no branch, tag or commit name (an absolute path" in out + err, out + err
    assert hub.requests == [] and not victim.exists()


def test_a_read_only_empty_cache_uses_the_hubs_answer_and_says_the_cache_is_not_writable(hub, tmp_path):
    """Before: rc 2, "the Hub could not be read (PermissionError ...)": the Hub had answered 200."""
    home = tmp_path / "hf"
    with read_only(home / "hub"):
        code, out, err = run(hub, home, "estimate", "--model", MODEL, "--max-model-len", "8192", *ARGS)
        assert not any((home / "hub").iterdir())
    assert code == 0, err
    data = json.loads(out)
    assert (data["outcome"], data["max_model_len"], data["model_source"]) == ("fits", 8192, f"the Hub ({hub.url})")
    assert err.count("warning: the Hugging Face cache is not writable") == 1, err
    assert str(home / "hub") in err and "could not be read" not in err, err


def test_a_read_only_cache_never_serves_the_commit_the_hub_has_just_superseded(hub, tmp_path):
    """Before: the cache's older main (8k context) was read, "not revalidated", though the Hub had just named a new
    commit whose config caps the context at 4k: a stale "fits" where vLLM refuses."""
    home = tmp_path / "hf"
    code, out, err = run(hub, home, "estimate", "--model", MODEL, "--max-model-len", "8192", *ARGS)
    assert (code, json.loads(out)["outcome"]) == (0, "fits"), err
    hub.repos[MODEL].move({"config.json": SHORT})
    with read_only(home / "hub"):
        code, out, err = run(hub, home, "estimate", "--model", MODEL, "--max-model-len", "8192", *ARGS)
    assert code == 0, err
    assert json.loads(out)["outcome"] == "max_len_exceeds_model", out
    assert "warning: the Hugging Face cache is not writable" in err and "not revalidated" not in err, err


def test_a_read_only_cache_still_reads_modelopts_separate_quant_file(tmp_path):
    """The second file of a ModelOpt <= 0.29 export (hf_quant_config.json) is also served from memory: before, the
    first file's failure already stopped the run."""
    modelopt = {"producer": {"name": "modelopt", "version": "0.27.0"},
                "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
    home, args = tmp_path / "hf", ("--model", MODEL, "--gpu", "NVIDIA-L4", "--max-model-len", "8192",
                                   "--vllm-version", "0.30.0", "-o", "json")
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG, "hf_quant_config.json": modelopt})}) as server:
        writable = run(server, tmp_path / "rw", "estimate", *args)
        with read_only(home / "hub"):
            code, out, err = run(server, home, "estimate", *args)
    # the same answer as with a writable cache (whatever the quantization reader makes of the file), plus one warning
    warning, _, rest = err.partition("\n")
    assert (code, out, rest.replace(str(home), str(tmp_path / "rw"))) == writable, err
    assert warning.startswith("vllm-remedy: warning: the Hugging Face cache is not writable ("), err
