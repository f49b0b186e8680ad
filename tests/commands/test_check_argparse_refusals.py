"""`check` on argv that vLLM's argument parser refuses (exit 2 before anything starts): a value outside a flag's
choices, a flag without its value, a stray positional argument, an empty integer (each release's ``int`` /
``human_readable_int(_or_auto)`` strips the text and ends in ``int('')``). Each is ``argument_refused`` in vLLM's own
argparse words, never "cannot predict" and never a pass (hostile review, findings 2-4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest


def _check(
    cli, tmp_path: Path, args: list[str], image: str = "vllm/vllm-openai:v0.11.0", command: list[str] | None = None
) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=image)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = args
    if command is not None:
        container["command"] = command
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]


def _reasons(item: dict) -> str:
    return "\n".join(f"{f['check']} [{f['severity']}]: {f['reason']}" for f in item["findings"])


CHOICES = [
    (
        ["--kv-cache-dtype", "fp9"],
        "vllm/vllm-openai:v0.11.0",
        "argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'bfloat16', 'fp8', 'fp8_e4m3', "
        "'fp8_e5m2', 'fp8_inc')",
    ),
    (
        ["--dtype", "float17"],
        "vllm/vllm-openai:v0.11.0",
        "argument --dtype: invalid choice: 'float17' (choose from 'auto', 'bfloat16', 'float', 'float16', 'float32', "
        "'half')",
    ),
    (
        ["--dtype", "float17"],
        "vllm/vllm-openai:v0.8.5",
        "argument --dtype: invalid choice: 'float17' (choose from 'auto', 'half', 'float16', 'bfloat16', 'float', "
        "'float32')",
    ),
]


@pytest.mark.parametrize(("extra", "image", "said"), CHOICES)
def test_a_value_outside_the_choices_is_refused_at_parsing(
    cli, tmp_path: Path, extra: list[str], image: str, said: str
) -> None:
    item = _check(cli, tmp_path, ["--model", LLAMA, "--max-model-len", "8192", *extra], image)
    assert item["prediction"]["outcome"] == "argument_refused", _reasons(item)
    assert said in _reasons(item)
    assert "cannot predict" not in _reasons(item)


@pytest.mark.parametrize("tail", [["--max-model-len"], ["--max-model-len", "--enforce-eager"]])
def test_a_flag_without_its_value_is_refused_at_parsing(cli, tmp_path: Path, tail: list[str]) -> None:
    item = _check(cli, tmp_path, ["--model", LLAMA, *tail])
    assert item["prediction"]["outcome"] == "argument_refused", _reasons(item)
    assert "argument --max-model-len: expected one argument" in _reasons(item)
    assert "cannot predict" not in _reasons(item)


def test_a_stray_positional_is_refused_at_parsing(cli, tmp_path: Path) -> None:
    item = _check(cli, tmp_path, [LLAMA, "extra-word", "--max-model-len", "8192"], command=["vllm", "serve"])
    assert item["prediction"]["outcome"] == "argument_refused", _reasons(item)
    assert "unrecognized arguments: extra-word" in _reasons(item)


def test_a_positional_to_the_api_server_of_085_is_refused(cli, tmp_path: Path) -> None:
    """0.8.5's api_server parser has no positional at all (model_tag joined make_arg_parser later)."""
    item = _check(
        cli,
        tmp_path,
        ["--model", LLAMA, "--max-model-len", "8192", "extra"],
        "vllm/vllm-openai:v0.8.5",
        command=["python3", "-m", "vllm.entrypoints.openai.api_server"],
    )
    assert item["prediction"]["outcome"] == "argument_refused", _reasons(item)
    assert "unrecognized arguments: extra" in _reasons(item)


@pytest.mark.parametrize(
    ("image", "type_name"),
    [
        ("vllm/vllm-openai:v0.8.3", "int"),
        ("vllm/vllm-openai:v0.11.0", "human_readable_int"),
        ("vllm/vllm-openai:v0.14.0", "human_readable_int_or_auto"),
    ],
)
def test_an_empty_max_model_len_is_refused_at_parsing(cli, tmp_path: Path, image: str, type_name: str) -> None:
    item = _check(cli, tmp_path, ["--model", LLAMA, "--max-model-len", ""], image)
    assert item["prediction"]["outcome"] == "argument_refused", _reasons(item)
    assert f"argument --max-model-len: invalid {type_name} value: ''" in _reasons(item)
    assert "cannot predict" not in _reasons(item)
