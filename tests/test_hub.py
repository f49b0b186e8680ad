"""hub.resolve in-process: the order of sources, and each (model, revision) asked of the Hub once per process —
failures too — as a fleet run needs (every host serving a model resolves it at connect)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.hf_hub_server import SMOLLM2_COMMIT, SMOLLM2_CONFIG, SMOLLM2_ID, HubServer, Repo, hub_server, use_hub
from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import resolved

GATED = "acme-corp/Gated-13B"
LFS = "acme-corp/Lfs-1.7B"


@pytest.fixture
def online(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({SMOLLM2_ID: Repo({"config.json": SMOLLM2_CONFIG}),
                     GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True),
                     LFS: Repo({"config.json": SMOLLM2_CONFIG}, lfs=True)}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf")
        yield server


def files(server: HubServer) -> list[tuple[str, str]]:
    return [r for r in server.requests if "/resolve/" in r[1] and not r[1].endswith("/hf_quant_config.json")]


def test_a_catalog_model_never_asks_the_hub(online):
    spec, source = hub.resolve("meta-llama/Llama-3.1-8B-Instruct")
    assert (source, spec.num_layers, files(online)) == ("catalog", 32, [])


def test_each_model_is_asked_once_per_process_failures_included(online):
    for _ in range(3):  # three hosts serving the same model
        spec, source = hub.resolve(SMOLLM2_ID)
        with pytest.raises(UserError, match="gated repository"):
            hub.resolve(GATED)
    assert (spec.num_layers, spec.num_kv_heads, source) == (24, 32, f"the Hub ({online.url})")
    # one GET each (before: our HEAD for the commit and size, then hf_hub_download's HEAD and GET; the gated one HEAD)
    assert files(online) == [("GET", f"/{SMOLLM2_ID}/resolve/main/config.json"),
                             ("GET", f"/{GATED}/resolve/main/config.json")]
    assert resolved.model(SMOLLM2_ID) == spec  # what predictions look up
    with pytest.raises(UserError, match=f"^model {GATED}: gated repository"):
        resolved.model(GATED)


def test_the_policys_copy_is_the_last_resort_where_the_hub_cannot_be_asked(online, tmp_path, monkeypatch):
    copy = tmp_path / "config.json"
    copy.write_text(json.dumps(SMOLLM2_CONFIG))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")  # nothing listens there
    spec, source = hub.resolve("acme-corp/Private-1.7B", None, ("policy p.yaml model_config.path", lambda: json.loads(
        copy.read_text())))
    assert (spec.hidden_size, source) == (2048, "policy p.yaml model_config.path")
    assert (hub.fallback_note("acme-corp/Private-1.7B", "main") or "").startswith(  # what check's note says
        "policy p.yaml model_config.path, because model acme-corp/Private-1.7B: the Hub (http://127.0.0.1:1) is "
        "unreachable")


def test_the_hubs_no_is_not_overruled_by_the_policys_copy(online, tmp_path):
    """Before: any failure fell back to the policy's copy, a misspelt repository included, and vLLM cannot start."""
    copy = tmp_path / "config.json"
    copy.write_text(json.dumps(SMOLLM2_CONFIG))
    fallback = ("policy p.yaml model_config.path", lambda: json.loads(copy.read_text()))
    with pytest.raises(hub.Unavailable, match=r"^model acme-corp/Private-1\.7B: not found on the Hub"):
        hub.resolve("acme-corp/Private-1.7B", None, fallback)
    with pytest.raises(hub.Unavailable, match=f"^model {SMOLLM2_ID}: revision v9 not found"):
        hub.resolve(SMOLLM2_ID, "v9", fallback)
    with pytest.raises(hub.Unavailable, match=f"^model {GATED}: gated repository"):
        hub.resolve(GATED, None, fallback)
    said = resolved.known(GATED)
    assert isinstance(said, hub.Reason) and said.unavailable  # a prediction says model_unavailable
    assert hub.fallback_note(GATED) is None
    assert files(online) == [("GET", "/acme-corp/Private-1.7B/resolve/main/config.json"),
                             ("GET", f"/{SMOLLM2_ID}/resolve/v9/config.json"),
                             ("GET", f"/{GATED}/resolve/main/config.json")]


def test_a_broken_policy_copy_says_both_reasons(online, monkeypatch):
    def broken() -> dict:
        raise UserError("policy p.yaml model_config.path c.json: cannot read (No such file or directory)")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")
    with pytest.raises(UserError) as got:
        hub.resolve("acme-corp/Nowhere-1B", None, ("policy p.yaml model_config.path", broken))
    assert str(got.value).startswith("model acme-corp/Nowhere-1B: the Hub (http://127.0.0.1:1) is unreachable")
    assert str(got.value).endswith("; policy p.yaml model_config.path c.json: cannot read (No such file or directory)")


def test_no_revision_and_main_are_one_resolution(online):
    """Before: one per spelling, a HEAD for the second (a fleet mixing ``--revision main`` and none)."""
    first, _ = hub.resolve(SMOLLM2_ID)
    again, _ = hub.resolve(SMOLLM2_ID, "main")
    assert first == again and resolved.model(SMOLLM2_ID, "main") == first
    assert files(online) == [("GET", f"/{SMOLLM2_ID}/resolve/main/config.json")]


def test_a_pods_own_token_decides_a_gated_repository(online, monkeypatch, tmp_path):
    """This machine's token is not the pod's: a pod without one is refused (vLLM's 401), a pod whose token is a
    Secret gets this machine's token in its stead, and neither is told to set a token it has."""
    monkeypatch.setenv("HF_TOKEN", "hf_operator")
    with pytest.raises(hub.Unavailable, match="and the pod sets no HF_TOKEN: vLLM's download is refused"):
        hub.resolve(GATED, in_pod=True, env={"HF_TOKEN": None})
    assert online.authorized == []  # huggingface_hub did not send this machine's token in the pod's stead
    assert hub.learn(GATED, env={"HF_TOKEN": hub.pod.UNREAD}) is None
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "another"))  # not the cache the token filled
    said = hub.learn(GATED, env={"HF_TOKEN": hub.pod.UNREAD}) or ""
    assert "the pod's HF_TOKEN (a Secret) is not read here" in said and "set HF_TOKEN to" not in said, said
    assert not isinstance(resolved.known(GATED), hub.Reason) or not resolved.known(GATED).unavailable


def test_a_pod_start_asks_again_after_a_failure(online, monkeypatch):
    """The rehearsal cluster resolves at each pod start, as vLLM does: a Hub that failed once is asked again
    (before: the failure was kept for the process's life, and the pod crash-looped after the Hub recovered)."""
    monkeypatch.setenv("VLLM_REMEDY_HUB_TIMEOUT", "1")  # its retries within a second
    online.repos[SMOLLM2_ID].misbehave = "error-500"
    with pytest.raises(UserError, match="answered HTTP 500"):
        hub.resolve(SMOLLM2_ID, in_pod=True, env={}, per_start=True)
    online.repos[SMOLLM2_ID].misbehave = None
    assert hub.resolve(SMOLLM2_ID, in_pod=True, env={}, per_start=True)[0].num_layers == 24
    hub.resolve(SMOLLM2_ID, in_pod=True, env={}, per_start=True)  # a branch is revalidated at each start
    assert files(online)[-2:] == [("GET", f"/{SMOLLM2_ID}/resolve/main/config.json"),
                                  ("HEAD", f"/{SMOLLM2_ID}/resolve/main/config.json")]


def test_the_environment_at_the_call_rules_not_the_one_at_import(online, monkeypatch):
    """huggingface_hub froze HF_HUB_OFFLINE=1 when something imported it under the test session's offline default;
    the environment now says online (as the rehearsal cluster's process sees it after a test sets its Hub)."""
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    spec, source = hub.resolve(SMOLLM2_ID)
    assert (spec.num_layers, source) == (24, f"the Hub ({online.url})")


#: Run in a second process, offline: where huggingface_hub (and vLLM, through hf_hub_download) finds the config.
FIND = """
import json, sys
import huggingface_hub as hf
found = {rev: hf.try_to_load_from_cache(sys.argv[1], "config.json", revision=rev) for rev in (None, sys.argv[2])}
found["hf_hub_download"] = hf.hf_hub_download(sys.argv[1], "config.json")
print(json.dumps(found))
"""


def test_the_first_resolution_is_one_get_and_another_process_finds_it_offline(online, tmp_path):
    """One GET writes huggingface_hub's own cache layout: a later offline process (vLLM, or this tool) reads the
    config through try_to_load_from_cache and hf_hub_download at main (refs/main) and at the commit."""
    spec, source = hub.resolve(SMOLLM2_ID)
    assert (spec.num_layers, source, files(online)) == (24, f"the Hub ({online.url})", [
        ("GET", f"/{SMOLLM2_ID}/resolve/main/config.json")])
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": online.url}
    got = subprocess.run([sys.executable, "-c", FIND, SMOLLM2_ID, SMOLLM2_COMMIT], capture_output=True, text=True,
                         env=env, timeout=60)
    assert got.returncode == 0, got.stderr
    snapshot = tmp_path / "hf" / "hub" / "models--HuggingFaceTB--SmolLM2-1.7B-Instruct" / "snapshots" / SMOLLM2_COMMIT
    assert json.loads(got.stdout) == {"null": str(snapshot / "config.json"), SMOLLM2_COMMIT: str(
        snapshot / "config.json"), "hf_hub_download": str(snapshot / "config.json")}
    assert json.loads((snapshot / "config.json").read_text()) == SMOLLM2_CONFIG
    assert os.readlink(snapshot / "config.json").startswith("../../blobs/")  # as huggingface_hub links it
    assert files(online) == [("GET", f"/{SMOLLM2_ID}/resolve/main/config.json")]  # the second process asked nothing


def test_a_file_in_lfs_is_one_get_and_its_redirect_and_the_token_stays_on_the_hub(online, tmp_path, monkeypatch):
    """The Hub answers an LFS file with a redirect to a CDN: the commit, the blob's id (X-Linked-Etag, the cache's
    blob name, as hf_hub_download names it) and the size come from that redirect; HF_TOKEN is not sent to the CDN."""
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    spec, source = hub.resolve(LFS)
    assert (spec.num_layers, source) == (24, f"the Hub ({online.url})")
    resolve, cdn = f"/{LFS}/resolve/main/config.json", f"/cdn/{LFS}/{SMOLLM2_COMMIT}/config.json"
    assert [r for r in online.requests if not r[1].startswith("/api/") and "hf_quant" not in r[1]] == [
        ("GET", resolve), ("GET", cdn)]
    assert [r for r in online.authorized if "hf_quant" not in r[1]] == [("GET", resolve)]
    folder = tmp_path / "hf" / "hub" / "models--acme-corp--Lfs-1.7B"
    blob = hashlib.sha256(json.dumps(SMOLLM2_CONFIG, indent=2).encode()).hexdigest()
    assert os.readlink(folder / "snapshots" / SMOLLM2_COMMIT / "config.json") == f"../../blobs/{blob}"
    assert (folder / "refs" / "main").read_text() == SMOLLM2_COMMIT


NV_FP8 = "acme-corp/Llama-NV-FP8"
#: What ModelOpt 0.29 and earlier export beside config.json (NVIDIA's older *-FP8 repositories).
MODELOPT = {"producer": {"name": "modelopt", "version": "0.27.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}


def test_modelopts_separate_quant_file_is_handed_in_as_quantization_config(online):
    """vLLM (transformers_utils/config.py@0.10.1 on, @0.30.0 l.829-841) sets hf_quant_config.json as the config's
    quantization_config when config.json has none: one GET more, kept in the cache, a 404 recorded as absent.
    Before: the file was never asked for, and the checkpoint was sized as if it stated no quantization."""
    from vllm_remedy.vllm import hf_overrides, quant_source

    online.repos[NV_FP8] = Repo({"config.json": SMOLLM2_CONFIG, "hf_quant_config.json": MODELOPT})
    stated = {**SMOLLM2_CONFIG, "quantization_config": {"quant_method": "fp8"}}
    online.repos[LFS] = Repo({"config.json": stated, "hf_quant_config.json": MODELOPT})  # vLLM does not look
    hub.resolve(NV_FP8)
    hub.resolve(LFS)
    hub.resolve(SMOLLM2_ID)  # none there: 404
    # the file's mapping as it is, marked as read from the file (releases before 0.10.1 never read it: quant_source)
    assert (hf_overrides.base_config(NV_FP8, None) or ({},))[0].get("quantization_config") == {
        **MODELOPT, quant_source.FROM_FILE: "hf_quant_config.json"}
    assert "quantization_config" not in (hf_overrides.base_config(SMOLLM2_ID, None) or ({},))[0]
    quant = [r for r in online.requests if r[1].endswith("/hf_quant_config.json")]
    assert quant == [("GET", f"/{NV_FP8}/resolve/main/hf_quant_config.json"),
                     ("GET", f"/{SMOLLM2_ID}/resolve/main/hf_quant_config.json")]
    hub.resolve(NV_FP8, in_pod=True)  # resolved afresh (another memo key): main revalidated, the file from the cache
    hub.resolve(SMOLLM2_ID, in_pod=True)  # and its absence recorded as hf_hub_download records it
    assert [r for r in online.requests if r[1].endswith("/hf_quant_config.json")] == quant
    assert files(online)[-2:] == [("HEAD", f"/{NV_FP8}/resolve/main/config.json"),
                                  ("HEAD", f"/{SMOLLM2_ID}/resolve/main/config.json")]


@pytest.mark.parametrize("revision", ["main", "v1.0", "refs/pr/1", "refs/convert/parquet", "release-2024_10",
                                      "feature/x@y", SMOLLM2_COMMIT])
def test_ref_names_the_hub_has_are_revisions(revision):
    assert hub.names.revision_problem(revision) is None


def test_the_store_writes_nothing_through_a_link_out_of_the_repository_folder(tmp_path):
    """A cache whose repository folder holds links pointing elsewhere (planted, or a shared volume's): every path the
    store writes is resolved and must lie inside the folder, else nothing is written."""
    from vllm_remedy.hub import store

    cache, elsewhere = tmp_path / "hub", tmp_path / "elsewhere"
    folder = cache / "models--acme-corp--Linked"
    folder.mkdir(parents=True)
    elsewhere.mkdir()
    (folder / "refs").symlink_to(elsewhere)
    store.point(str(cache), "acme-corp/Linked", "main", SMOLLM2_COMMIT)
    assert list(elsewhere.iterdir()) == []
    (folder / "blobs").symlink_to(elsewhere)
    with pytest.raises(store.Outside):
        store.save(str(cache), "acme-corp/Linked", "main", SMOLLM2_COMMIT, "e" * 40, b"{}")
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(ValueError):
        store.save(str(cache), "../escape", "main", SMOLLM2_COMMIT, "e" * 40, b"{}")
