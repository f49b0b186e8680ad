"""`check` reads single-dash compilation options as each release's FlexibleArgumentParser and argparse do (hostile
review 2026-12-06, finding 1): ``-cc`` does not exist before 0.12.0 (engine/arg_utils.py@0.10.1/0.11.0 register
``--compilation-config`` with ``-O``), so ``-cc.cudagraph_mode=NONE`` is ``argument_refused`` there, not honoured;
``-O 4`` from 0.12.0 is left to argparse, which has no ``-O`` (utils/argparse_utils.py@0.12.0/0.14.0)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge
from fixtures.vllm_deployment import LLAMA, manifest

REFUSED = [
    (["-cc.cudagraph_mode=NONE"], "vllm/vllm-openai:v0.10.2", 'unrecognized arguments: -cc {"cudagraph_mode": "NONE"}'),
    (["-cc", '{"cudagraph_mode":"NONE"}'], "vllm/vllm-openai:v0.11.0",
     'unrecognized arguments: -cc {"cudagraph_mode":"NONE"}'),
    (["-cc.cudagraph_mode=NONE"], "vllm/vllm-openai:v0.9.0", "unrecognized arguments: -cc.cudagraph_mode=NONE"),
    (["-O", "4"], "vllm/vllm-openai:v0.13.0", "unrecognized arguments: -O 4"),
]

#: ``-cc`` is the short form from 0.12.0: read, not refused.
READ = (("-cc.cudagraph_mode=NONE",), "vllm/vllm-openai:v0.12.0")
#: Every (args, image) this module checks, in one `check` run (``checked``).
CASES = [*((tuple(args), image) for args, image, _ in REFUSED), READ]


def _workload(i: int, args: tuple[str, ...], image: str, tmp_path: Path) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L4", image=image)).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--model", LLAMA, "--max-model-len", "8192", *args]
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[tuple[str, ...], str], dict]:
    """Every case of this module as one Deployment of one file, judged by one real `check -o json` run (one CLI
    start instead of one per case: the suite's time budget), keyed by (args, image)."""
    tmp = tmp_path_factory.mktemp("short-options")
    by_name, _ = judge([_workload(i, *key, tmp) for i, key in enumerate(CASES)], tmp)
    return {key: by_name[f"case-{i}"] for i, key in enumerate(CASES)}


def _text(item: dict) -> str:
    return "\n".join(f"{f['check']} [{f['severity']}]: {f['reason']} | fix: {f['fix']}" for f in item["findings"])


@pytest.mark.parametrize(("args", "image", "said"), REFUSED)
def test_short_options_the_release_lacks_are_argument_refused(
    checked: dict, args: list[str], image: str, said: str
) -> None:
    item = checked[(tuple(args), image)]
    assert item["prediction"]["outcome"] == "argument_refused", _text(item)
    assert said in _text(item)


def test_cc_from_0_12_is_read(checked: dict) -> None:
    item = checked[READ]
    assert item["prediction"]["outcome"] != "argument_refused", _text(item)
