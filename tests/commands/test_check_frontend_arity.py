"""`check` counts the frontend flags' words per release (hostile review 2026-12-06, finding 2): in 0.8.5
``--api-key`` takes one word (entrypoints/openai/cli_args.py@0.8.5 ``type=optional_type(str)``, a list from 0.10.1),
``--middleware`` is ``action="append"`` and ``--allowed-origins`` ``type=json.loads`` (one word in every release read),
so the word after them is the model tag, not "no model"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest


def _check(cli, tmp_path: Path, args: list[str], image: str) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L40S", image=image)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["vllm", "serve"]
    container["args"] = args
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]


@pytest.mark.parametrize("flag", [["--api-key", "x"], ["--middleware", "x"], ["--allowed-origins", '["x"]']])
@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.11.0"])
def test_a_one_word_frontend_flag_leaves_the_model_tag(cli, tmp_path: Path, flag: list[str], image: str) -> None:
    if flag[0] == "--api-key" and image.endswith("v0.11.0"):
        pytest.skip("nargs='+' there: the model tag is the key's second word, as vLLM reads it")
    item = _check(cli, tmp_path, [*flag, LLAMA, "--max-model-len", "16384"], image)
    text = json.dumps(item)
    assert "names no model" not in text, text
    assert item["prediction"]["outcome"] == "fits", text
