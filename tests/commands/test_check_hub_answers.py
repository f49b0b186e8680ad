"""`vllm-remedy check` on a model outside the catalog, through the real CLI against a Hub-compatible server on
127.0.0.1 (HF_ENDPOINT, never the real Hub): what vLLM in the pod would get from the Hub decides the prediction.

- The Hub's own "no" (no such repository, no such revision, a gated repository the pod has no token for) is what
  vLLM dies on at startup (``model_unavailable``): ``check`` fails, and a policy's ``model_config`` does not overrule
  it (that last resort is for a Hub that cannot be asked, and then the note says it was used).
- The token is the pod's: a gated model whose pod sets no HF_TOKEN fails even when this machine has a token; a pod
  whose token is a Secret is not told to set one.
- ``--revision`` in vLLM's ``--config`` YAML is the revision resolved, as vLLM splices it into argv.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

ROOT = Path(__file__).resolve().parents[2]
LLAMA, GATED = "acme-corp/Llama-Hub", "acme-corp/Gated-Hub"
SHORT = {**SMOLLM2_CONFIG, "max_position_embeddings": 4096}  # revision v2: a 4k context
SERVE = ["--max-model-len", "8192", "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64"]


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({LLAMA: Repo({"config.json": SMOLLM2_CONFIG}, revisions={"v2": {"config.json": SHORT}}),
                     GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        yield server


def deployment(args: list[str], env: list[dict[str, Any]] | None = None, volumes: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"],
                                 "args": args, "env": env or [], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    spec: dict[str, Any] = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container]}
    if volumes:
        container["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/vllm"}]
        spec["volumes"] = [{"name": "cfg", "configMap": {"name": "vcfg"}}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "llm"},
            "spec": {"selector": {"matchLabels": {"app": "m"}}, "template": {
                "metadata": {"labels": {"app": "m"}}, "spec": spec}}}


def check(hub: HubServer | None, tmp_path: Path, docs: list[dict[str, Any]], policy: bool = False,
          command: str = "check", **env: str) -> tuple[int, str]:
    """(exit code, stdout + stderr) of `check -f` on ``docs``; ``policy``: with a policy whose model_config is a
    file holding SmolLM2's config.json (what a cluster that reaches no Hub is sized from)."""
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    args = [command, "-f", str(manifest)]
    if policy:
        (tmp_path / "config.json").write_text(json.dumps(SMOLLM2_CONFIG))
        (tmp_path / "p.yaml").write_text(f"extends: {ROOT / 'policies' / 'default.yaml'}\n"
                                         f"model_config:\n  path: config.json\n  model: {LLAMA}\n")
        args += ["--policy", str(tmp_path / "p.yaml")]
    saved = dict(os.environ)
    os.environ.pop("HF_TOKEN", None)
    os.environ.update({"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
                       "HF_ENDPOINT": hub.url if hub else "http://127.0.0.1:1", **env})
    try:
        got = run_cli(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout + got.stderr


@pytest.mark.parametrize(("model", "said"), [
    ("acme-corp/Llamma-Hub", "model acme-corp/Llamma-Hub: not found on the Hub ({url}) nor in the local Hugging Face "
                             "cache"),
    (f"{LLAMA} --revision v9.9", f"model {LLAMA}: revision v9.9 not found on the Hub ({{url}})"),
    (GATED, f"model {GATED}: gated repository on the Hub ({{url}}) and the pod sets no HF_TOKEN: vLLM's download is "
            "refused (401)")])
def test_the_hubs_no_is_vllms_model_unavailable_and_the_policys_copy_does_not_overrule_it(hub, tmp_path, model,
                                                                                           said):
    """Before: all three passed as "fits" on the policy's config.json, and the pod cannot start."""
    code, out = check(hub, tmp_path, [deployment([*model.split(), *SERVE])], policy=True)
    assert code == 1, out
    assert f"predicted model_unavailable — {said.format(url=hub.url)}" in out, out
    assert "fits" not in out, out


def test_a_hub_that_cannot_be_asked_is_sized_from_the_policys_copy_and_the_note_says_so(tmp_path):
    code, out = check(None, tmp_path, [deployment([LLAMA, *SERVE])], policy=True)
    assert code == 0, out
    assert (f"note: model {LLAMA}: config.json from policy {tmp_path / 'p.yaml'} model_config.path "
            f"{tmp_path / 'config.json'}, because model {LLAMA}: the Hub (http://127.0.0.1:1) is "
            "unreachable") in out, out


def test_a_gated_model_whose_pod_has_no_token_fails_though_this_machine_has_one(hub, tmp_path):
    """Before: sized with this machine's HF_TOKEN, "predicted to start"; vLLM in the pod gets 401."""
    code, out = check(hub, tmp_path, [deployment([GATED, *SERVE], [{"name": "HF_HOME", "value": "/models/hf"}])],
                      HF_TOKEN="hf_operator")
    assert code == 1, out
    assert (f"predicted model_unavailable — model {GATED}: gated repository on the Hub ({hub.url}) and the pod sets "
            "no HF_TOKEN") in out, out
    secret = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]
    code, out = check(hub, tmp_path, [deployment([GATED, *SERVE], secret)], HF_TOKEN="hf_operator")
    assert code == 0 and "model_unavailable" not in out, out  # the pod's Secret: this machine's token stands in


def test_a_pod_that_sets_its_token_is_not_told_to_set_one(hub, tmp_path):
    secret = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]
    _, out = check(hub, tmp_path, [deployment([GATED, *SERVE], secret)])
    assert "set HF_TOKEN to a token with access" not in out, out
    assert (f"model {GATED}: gated repository on the Hub ({hub.url}); the pod's HF_TOKEN (a Secret) is not read "
            "here and no HF_TOKEN is set here") in out, out
    assert "model_unavailable" not in out, out  # the pod's token may have access: unknown, not a failure


def test_the_revision_in_vllms_config_file_is_the_one_resolved(hub, tmp_path):
    """Before: main was resolved, then the prediction looked the model up at v2 and said "not in the catalog"."""
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vcfg", "namespace": "llm"},
                  "data": {"cfg.yaml": "revision: v2\nmax-model-len: 8192\n"}}
    code, out = check(hub, tmp_path, [deployment([LLAMA, "--config", "/etc/vllm/cfg.yaml"], volumes=True),
                                      config_map])
    assert code == 1, out
    assert "predicted max_len_exceeds_model" in out and "4,096" in out, out
    assert "not in the catalog" not in out, out
    assert ("GET", f"/{LLAMA}/resolve/v2/config.json") in hub.requests, hub.requests


def test_plan_does_not_size_a_misspelt_repository_from_the_policys_copy(hub, tmp_path):
    """`plan -f` resolves the manifest's model the same way: the Hub's "not found" is the answer, not a plan."""
    code, out = check(hub, tmp_path, [deployment(["acme-corp/Llamma-Hub", *SERVE])], policy=True, command="plan")
    assert code != 0, out
    assert f"model acme-corp/Llamma-Hub: not found on the Hub ({hub.url})" in out, out
