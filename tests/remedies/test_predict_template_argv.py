"""The template prediction live drift, restore, game days and flag proposals use (``predict_template``) says what
check says of the same argv: a variable-borne argument is "cannot predict" (it may carry any flag), and argparse's
refusals (an invalid choice, a flag missing its value) are refused starts named as argparse names them, not
"cannot predict" from typing a value vLLM never gets to read."""

from __future__ import annotations

from pathlib import Path

import yaml

from fixtures.vllm_deployment import LLAMA, manifest
from vllm_remedy.remedies.predict import predict_template


def _template(tmp_path: Path, args: list[str], env: list[dict] | None = None) -> dict:
    return yaml.safe_load(Path(manifest(tmp_path, args, env=env)).read_text())["spec"]["template"]


def test_a_variable_borne_argument_is_not_sized(tmp_path):
    # `vllm serve MODEL ... $(KVF)`, KVF from a Secret: the word may carry any flag (here it would pin the cache)
    template = _template(tmp_path, [])
    container = template["spec"]["containers"][0]
    container["command"] = ["vllm", "serve"]
    container["args"] = [LLAMA, "--max-model-len", "4096", "$(KVF)"]
    container["env"] = [{"name": "KVF", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "args"}}}]
    got = predict_template(template)
    assert got.estimate is None and not got.refused, got
    assert got.note.startswith("cannot predict $(KVF)"), got.note


def test_an_invalid_choice_is_argparse_s_refusal(tmp_path):
    got = predict_template(_template(tmp_path, ["--max-model-len", "4096", "--kv-cache-dtype", "fp9"]))
    assert got.estimate is None and got.refused, got
    assert "invalid choice: 'fp9'" in got.note, got.note


def test_a_flag_missing_its_value_is_argparse_s_refusal(tmp_path):
    got = predict_template(_template(tmp_path, ["--enforce-eager", "--max-model-len"]))
    assert got.estimate is None and got.refused, got
    assert "argument --max-model-len: expected one argument" in got.note, got.note
