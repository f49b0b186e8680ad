"""`check` on literal values vLLM's config classes refuse before loading anything (``memory.config_values``): each is
``config_refused`` with vLLM's own words, where the release's source was read, never "cannot predict ... write the
memory flags as literal values" (hostile review, finding 4). Releases whose config does not check the value stay
unknown, with advice that fits a literal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge
from fixtures.vllm_deployment import manifest

REFUSED = [
    (["--gpu-memory-utilization", "1.5"], "vllm/vllm-openai:v0.8.5",
     "ValueError: GPU memory utilization must be less than 1.0. Got 1.5."),
    (["--gpu-memory-utilization", "1.5"], "vllm/vllm-openai:v0.11.0",
     "1 validation error for CacheConfig Value error, GPU memory utilization must be less than 1.0. Got 1.5."),
    (["--gpu-memory-utilization", "1.5"], "vllm/vllm-openai:v0.12.0", "1 validation error for CacheConfig "
     "gpu_memory_utilization Input should be less than or equal to 1 [type=less_than_equal, input_value=1.5"),
    (["--gpu-memory-utilization", "0"], "vllm/vllm-openai:v0.34.0", "gpu_memory_utilization Input should be greater "
     "than 0 [type=greater_than, input_value=0.0, input_type=float]"),
    (["--max-num-seqs", "0"], "vllm/vllm-openai:v0.12.0", "1 validation error for SchedulerConfig max_num_seqs Input "
     "should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]"),
    (["--max-model-len", "0"], "vllm/vllm-openai:v0.13.0", "1 validation error for ModelConfig max_model_len Input "
     "should be greater than 0 [type=greater_than, input_value=0, input_type=int]"),
    # from 0.14.0 -O.k=v is an optimization level (no longer -cc.k=v), which VllmConfig's IntEnum refuses
    (["-O.cudagraph_mode=NONE"], "vllm/vllm-openai:v0.14.0", "1 validation error for VllmConfig optimization_level "
     "Input should be 0, 1, 2 or 3 [type=enum, input_value='.cudagraph_mode=NONE', input_type=str]"),
    (["-O5"], "vllm/vllm-openai:v0.34.0", "Input should be 0, 1, 2 or 3 [type=enum, input_value='5'"),
    # from 0.13.0 --quantization is ``QuantizationMethods | str``: ModelConfig refuses an unknown name, not argparse
    (["--quantization", "nonsense"], "vllm/vllm-openai:v0.20.0", "Unknown quantization method: nonsense"),
]
UNCHECKED = (["--max-model-len", "0"], "vllm/vllm-openai:v0.11.0")

#: Every (args after --max-model-len 8192, image) this module checks, in one `check` run (``checked``).
CASES = [*((tuple(args), image) for args, image, _ in REFUSED), (tuple(UNCHECKED[0]), UNCHECKED[1])]


def _workload(i: int, args: tuple[str, ...], image: str, tmp_path: Path) -> dict:
    path = manifest(tmp_path, ["--max-model-len", "8192", *args], gpu="NVIDIA-L4", image=image)
    doc = yaml.safe_load(Path(path).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[tuple[str, ...], str], dict]:
    """Every case of this module as one Deployment of one file, judged by one real `check -o json` run (one CLI
    start instead of one per case: the suite's time budget), keyed like ``CASES``."""
    tmp = tmp_path_factory.mktemp("literals")
    keys = list(dict.fromkeys(CASES))
    items, _ = judge([_workload(i, *key, tmp) for i, key in enumerate(keys)], tmp)
    assert any(item["status"] == "fail" for item in items.values()), items  # the file's exit 1
    return {key: items[f"case-{i}"] for i, key in enumerate(keys)}


def _check(checked: dict, args: list[str], image: str) -> dict:
    """One case's item; every case fails the check (what each file's exit 1 said alone)."""
    item = checked[(tuple(args), image)]
    assert item["status"] == "fail", json.dumps(item)
    return item


def _text(item: dict) -> str:
    return "\n".join(f"{f['check']} [{f['severity']}]: {f['reason']} | fix: {f['fix']}" for f in item["findings"])


@pytest.mark.parametrize(("args", "image", "said"), REFUSED)
def test_a_literal_the_config_refuses_is_config_refused(checked: dict, args: list[str], image: str,
                                                        said: str) -> None:
    item = _check(checked, args, image)
    assert item["prediction"]["outcome"] == "config_refused", _text(item)
    assert said in _text(item)
    assert "cannot predict" not in _text(item)


def test_a_zero_length_the_release_does_not_check_is_unknown_without_literal_advice(checked: dict) -> None:
    item = _check(checked, *UNCHECKED)
    assert item["prediction"]["outcome"] == "unknown", _text(item)
    assert "write the memory flags as literal values" not in _text(item)
