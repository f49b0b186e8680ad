"""`check` and `plan -f` on a legacy StoreBoolean flag followed by a word other than true/false (releases 0.5.5-0.8.3):
``vllm serve --enable-chunked-prefill MODEL`` gives the flag the model (argparse's ``nargs='?'``, no type or
choices: utils.py@0.8.0 ``StoreBoolean``), which raises ``ValueError: Invalid boolean value: MODEL. Expected 'true' or
'false'.``, exit 1 (``cmdline.refused.store_boolean_value``). Before, the tools read the word as the model tag and
predicted a start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge
from fixtures.vllm_deployment import LLAMA, manifest


def _invalid(word: str) -> str:
    return f"ValueError: Invalid boolean value: {word}. Expected 'true' or 'false'."


def _doc(tmp_path: Path, i: int, version: str, command: list[str]) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=f"vllm/vllm-openai:v{version}")).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.pop("args")
    container["command"] = command
    return doc


SERVE = ["vllm", "serve"]
REFUSED = [
    ("0.8.0", [*SERVE, "--enable-chunked-prefill", LLAMA, "--max-model-len", "4096"], LLAMA),
    ("0.8.3", [*SERVE, "--enable-chunked-prefill", LLAMA, "--max-model-len", "4096"], LLAMA),
    ("0.6.3", [*SERVE, LLAMA, "--max-model-len", "4096", "--disable-logprobs-during-spec-decoding", "on"], "on"),
    ("0.7.3", [*SERVE, LLAMA, "--max-model-len", "4096", "--enable-chunked-prefill=1"], "1"),
]
# where the flag takes no word (a BooleanOptionalAction from 0.8.5), true/false is a positional like any other: the
# model tag when it comes first, else left over (the api_server module has no positional to 0.9.2; from 0.11.1
# `vllm serve --model M` makes M the tag, utils/argparse_utils.py@0.12.0)
LEFT_OVER = [
    ("0.8.5", [*SERVE, "--enable-chunked-prefill", "true", LLAMA, "--max-model-len", "4096"], LLAMA),
    ("0.9.2", ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", LLAMA, "--max-model-len", "4096",
               "--enable-chunked-prefill", "false"], "false"),
    ("0.12.0", [*SERVE, "--model", LLAMA, "--max-model-len", "4096", "--enable-chunked-prefill", "false"], "false"),
]
STARTS = [
    ("0.8.0", [*SERVE, "--enable-chunked-prefill", "true", LLAMA, "--max-model-len", "4096"]),
    ("0.8.0", [*SERVE, "--enable-chunked-prefill", "--max-model-len", "4096", LLAMA]),
    ("0.8.0", [*SERVE, "--enable-prefix-caching", LLAMA, "--max-model-len", "4096"]),  # store_true
    ("0.8.5", [*SERVE, "--enable-chunked-prefill", LLAMA, "--max-model-len", "4096"]),  # BooleanOptionalAction
]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    tmp = tmp_path_factory.mktemp("storebool")
    cases = [(v, c) for v, c, _ in REFUSED] + STARTS + [(v, c) for v, c, _ in LEFT_OVER]
    return judge([_doc(tmp, i, v, c) for i, (v, c) in enumerate(cases)], tmp, text=True)


@pytest.mark.parametrize(("i", "case"), list(enumerate(REFUSED)))
def test_the_flag_takes_the_word_and_vllm_raises(checked, i, case):
    word = case[2]
    items, blocks = checked
    item, text = items[f"case-{i}"], blocks[f"case-{i}"]
    assert item["status"] == "fail" and item["prediction"]["outcome"] == "argument_refused", item
    assert f'before it starts: "{_invalid(word)}" (exit 1: the pod never starts)' in text, text
    assert "unrecognized arguments" not in text and "required: model_tag" not in text, text


@pytest.mark.parametrize(("i", "case"), list(enumerate(STARTS, start=len(REFUSED))))
def test_no_refusal_where_the_flag_takes_no_such_word(checked, i, case):
    item, text = checked[0][f"case-{i}"], checked[1][f"case-{i}"]
    assert item["prediction"]["outcome"] != "argument_refused", text
    assert "Invalid boolean value" not in text, text


@pytest.mark.parametrize(("i", "case"), list(enumerate(LEFT_OVER, start=len(REFUSED) + len(STARTS))))
def test_true_false_is_a_positional_where_the_flag_takes_none(checked, i, case):
    word = case[2]
    item, text = checked[0][f"case-{i}"], checked[1][f"case-{i}"]
    assert item["prediction"]["outcome"] == "argument_refused", text
    assert f'(argparse: "unrecognized arguments: {word}")' in text, text


def test_plan_says_how_to_write_it(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(_doc(tmp_path, 0, "0.8.0", REFUSED[0][1])))
    got = cli("plan", "-f", str(path), "--model", LLAMA)  # argv names none: the flag took it
    assert got.returncode == 1, got.stdout + got.stderr
    assert _invalid(LLAMA) in got.stdout and f"name the model first (vllm serve {LLAMA} ..." in got.stdout, got.stdout
    data = json.loads(cli("plan", "-f", str(path), "--model", LLAMA, "-o", "json").stdout)
    assert data["verdict"] == "refused_as_written", data
