"""`check` predicts a manifest's pod with the pod's own offline switch and mirror, as its vLLM loads the model.

- HF_HUB_OFFLINE=1 (or huggingface_hub's other name for it, TRANSFORMERS_OFFLINE=1) in the pod: vLLM reads config.json
  from the pod's own Hugging Face cache and nothing else. On the container's own filesystem in vLLM's image that cache
  starts empty: model_unavailable, as the rehearsal pod and vLLM die. On a volume (or in an image not vLLM's own)
  this machine cannot read: unknown ("cannot predict"), never a pass. Before, check downloaded the config itself and
  said "fits".
- HF_ENDPOINT stated in the pod is the Hub asked; before, this machine's was, and a pod naming its mirror was told to
  set HF_HUB_OFFLINE=1 when this shell named none.
- TRANSFORMERS_OFFLINE=1 in this shell is offline to `estimate`, as to huggingface_hub.
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
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

MODEL = "acme-corp/Smol-Offline"
SERVE = ["--max-model-len", "8192", "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64"]
CLOSED = "http://127.0.0.1:1"


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        yield server


def manifest(tmp_path: Path, env: dict[str, str], volume: bool = False, image: str = "vllm/vllm-openai:v0.19.0"
             ) -> Path:
    container: dict[str, Any] = {"name": "vllm", "image": image, "command": ["vllm", "serve"],
                                 "args": [MODEL, *SERVE], "env": [{"name": k, "value": v} for k, v in env.items()],
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    spec: dict[str, Any] = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container]}
    if volume:
        container["volumeMounts"] = [{"name": "models", "mountPath": "/data"}]
        spec["volumes"] = [{"name": "models", "persistentVolumeClaim": {"claimName": "hf-cache"}}]
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "llm"},
           "spec": {"selector": {"matchLabels": {"app": "m"}}, "template": {
               "metadata": {"labels": {"app": "m"}}, "spec": spec}}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    return path


def cli(home: Path, *args: str, **env: str) -> tuple[int, str]:
    saved = dict(os.environ)
    for name in ("HF_TOKEN", "HF_HUB_CACHE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        os.environ.pop(name, None)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "VLLM_REMEDY_HUB_TIMEOUT": "3", **env})
    try:
        got = run_cli(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout + got.stderr


def resolve_requests(hub: HubServer) -> list[tuple[str, str]]:
    return [r for r in hub.requests if "/resolve/" in r[1]]


@pytest.mark.parametrize("switch", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_an_offline_pod_with_the_images_empty_cache_is_model_unavailable(hub, tmp_path, switch):
    code, out = cli(tmp_path / "hf", "check", "-f", str(manifest(tmp_path, {switch: "1"})), HF_ENDPOINT=hub.url)
    assert code == 1, out
    assert (f"predicted model_unavailable — model {MODEL}: {switch} is set in the pod and its Hugging Face cache "
            "(/root/.cache/huggingface/hub) is the container's own") in out, out
    assert "fits" not in out and resolve_requests(hub) == [], (out, hub.requests)  # the pod asks no Hub: nor does check


@pytest.mark.parametrize(("volume", "image", "why"), [
    (True, "vllm/vllm-openai:v0.19.0", "on the volume 'models' mounted at /data"),
    (False, "registry.example.com/ml/vllm-baked:0.19.0", "in the image 'registry.example.com/ml/vllm-baked:0.19.0'")])
def test_an_offline_pod_whose_cache_this_machine_cannot_see_is_no_prediction(hub, tmp_path, volume, image, why):
    path = manifest(tmp_path, {"HF_HUB_OFFLINE": "1", "HF_HOME": "/data/hf"}, volume=volume, image=image)
    code, out = cli(tmp_path / "hf", "check", "-f", str(path), HF_ENDPOINT=hub.url)
    assert code == 1 and "fits" not in out and "model_unavailable" not in out, out
    assert "model [unknown]: cannot predict: " in out and why in out, out
    assert resolve_requests(hub) == [], hub.requests


def test_the_pods_own_hf_endpoint_is_the_hub_asked(hub, tmp_path):
    """Before: this shell's HF_ENDPOINT (none: huggingface.co; here a closed port) was asked, and the pod that names
    its mirror was told to set HF_HUB_OFFLINE=1."""
    code, out = cli(tmp_path / "hf", "check", "-f", str(manifest(tmp_path, {"HF_ENDPOINT": hub.url})),
                    HF_ENDPOINT=CLOSED)
    assert code == 0 and "fits" in out, out
    assert ("GET", f"/{MODEL}/resolve/main/config.json") in hub.requests, hub.requests
    code, out = cli(tmp_path / "hf2", "check", "-f", str(manifest(tmp_path, {"HF_ENDPOINT": CLOSED})),
                    HF_ENDPOINT=hub.url)
    assert "fits" not in out and f"the Hub ({CLOSED}) is unreachable" in out, out
    assert "set HF_HUB_OFFLINE=1" not in out and "the pod's own HF_ENDPOINT" in out, out


def test_transformers_offline_in_this_shell_is_offline_to_estimate(hub, tmp_path):
    code, out = cli(tmp_path / "hf", "estimate", "--model", MODEL, "--gpu", "NVIDIA-L40S", *SERVE,
                    HF_ENDPOINT=hub.url, HF_HUB_OFFLINE="", TRANSFORMERS_OFFLINE="1")
    assert code != 0, out
    assert (f"model {MODEL}: not in the catalog nor the local Hugging Face cache, and TRANSFORMERS_OFFLINE is "
            "set") in out, out
    assert hub.requests == [], hub.requests


def test_the_transformers_5_release_is_the_one_whose_hub_words_change():
    from vllm_remedy.hub import pod_cache
    from vllm_remedy.sim.vllm_pod import hub_refusal

    assert pod_cache.TRANSFORMERS5_SINCE == hub_refusal.HTTPX_SINCE
