"""A redirect after a flag that takes a value in an ``sh -c`` launch (hostile review, argv finding 6): the redirect
is no argument, so vLLM gets the flag without its value and argparse stops it (exit 2, ``expected one argument``):
argument_refused, not "cannot predict", and a redirect is quoted whole where a message names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest


def _script(tmp_path: Path, script: str) -> str:
    path = Path(manifest(tmp_path, []))
    doc = yaml.safe_load(path.read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["/bin/sh", "-c"]
    container["args"] = [script]
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("tail", ["2>&1 | tee /tmp/vllm.log", "2>/dev/null", ">>/tmp/log 2>&1"])
def test_a_flag_whose_value_a_redirect_took_is_refused_at_parsing(cli, tmp_path, tail):
    path = _script(tmp_path, f"vllm serve {LLAMA} --max-model-len 4096 --max-num-batched-tokens {tail}")
    got = cli("check", "-f", path)
    assert got.returncode == 1, got.stdout + got.stderr
    assert ("flags [error]: vLLM 0.11.0 refuses --max-num-batched-tokens at argument parsing (argparse: \"argument "
            "--max-num-batched-tokens: expected one argument\")") in got.stdout, got.stdout
    item = json.loads(cli("check", "-f", path, "-o", "json").stdout)["items"][0]
    assert item["prediction"]["outcome"] == "argument_refused", item["prediction"]

