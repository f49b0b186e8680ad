"""`vllm-remedy check` and `plan` on a manifest whose args hold ``$$(X)`` or an undefined ``$(X)``: Kubernetes hands
vLLM the literal ``$(X)``, so the start is refused at argument parsing in argparse's words (exit 2 for the pod), never
"cannot predict: an argument taken from a variable may carry flags"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fixtures.vllm_deployment import LLAMA, manifest

#: the first image whose ENTRYPOINT is `vllm serve` (docker/Dockerfile@v0.11.1; v0.11.0 runs the api_server
#: module, which takes the model from --model): args-only containers give the model tag first, as it runs it
SERVE_IMAGE = "vllm/vllm-openai:v0.11.1"


def _write(tmp_path: Path, args: list[str], env: list[dict[str, Any]] | None = None) -> str:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=SERVE_IMAGE)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [LLAMA, *args]  # the model tag first, as the image runs it
    container["env"] = env or []
    path = tmp_path / "literal.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_check_refuses_an_undefined_variable_as_the_flag_value_vllm_receives(cli, tmp_path):
    got = cli("check", "-f", _write(tmp_path, ["--max-model-len", "$(MAX_LEN)"]))
    assert got.returncode == 1, got.stdout
    assert ("flags [error]: vLLM 0.11.1 refuses --max-model-len '$(MAX_LEN)' at argument parsing (argparse: "
            "\"argument --max-model-len: invalid human_readable_int value: '$(MAX_LEN)'\") (exit 2: the pod never "
            "starts)") in got.stdout, got.stdout
    assert "cannot predict" not in got.stdout


def test_check_and_plan_refuse_an_escaped_word_as_a_stray_positional(cli, tmp_path):
    path = _write(tmp_path, ["--max-model-len", "8192", "$$(EXTRA)"], [{"name": "EXTRA", "value": "--enforce-eager"}])
    got = cli("check", "-f", path)
    assert got.returncode == 1, got.stdout
    assert ("flags [error]: vLLM 0.11.1 refuses '$(EXTRA)' at argument parsing (argparse: \"unrecognized arguments: "
            "$(EXTRA)\") (exit 2: the pod never starts)") in got.stdout, got.stdout
    assert "smallest fix (planner): remove the word '$(EXTRA)'" in got.stdout
    plan = cli("plan", "-f", path)
    assert plan.returncode == 1, plan.stderr  # a change is needed
    assert "current:  argument_refused" in plan.stdout and "remove the word '$(EXTRA)'" in plan.stdout
