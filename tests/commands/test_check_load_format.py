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

from fixtures.check_batch import judge
from fixtures.vllm_deployment import LLAMA, manifest
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server

LOAD_FORMATS = [
    ("gguf2", "vllm/vllm-openai:v0.10.2", "config_refused"),
    ("gguf2", "vllm/vllm-openai:v0.11.0", "config_refused"),
    ("bitsandbytes", "vllm/vllm-openai:v0.28.0", "config_refused"),  # left the registry in 0.28.0
    ("gguf2", "vllm/vllm-openai:v0.8.5", "argument_refused"),
    ("SafeTensors", "vllm/vllm-openai:v0.11.0", "fits"),
    ("hf", "vllm/vllm-openai:v0.12.0", "fits"),
]
SWAP_SPACES = [
    ("inf", "vllm/vllm-openai:v0.6.3", "ValueError: Too large swap space. inf GiB out of the"),
    ("inf", "vllm/vllm-openai:v0.11.0", "ValueError: Too large swap space. inf GiB out of the"),
    ("inf", "vllm/vllm-openai:v0.16.0", "OverflowError: cannot convert float infinity to integer"),
]

#: Every (flags after --max-model-len 8192, image) this module checks, in one `check` run (``checked``).
CASES = [
    *((("--load-format", fmt), image) for fmt, image, _ in LOAD_FORMATS),
    *((("--swap-space", value), image) for value, image, _ in SWAP_SPACES),
]


def _workload(i: int, flags: tuple[str, ...], image: str, tmp_path: Path) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L40S", image=image)).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--model", LLAMA, "--max-model-len", "8192", *flags]
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[tuple[str, ...], str], dict]:
    """Every case of this module as one Deployment of one file, judged by one real `check -o json` run (one CLI
    start instead of one per case: the suite's time budget), keyed like ``CASES``."""
    tmp = tmp_path_factory.mktemp("load_format")
    keys = list(dict.fromkeys(CASES))
    items, _ = judge([_workload(i, *key, tmp) for i, key in enumerate(keys)], tmp)
    return {key: items[f"case-{i}"] for i, key in enumerate(keys)}


@pytest.mark.parametrize(("fmt", "image", "outcome"), LOAD_FORMATS)
def test_a_load_format_without_a_loader(checked: dict, fmt: str, image: str, outcome: str) -> None:
    item = checked[(("--load-format", fmt), image)]
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


@pytest.mark.parametrize(("value", "image", "said"), SWAP_SPACES)
def test_an_infinite_swap_space_is_config_refused(checked: dict, value: str, image: str, said: str) -> None:
    """CacheConfig.verify_with_parallel_config (config.py@0.6.3, config/cache.py@0.11.0; math.ceil from 0.14.0)."""
    item = checked[(("--swap-space", value), image)]
    assert item["prediction"]["outcome"] == "config_refused", json.dumps(item)
    assert said in json.dumps(item)
