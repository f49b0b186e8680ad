"""vLLM's ``--hf-token`` written without a value (``nargs="?"``, ``const=True`` from 0.8.5) in a pod with no token:
huggingface_hub's ``get_token_to_send(True)`` raises LocalTokenNotFoundError ("Token is required (`token=True`), but no
token found", measured with huggingface_hub 0.35.3 and 1.33.0 under transformers 4.57.1 and 5.0.0), at the config.json
read from 0.19.0 and at the image processor config read from 0.8.5 (``hub.bare_token``). Through the real CLI (``check
-f``, ``plan -f``) against tests/fixtures/hf_hub_server, no token on this machine. Before, every such pod "fit"."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

MODEL = "acme-corp/SmolLM2-Bare-Token"
SAID = "LocalTokenNotFoundError"


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        yield server


def deployment(name: str, release: str, env: dict[str, str] | None = None,
               mounts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "vllm", "image": f"vllm/vllm-openai:v{release}", "command": ["vllm", "serve"],
        "args": [MODEL, "--hf-token", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if mounts:
        container["volumeMounts"] = mounts
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container],
                              "volumes": [{"name": "hf", "secret": {"secretName": "hf"}}] if mounts else []}}}}


def cli(hub: HubServer, tmp_path: Path, *args: str) -> Any:
    """The CLI with this machine's token out of the way and its Hub the fixture's."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE")}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({**env, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url})
    try:
        return run_cli(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def verdicts(hub: HubServer, tmp_path: Path, docs: list[dict[str, Any]]) -> dict[str, str]:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("\n---\n".join(json.dumps(d) for d in docs))
    got = cli(hub, tmp_path, "check", "-f", str(manifest), "-o", "json")
    return {item["name"]: json.dumps(item) for item in json.loads(got.stdout)["items"]}


def test_a_bare_hf_token_without_a_token_is_predicted_to_fail(hub, tmp_path: Path) -> None:
    got = verdicts(hub, tmp_path, [
        deployment("bare-34", "0.34.0"), deployment("bare-19", "0.19.0"), deployment("bare-18", "0.18.0"),
        deployment("bare-085", "0.8.5"),
        deployment("env-34", "0.34.0", env={"HF_TOKEN": "hf_pod"}),
        deployment("file-34", "0.34.0", mounts=[{"name": "hf", "mountPath": "/root/.cache/huggingface/token",
                                                 "subPath": "token"}])])
    for name in ("bare-34", "bare-19", "bare-18", "bare-085"):
        assert '"status": "fail"' in got[name] and "predicted model_unavailable" in got[name], got[name]
        assert SAID in got[name] and "set HF_TOKEN" in got[name], got[name]
    assert "at its first read of config.json" in got["bare-34"], got["bare-34"]
    assert "image processor config" in got["bare-18"], got["bare-18"]
    for name in ("env-34", "file-34"):  # a token in the env, a token file mounted where huggingface_hub looks
        assert '"status": "pass"' in got[name] and '"outcome": "fits"' in got[name], got[name]


def test_before_0_8_5_the_flag_is_an_unknown_option(hub, tmp_path: Path) -> None:
    got = verdicts(hub, tmp_path, [deployment("bare-083", "0.8.3")])["bare-083"]
    assert '"status": "fail"' in got and "--hf-token" in got and SAID not in got, got


def test_plan_of_a_manifest_says_the_same_line(hub, tmp_path: Path) -> None:
    manifest = tmp_path / "d.yaml"
    manifest.write_text(json.dumps(deployment("bare-34", "0.34.0")))
    got = cli(hub, tmp_path, "plan", "-f", str(manifest))
    assert got.returncode != 0 and SAID in got.stderr and "set HF_TOKEN" in got.stderr, got.stdout + got.stderr
