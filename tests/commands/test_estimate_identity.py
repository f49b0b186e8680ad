"""The catalog answers for exactly the repositories it holds, at the revision it describes; any other id — however
close its name — is that repository's own config.json (the Hugging Face cache, then the Hub), as vLLM reads it.

A name is not an identity: ``acme/qwen3-8b`` may hold phi-4, ``evil/Llama-3.1-8B-Instruct`` anything, and a
``-AWQ`` suffix quantizes nothing. The Hub here is the project's Hub-compatible server on 127.0.0.1 (HF_ENDPOINT).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import run_cli
from fixtures.hf_hub_server import HubServer, Repo, hub_server
from vllm_remedy import hub as hub_module
from vllm_remedy.vllm import catalog

ARGS = ("--gpu", "NVIDIA-L40S", "--max-model-len", "4096", "-o", "json")
#: microsoft/phi-4's config.json facts as the catalog holds them (40 layers, 14.7 B parameters).
PHI4: dict[str, Any] = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 5120,
                        "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 10,
                        "intermediate_size": 17920, "vocab_size": 100352, "max_position_embeddings": 16384,
                        "torch_dtype": "bfloat16"}
#: Qwen/Qwen3-8B's facts, unquantized (no quantization_config), as a repository named "-AWQ" may well hold.
QWEN3_8B: dict[str, Any] = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
                            "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                            "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
                            "max_position_embeddings": 40960, "torch_dtype": "bfloat16", "tie_word_embeddings": False}
PINNED = "0123456789abcdef0123456789abcdef01234567"
GOOD_REV14 = Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" / "good-rev14.yaml"
POLICY = Path(__file__).resolve().parents[2] / "policies" / "llama-8b.yaml"


def run_with(home: Path, *args: str, **env: str):
    """`vllm-remedy estimate ARGS` online (HF_HUB_OFFLINE=0) with ``home`` as HF_HOME and ``env`` on top."""
    saved = dict(os.environ)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", **env})
    try:
        return run_cli("estimate", *args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def config_requests(hub: HubServer) -> list[tuple[str, str]]:
    return [r for r in hub.requests if "/resolve/" in r[1] and not r[1].endswith("/hf_quant_config.json")]


def cached(home: Path, repo_id: str, config: dict[str, Any], commit: str = "c0ffee") -> None:
    """``config`` as ``repo_id``'s config.json at main in the Hugging Face cache under ``home`` (hub cache layout)."""
    folder = home / "hub" / ("models--" + repo_id.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    (folder / "snapshots" / commit).mkdir(parents=True)
    (folder / "snapshots" / commit / "config.json").write_text(json.dumps(config))


def offline(home: Path, *args: str) -> dict[str, Any] | str:
    got = run_with(home, *args, HF_HUB_OFFLINE="1")
    return json.loads(got.stdout) if got.returncode == 0 else got.stderr


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({"someone/Qwen3-8B-AWQ": Repo({"config.json": QWEN3_8B}),
                     "Qwen/Qwen3-8B": Repo({"config.json": QWEN3_8B}, revisions={PINNED: {"config.json": {
                         **QWEN3_8B, "max_position_embeddings": 2048}}})}) as server:
        yield server


def test_a_look_alike_name_in_the_cache_is_sized_from_its_own_config(tmp_path):
    cached(tmp_path, "acme/qwen3-8b", PHI4)
    got = offline(tmp_path, "--model", "acme/qwen3-8b", *ARGS)
    assert isinstance(got, dict), got
    assert got["model_source"].startswith("the local Hugging Face cache (")
    assert 27.0 < got["weights_gib"] < 27.6  # phi-4's 14.66 B bf16 weights, not Qwen3-8B's 15.36 GiB


def test_a_look_alike_name_nowhere_is_not_the_catalog(tmp_path):
    assert offline(tmp_path, "--model", "evil/Llama-3.1-8B-Instruct", *ARGS) == (
        "vllm-remedy: error: model evil/Llama-3.1-8B-Instruct: not in the catalog nor the local Hugging Face cache, "
        "and HF_HUB_OFFLINE is set; pass --model-config with its config.json\n")


def test_a_quantization_suffix_in_the_name_quantizes_nothing(hub, tmp_path):
    got = run_with(tmp_path, "--model", "someone/Qwen3-8B-AWQ", *ARGS, HF_ENDPOINT=hub.url)
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["model_source"], data["weights_gib"]) == (f"the Hub ({hub.url})", 15.36)  # 16-bit, as its config says
    assert config_requests(hub)[-1] == ("GET", "/someone/Qwen3-8B-AWQ/resolve/main/config.json")


def test_a_catalog_repository_at_a_pinned_revision_is_read_at_that_revision(hub, tmp_path):
    got = run_with(tmp_path, "--model", "Qwen/Qwen3-8B", "--revision", PINNED, "--gpu", "NVIDIA-L40S", "-o", "json",
                   HF_ENDPOINT=hub.url)
    assert got.returncode == 0, got.stderr
    assert (json.loads(got.stdout)["model_source"], json.loads(got.stdout)["max_model_len"]) == (
        f"the Hub ({hub.url})", 2048)
    assert ("GET", f"/Qwen/Qwen3-8B/resolve/{PINNED}/config.json") in config_requests(hub)


def test_the_catalog_answers_for_its_own_ids_in_any_case_and_at_main(tmp_path):
    for model_id, revision in (("Qwen/Qwen3-8B", None), ("qwen/QWEN3-8b", "main"),
                               ("meta-llama/Meta-Llama-3.1-8B-Instruct", None)):  # the repository's former name
        spec, source = hub_module.resolve(model_id, revision)
        assert (source, spec.name) == ("catalog", model_id)
    for model_id in ("acme/qwen3-8b", "Qwen3-8B", "/models/Qwen3-8B", "someone/Qwen3-8B-AWQ"):
        assert catalog.repo_model(model_id) is None, model_id
    assert catalog.repo_model("Qwen/Qwen3-8B", PINNED) is None


def test_a_local_path_is_not_a_repository_id_the_policys_config_names_it(tmp_path):
    with pytest.raises(hub_module.Unresolved, match=r"^model /models/Qwen3-8B: a local path, not a repository id"):
        hub_module.resolve("/models/Qwen3-8B")
    spec, source = hub_module.resolve("/models/Qwen3-8B", None, ("policy p.yaml model_config.path", lambda: PHI4))
    assert (source, spec.num_layers) == ("policy p.yaml model_config.path", 40)


def test_a_pods_local_path_is_its_volume_not_this_machines_same_path(tmp_path, cli):
    """`check` on a manifest serving /…/models/Qwen3-8B: this machine happens to hold phi-4's config.json at that
    path, which says nothing of the pod's volume; no prediction until the policy names the config."""
    local = tmp_path / "models" / "Qwen3-8B"
    local.mkdir(parents=True)
    (local / "config.json").write_text(json.dumps(PHI4))
    dep = yaml.safe_load(GOOD_REV14.read_text())
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    args[0:3] = [str(local)]  # the model and its --revision, which a local directory has not
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    target = f"extends: {POLICY.resolve()}\ntarget: {{models: [{local}]}}\nknown_good: []\n"
    bare = tmp_path / "bare.yaml"
    bare.write_text(target)
    got = cli("check", "-f", str(manifest), "--policy", str(bare), "-o", "json")
    findings = [(f["check"], f["reason"]) for i in json.loads(got.stdout)["items"] for f in i["findings"]]
    assert findings == [("model", f"cannot predict: model {local}: a local path in the pod (its volume), not a "
                                  "repository id, which this tool cannot read; name its config in the policy "
                                  "(model_config)")], findings
    (tmp_path / "qwen3-8b.json").write_text(json.dumps(QWEN3_8B))
    named = tmp_path / "named.yaml"
    named.write_text(target + "model_config: {path: qwen3-8b.json}\n")
    got = cli("check", "-f", str(manifest), "--policy", str(named))
    assert got.returncode == 0, got.stdout + got.stderr
    assert "fits on NVIDIA-L40S" in got.stdout.splitlines()[0], got.stdout
    assert hub_module.resolve(str(local))[0].num_layers == 40  # `estimate --model <dir>` on this machine reads it


def test_plan_of_a_manifest_reads_a_pods_local_path_as_its_volume_too(tmp_path, cli):
    """`plan -f` judges the manifest's model as `check` does: this machine's same path is not the pod's volume, so
    without the policy's config there is no plan (it read phi-4 from this machine before)."""
    local = tmp_path / "models" / "Qwen3-8B"
    local.mkdir(parents=True)
    (local / "config.json").write_text(json.dumps(PHI4))
    dep = yaml.safe_load(GOOD_REV14.read_text())
    dep["spec"]["template"]["spec"]["containers"][0]["args"][0:3] = [str(local)]
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    got = cli("plan", "-f", str(manifest))
    assert got.returncode == 2 and "a local path in the pod (its volume)" in got.stderr, got.stdout + got.stderr
    (tmp_path / "qwen3-8b.json").write_text(json.dumps(QWEN3_8B))
    named = tmp_path / "named.yaml"
    named.write_text(f"extends: {POLICY.resolve()}\nmodel_config: {{path: qwen3-8b.json}}\n")
    got = cli("plan", "-f", str(manifest), "--policy", str(named), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    assert json.loads(got.stdout)["current"]["weights_gib"] == 15.36, got.stdout  # Qwen3-8B (phi-4: 27.4)
