"""A flag and its value in one argv item (``"--max-model-len 16384"``, a common YAML slip) through the real CLI.

CPython argparse (3.12 ``_parse_optional``): a word that starts with ``-`` but is no option string, has no
``--flag=`` match and no unique-prefix match, and contains a space "was meant to be a positional". So vLLM reads it
as the ``model_tag`` (``nargs='?'``) when no positional came before it (then a repository id no hub has), or refuses
it with the leftovers, ``unrecognized arguments: --max-model-len 16384`` (exit 2), on every release. Never an on/off
flag named ``max-model-len 16384``; an edit of the flag removes the item instead of writing the flag beside it
(hostile review, argparse round 2, finding 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge
from fixtures.vllm_deployment import LLAMA, manifest

SPACED = "--max-model-len 16384"
VERSIONS = ["0.7.3", "0.8.5", "0.11.0", "0.34.0"]

#: Every check case of this module as ("command" | "args", version), in one `check` run per output (``checked``):
#: the item after `vllm serve LLAMA` in `command`, or first in `args` under the image's own entrypoint.
CASES = [*(("command", version) for version in VERSIONS), ("args", "0.11.0")]


def _serve(tmp_path: Path, version: str, *words: str) -> str:
    """`vllm serve LLAMA <words>` in `command`: the item is a leftover after the model tag."""
    path = Path(manifest(tmp_path, [], image=f"vllm/vllm-openai:v{version}"))
    doc = yaml.safe_load(path.read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.pop("args")
    container["command"] = ["vllm", "serve", LLAMA, *words]
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[str, dict]]:
    """Every check case of this module as one Deployment of one file, judged by one real `check` run per output
    (two CLI starts instead of one or two per case: the suite's time budget), keyed like ``CASES``: (text, JSON
    item)."""
    tmp = tmp_path_factory.mktemp("spaced")
    docs = []
    for i, (where, version) in enumerate(CASES):
        path = (_serve(tmp, version, SPACED, "--gpu-memory-utilization", "0.9") if where == "command" else
                manifest(tmp, [SPACED, "--gpu-memory-utilization", "0.9"], image=f"vllm/vllm-openai:v{version}"))
        docs.append(yaml.safe_load(Path(path).read_text()))
        docs[-1]["metadata"]["name"] = f"case-{i}"
    items, blocks = judge(docs, tmp, text=True)
    return {key: (blocks[f"case-{i}"], items[f"case-{i}"]) for i, key in enumerate(CASES)}


@pytest.mark.parametrize("version", VERSIONS)
def test_check_refuses_the_item_in_argparses_words(checked, version):
    text, item = checked[("command", version)]
    said = f"flags [error]: vLLM {version} refuses '{SPACED}' at argument parsing (argparse: \"unrecognized " \
           f"arguments: {SPACED}\") (exit 2: the pod never starts)"
    assert said in text, text
    assert "no such flag" not in text, text
    assert item["prediction"]["outcome"] == "argument_refused", item["prediction"]


def test_args_show_reads_it_as_the_modules_unused_model_tag(checked, cli, tmp_path):
    """`args: [--model, M, "--max-model-len 16384", ...]` on vllm/vllm-openai:v0.11.0, whose ENTRYPOINT is the
    api_server module (docker/Dockerfile@v0.11.0): --model names the model and the item is the module's ``model_tag``
    positional (make_arg_parser@0.11.0), which the module does not use; never a flag."""
    path = manifest(tmp_path, [SPACED, "--gpu-memory-utilization", "0.9"])
    shown = cli("args", "show", "-f", path).stdout
    assert f"model: {LLAMA}\n" in shown, shown
    assert "max-model-len 16384: true" not in shown, shown
    text, _ = checked[("args", "0.11.0")]
    assert "--max-model-len is not set" in text and "refuses" not in text, text


@pytest.mark.parametrize("where", ["command", "args"])
def test_args_set_replaces_the_item_instead_of_keeping_it(cli, tmp_path, where):
    path = (_serve(tmp_path, "0.11.0", SPACED, "--gpu-memory-utilization", "0.9") if where == "command" else
            manifest(tmp_path, [SPACED, "--gpu-memory-utilization", "0.9"]))
    got = cli("args", "set", "-f", path, "--set", "max-model-len=16384")
    assert got.returncode == 0, got.stderr
    container = yaml.safe_load(got.stdout)["spec"]["template"]["spec"]["containers"][0]
    argv = container.get("command", []) + container.get("args", [])
    assert SPACED not in argv, argv
    assert argv[-2:] == ["--max-model-len", "16384"], argv
    assert LLAMA in argv, argv


def test_plan_reads_it_as_check_does(cli, tmp_path):
    path = _serve(tmp_path, "0.11.0", SPACED, "--gpu-memory-utilization", "0.9")
    got = cli("plan", "-f", path)
    assert f"(argparse: \"unrecognized arguments: {SPACED}\")" in got.stdout, got.stdout + got.stderr
    data = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert data["current"]["as_written"] == "argument_refused"
    assert data["steps"][0]["drop"] == [f"'{SPACED}'"], data["steps"][0]


def test_a_spaced_value_after_equals_is_still_the_flag(cli, tmp_path):
    """`--served-model-name=my model` names the option before `=` (argparse's `=`-split match comes first)."""
    path = manifest(tmp_path, ["--max-model-len", "4096", "--served-model-name=my model"])
    shown = cli("args", "show", "-f", path).stdout
    assert "served-model-name: my model" in shown, shown
    assert f"model: {LLAMA}" in shown, shown
