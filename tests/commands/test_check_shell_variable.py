"""`check` reads a plain ``$VAR`` / ``${VAR}`` in an ``sh -c`` script as the shell expands it from the pod's env
(hostile review 2026-12-06, finding 5): ``--max-model-len ${LEN}`` with ``LEN: "16384"`` in env is 16,384 tokens, not
"cannot predict"; a literal the script assigns before vLLM and a default form (``${LEN:-5}``) are read as sh reads them
(as the rehearsal pod does, hostile review 15b F7); a command substitution or a Secret-borne value stays unknown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest


def _check(cli, tmp_path: Path, script: str, env: list[dict[str, Any]]) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L40S", image="vllm/vllm-openai:v0.11.0")).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["command"], container["args"] = ["sh", "-c", script], []
    container["env"] = env
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]


@pytest.mark.parametrize("ref", ["${LEN}", "$LEN"])
def test_a_literal_env_value_is_expanded_by_the_shell(cli, tmp_path: Path, ref: str) -> None:
    item = _check(cli, tmp_path, f"exec vllm serve {LLAMA} --max-model-len {ref}", [{"name": "LEN", "value": "16384"}])
    assert item["prediction"]["outcome"] == "fits", json.dumps(item)
    assert item["prediction"]["estimate"]["max_model_len"] == 16384, json.dumps(item["prediction"])


@pytest.mark.parametrize(("script", "length"), [
    (f"LEN=2; exec vllm serve {LLAMA} --max-model-len $LEN", 2),  # the script's assignment wins over the env's
    (f"exec vllm serve {LLAMA} --max-model-len ${{LEN:-5}}", 16384),  # set and not empty: the env's value
])
def test_the_scripts_assignment_and_a_default_are_read_as_sh_reads_them(cli, tmp_path: Path, script: str,
                                                                         length: int) -> None:
    item = _check(cli, tmp_path, script, [{"name": "LEN", "value": "16384"}])
    assert item["prediction"]["estimate"]["max_model_len"] == length, json.dumps(item["prediction"])


@pytest.mark.parametrize(("script", "env"), [
    (f"LEN=$(cat /len); exec vllm serve {LLAMA} --max-model-len $LEN", [{"name": "LEN", "value": "16384"}]),
    (f"exec vllm serve {LLAMA} --max-model-len $LEN", [{"name": "LEN", "valueFrom": {"secretKeyRef": {"name": "s",
                                                                                                     "key": "k"}}}]),
])
def test_what_the_shell_may_change_stays_unknown(cli, tmp_path: Path, script: str, env: list[dict[str, Any]]) -> None:
    item = _check(cli, tmp_path, script, env)
    assert item["prediction"]["outcome"] == "unknown", json.dumps(item)
