"""`check` reads single-dash compilation options as each release's FlexibleArgumentParser and argparse do (hostile
review 2026-12-06, finding 1): ``-cc`` does not exist before 0.12.0 (engine/arg_utils.py@0.10.1/0.11.0 register
``--compilation-config`` with ``-O``), so ``-cc.cudagraph_mode=NONE`` is ``argument_refused`` there, not honoured;
``-O 4`` from 0.12.0 is left to argparse, which has no ``-O`` (utils/argparse_utils.py@0.12.0/0.14.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest


def _check(cli, tmp_path: Path, args: list[str], image: str) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L4", image=image)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--model", LLAMA, "--max-model-len", "8192", *args]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]


def _text(item: dict) -> str:
    return "\n".join(f"{f['check']} [{f['severity']}]: {f['reason']} | fix: {f['fix']}" for f in item["findings"])


@pytest.mark.parametrize(("args", "image", "said"), [
    (["-cc.cudagraph_mode=NONE"], "vllm/vllm-openai:v0.10.2", 'unrecognized arguments: -cc {"cudagraph_mode": "NONE"}'),
    (["-cc", '{"cudagraph_mode":"NONE"}'], "vllm/vllm-openai:v0.11.0",
     'unrecognized arguments: -cc {"cudagraph_mode":"NONE"}'),
    (["-cc.cudagraph_mode=NONE"], "vllm/vllm-openai:v0.9.0", "unrecognized arguments: -cc.cudagraph_mode=NONE"),
    (["-O", "4"], "vllm/vllm-openai:v0.13.0", "unrecognized arguments: -O 4"),
])
def test_short_options_the_release_lacks_are_argument_refused(
    cli, tmp_path: Path, args: list[str], image: str, said: str
) -> None:
    item = _check(cli, tmp_path, args, image)
    assert item["prediction"]["outcome"] == "argument_refused", _text(item)
    assert said in _text(item)


def test_cc_from_0_12_is_read(cli, tmp_path: Path) -> None:
    item = _check(cli, tmp_path, ["-cc.cudagraph_mode=NONE"], "vllm/vllm-openai:v0.12.0")
    assert item["prediction"]["outcome"] != "argument_refused", _text(item)
