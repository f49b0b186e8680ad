"""`vllm-remedy check` on one manifest file whose Deployments serve one gated model with different HF_TOKENs (through
the real CLI, a Hub-compatible server on 127.0.0.1): each workload gets the Hub's answer to its own token. Before,
every workload was learned first and all read the last one's answer, so a pod whose token the Hub refuses passed as
"fits" and one with a valid token failed "the pod sets no HF_TOKEN"."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

GATED = "acme-corp/SmolLM2-Gated"
SERVE = [GATED, "--max-model-len", "4096", "--gpu-memory-utilization", "0.9"]


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        server.refused.add("hf_revoked")
        yield server


def deployment(name: str, token: str | None, args: list[str] = SERVE) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "vllm", "image": "vllm/vllm-openai:v0.34.0", "command": ["vllm", "serve"],
                                 "args": args, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    if token is not None:
        container["env"] = [{"name": "HF_TOKEN", "value": token}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container]}}}}


def verdicts(hub: HubServer, tmp_path: Path, docs: list[dict[str, Any]]) -> dict[str, str]:
    """Each workload's name → its JSON item (`check -f -o json` on one file holding ``docs``), no token here."""
    manifest = tmp_path / "m.yaml"
    manifest.write_text("\n---\n".join(json.dumps(d) for d in docs))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE")}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({**env, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url})
    try:
        got = run_cli("check", "-f", str(manifest), "-o", "json")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {item["name"]: json.dumps(item) for item in json.loads(got.stdout)["items"]}


def test_three_deployments_on_one_gated_model_each_get_their_own_tokens_answer(hub, tmp_path: Path) -> None:
    got = verdicts(hub, tmp_path, [deployment("smol-a", "hf_revoked"), deployment("smol-b", "hf_good"),
                                   deployment("smol-c", None)])
    assert '"status": "fail"' in got["smol-a"] and "refused the token (401" in got["smol-a"], got["smol-a"]
    assert '"status": "pass"' in got["smol-b"] and '"outcome": "fits"' in got["smol-b"], got["smol-b"]
    assert '"status": "fail"' in got["smol-c"] and "the pod sets no HF_TOKEN" in got["smol-c"], got["smol-c"]


def test_vllms_own_hf_token_flag_is_the_token_from_0_19(hub, tmp_path: Path) -> None:
    """``--hf-token`` (no HF_TOKEN in the env) reaches the config.json reads from 0.19.0: the pod starts; before,
    vLLM reads with the environment's token, so 0.18.0 is refused "gated". Before the fix every release was "gated,
    set HF_TOKEN" and a revoked flag token was never asked."""
    def serving(token: str) -> list[str]:
        return [GATED, "--hf-token", token, "--max-model-len", "4096", "--gpu-memory-utilization", "0.9"]

    docs = [deployment("flag-34", None, serving("hf_good")), deployment("flag-18", None, serving("hf_good")),
            deployment("revoked-34", None, serving("hf_revoked"))]
    docs[1]["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.18.0"
    got = verdicts(hub, tmp_path, docs)
    assert '"status": "pass"' in got["flag-34"] and '"outcome": "fits"' in got["flag-34"], got["flag-34"]
    assert '"status": "fail"' in got["flag-18"] and "the pod sets no HF_TOKEN" in got["flag-18"], got["flag-18"]
    assert '"status": "fail"' in got["revoked-34"] and "refused the token (401" in got["revoked-34"], got["revoked-34"]


def test_plan_of_a_manifest_resolves_with_the_pods_hf_token_flag(hub, tmp_path: Path) -> None:
    """`plan -f` resolves the manifest's model as check does: with vLLM's --hf-token from 0.19.0. Before, it asked
    with the environment's token only and refused the gated repository the pod reads with its flag."""
    doc = deployment("flag-34", None, [GATED, "--hf-token", "hf_good", "--max-model-len", "4096",
                                       "--gpu-memory-utilization", "0.9"])
    manifest = tmp_path / "one.yaml"
    manifest.write_text(json.dumps(doc))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE")}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({**env, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url})
    try:
        got = run_cli("plan", "-f", str(manifest), "--gpu", "NVIDIA-L40S", "-o", "json")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert got.returncode == 0, got.stdout + got.stderr
    assert json.loads(got.stdout)["current"]["outcome"] == "fits", got.stdout

