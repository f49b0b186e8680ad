"""`check` on a ``--load-format`` argparse takes but no model loader serves (hostile review 2026-12-06, finding 4):
from 0.10.1 the flag has no ``choices`` (``str | LoadFormats``) and ``get_model_loader`` raises ``ValueError: Load
format `gguf2` is not supported`` (model_executor/model_loader/__init__.py@0.10.1-0.34.0), so the start is
``config_refused`` in those words; before 0.10.1 argparse's choices refuse it (``argument_refused``); a registered
name, in any case (``LoadConfig`` lowercases it), starts. An infinite ``--swap-space`` is config_refused as
``CacheConfig.verify_with_parallel_config`` words it per release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server


def _check(cli, tmp_path: Path, fmt: str, image: str) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L40S", image=image)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--model", LLAMA, "--max-model-len", "8192", "--load-format", fmt]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]


@pytest.mark.parametrize(("fmt", "image", "outcome"), [
    ("gguf2", "vllm/vllm-openai:v0.10.2", "config_refused"),
    ("gguf2", "vllm/vllm-openai:v0.11.0", "config_refused"),
    ("bitsandbytes", "vllm/vllm-openai:v0.28.0", "config_refused"),  # left the registry in 0.28.0
    ("gguf2", "vllm/vllm-openai:v0.8.5", "argument_refused"),
    ("SafeTensors", "vllm/vllm-openai:v0.11.0", "fits"),
    ("hf", "vllm/vllm-openai:v0.12.0", "fits"),
])
def test_a_load_format_without_a_loader(cli, tmp_path: Path, fmt: str, image: str, outcome: str) -> None:
    item = _check(cli, tmp_path, fmt, image)
    assert item["prediction"]["outcome"] == outcome, json.dumps(item)
    if outcome == "config_refused":
        assert f"Load format `{fmt.lower()}` is not supported" in json.dumps(item)


def test_the_rehearsal_pod_does_not_start_it() -> None:
    c = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
         "args": [LLAMA, "--load-format", "gguf2"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(got, Refusal) and "Load format `gguf2` is not supported" in got.error, got
    c["args"] = [LLAMA, "--load-format", "safetensors"]
    assert isinstance(plan(find_server({"containers": [c]}), c, node), Launch)


@pytest.mark.parametrize(("value", "image", "said"), [
    ("inf", "vllm/vllm-openai:v0.6.3", "ValueError: Too large swap space. inf GiB out of the"),
    ("inf", "vllm/vllm-openai:v0.11.0", "ValueError: Too large swap space. inf GiB out of the"),
    ("inf", "vllm/vllm-openai:v0.16.0", "OverflowError: cannot convert float infinity to integer"),
])
def test_an_infinite_swap_space_is_config_refused(cli, tmp_path: Path, value: str, image: str, said: str) -> None:
    """CacheConfig.verify_with_parallel_config (config.py@0.6.3, config/cache.py@0.11.0; math.ceil from 0.14.0)."""
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L40S", image=image)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--model", LLAMA, "--max-model-len", "8192", "--swap-space", value]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    item = json.loads(cli("check", "-f", str(path), "-o", "json").stdout)["items"][0]
    assert item["prediction"]["outcome"] == "config_refused", json.dumps(item)
    assert said in json.dumps(item)
