"""`check` never lets this shell's HF_ENDPOINT or offline switch stand in for a pod's that comes from a ConfigMap.

A pod whose ``HF_ENDPOINT`` (or ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``) is ``valueFrom.configMapKeyRef`` asks
the Hub that ConfigMap names, which is the cluster's (a mirror shared by its Deployments), not this machine's. Before,
check asked this shell's Hub instead: "predicted model_unavailable … correct --model" when that Hub lacks the model,
and "fits" for a pod the ConfigMap puts offline with no cache. Now: the ConfigMap among the files checked is read;
one that is not makes the model "cannot predict", naming the variable and the ConfigMap.
Real CLI against Hub-compatible servers on 127.0.0.1.
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

MODEL = "acme-corp/Smol-Mirror"
SERVE = ["--max-model-len", "4096", "--gpu-memory-utilization", "0.9"]


@pytest.fixture
def mirror() -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        yield server


@pytest.fixture
def empty() -> Iterator[HubServer]:
    with hub_server({}, public=True) as server:
        yield server


def manifest(tmp_path: Path, env: list[dict[str, Any]], maps: dict[str, dict[str, str]] | None = None) -> Path:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "command": ["vllm", "serve"],
                 "args": [MODEL, *SERVE], "env": env, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "llm"}, "data": data}
        for name, data in (maps or {}).items()]
    docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "llm"},
                 "spec": {"selector": {"matchLabels": {"app": "m"}}, "template": {
                     "metadata": {"labels": {"app": "m"}}, "spec": {
                         "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"}, "containers": [container]}}}})
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    return path


def from_map(name: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"configMapKeyRef": {"name": "hf", "key": key}}}


def cli(home: Path, path: Path, hub: str) -> tuple[int, str]:
    saved = dict(os.environ)
    for name in ("HF_TOKEN", "HF_HUB_CACHE", "TRANSFORMERS_OFFLINE"):
        os.environ.pop(name, None)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "VLLM_REMEDY_HUB_TIMEOUT": "3",
                       "HF_ENDPOINT": hub})
    try:
        got = run_cli("check", "-f", str(path))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout + got.stderr


def config_requests(hub: HubServer) -> list[tuple[str, str]]:
    return [r for r in hub.requests if "/resolve/" in r[1]]


def test_an_endpoint_from_an_unchecked_configmap_is_no_prediction_not_this_shells_hubs_no(mirror, empty, tmp_path):
    code, out = cli(tmp_path / "hf", manifest(tmp_path, [from_map("HF_ENDPOINT", "endpoint")]), empty.url)
    assert code == 1 and "model_unavailable" not in out and "correct --model" not in out and "fits" not in out, out
    assert "model [unknown]: cannot predict: " in out, out
    assert "HF_ENDPOINT comes from ConfigMap hf (key endpoint)" in out, out
    assert config_requests(empty) == [], empty.requests  # this shell's Hub is not the pod's: not asked


def test_an_endpoint_from_an_unchecked_configmap_is_no_pass_on_this_shells_hub(mirror, tmp_path):
    code, out = cli(tmp_path / "hf", manifest(tmp_path, [from_map("HF_ENDPOINT", "endpoint")]), mirror.url)
    assert code == 1 and "fits" not in out and "cannot predict: " in out, out
    assert config_requests(mirror) == [], mirror.requests


def test_an_endpoint_from_a_configmap_checked_with_it_is_the_hub_asked(mirror, empty, tmp_path):
    path = manifest(tmp_path, [from_map("HF_ENDPOINT", "endpoint")], {"hf": {"endpoint": mirror.url}})
    code, out = cli(tmp_path / "hf", path, empty.url)
    assert code == 0 and "fits on NVIDIA-L4" in out, out
    assert ("GET", f"/{MODEL}/resolve/main/config.json") in mirror.requests, mirror.requests
    assert config_requests(empty) == [], empty.requests


@pytest.mark.parametrize("switch", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_an_offline_switch_from_an_unchecked_configmap_is_no_pass(mirror, tmp_path, switch):
    env = [{"name": "HF_ENDPOINT", "value": mirror.url}, from_map(switch, "offline")]
    code, out = cli(tmp_path / "hf", manifest(tmp_path, env), mirror.url)
    assert code == 1 and "fits" not in out, out
    assert f"cannot predict: model {MODEL}" in out and f"{switch} comes from ConfigMap hf (key offline)" in out, out


def test_an_offline_switch_from_a_configmap_checked_with_it_is_read(mirror, tmp_path):
    env = [{"name": "HF_ENDPOINT", "value": mirror.url}, from_map("HF_HUB_OFFLINE", "offline")]
    code, out = cli(tmp_path / "hf", manifest(tmp_path, env, {"hf": {"offline": "1"}}), mirror.url)
    assert code == 1 and "predicted model_unavailable" in out and "HF_HUB_OFFLINE is set in the pod" in out, out
    code, out = cli(tmp_path / "hf2", manifest(tmp_path, env, {"hf": {"offline": "0"}}), mirror.url)
    assert code == 0 and "fits on NVIDIA-L4" in out, out
