"""`args show` on a command with a variable-borne argument (`$(KVF)` in args, `$EXTRA` in a script): the variable is
named as a source of arguments the tools cannot see, never listed as if it were a vLLM flag."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from fixtures.vllm_deployment import LLAMA, manifest

#: the first image whose ENTRYPOINT is `vllm serve` (docker/Dockerfile@v0.11.1; v0.11.0 runs the api_server
#: module, which takes the model from --model): args-only containers give the model tag first, as it runs it
SERVE_IMAGE = "vllm/vllm-openai:v0.11.1"


def _with(tmp_path: Path, **container: object) -> str:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=SERVE_IMAGE)).read_text())
    doc["spec"]["template"]["spec"]["containers"][0].update(container)
    path = tmp_path / "hidden.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_show_names_the_variable_apart_from_the_flags(cli, tmp_path: Path) -> None:
    path = _with(
        tmp_path,
        args=[LLAMA, "--max-model-len", "16384", "$(KVF)"],
        env=[{"name": "KVF", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "args"}}}],
    )
    got = cli("args", "show", "-f", path)
    assert got.returncode == 0, got.stderr
    assert "hidden-argument" not in got.stdout
    assert "  flags:\n    max-model-len: 16384\n" in got.stdout
    assert "  arguments from variables (not read; they may carry flags): $(KVF)\n" in got.stdout


def test_show_json_keeps_flags_to_flags(cli, tmp_path: Path) -> None:
    path = _with(tmp_path, command=["/bin/sh", "-c"], args=[f"exec vllm serve {LLAMA} --max-model-len 16384 $EXTRA"])
    got = cli("args", "show", "-f", path, "-o", "json")
    assert got.returncode == 0, got.stderr
    item = json.loads(got.stdout)["items"][0]
    assert item["flags"] == {"max-model-len": "16384"}
    assert item["from_variables"] == ["$EXTRA"]


def test_plan_of_that_manifest_still_cannot_predict(cli, tmp_path: Path) -> None:
    """The variables are no flag, but the estimate is still unknown (``EngineSettings.from_flags(hidden=...)``): KVF
    comes from a Secret (an undefined KVF would reach vLLM as the literal word ``$(KVF)``: test_kubelet_literal)."""
    path = _with(tmp_path, args=[LLAMA, "--max-model-len", "16384", "$(KVF)"],
                 env=[{"name": "KVF", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "args"}}}])
    got = cli("plan", "-f", path)
    assert got.returncode != 0, got.stdout
    assert "cannot predict $(KVF): an argument taken from a variable may carry flags" in got.stderr


def test_show_reads_a_variable_kubernetes_expands_to_an_option(cli, tmp_path: Path) -> None:
    """A literal env value is expanded by the kubelet before vLLM parses argv: the word is that flag."""
    path = _with(
        tmp_path,
        args=[LLAMA, "--max-model-len", "16384", "$(KVF)"],
        env=[{"name": "KVF", "value": "--kv-cache-memory-bytes=60G"}],
    )
    got = cli("args", "show", "-f", path)
    assert got.returncode == 0, got.stderr
    assert "  flags:\n    max-model-len: 16384\n    kv-cache-memory-bytes: 60G\n" in got.stdout
    assert "arguments from variables" not in got.stdout


def test_check_says_how_to_make_a_hidden_argument_predictable(cli, tmp_path: Path) -> None:
    path = _with(tmp_path, args=[LLAMA, "--max-model-len", "16384", "$(KVF)"],
                 env=[{"name": "KVF", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "args"}}}])
    got = cli("check", "-f", path)
    assert "cannot predict: $(KVF): an argument taken from a variable" in got.stdout, got.stdout
    assert "fix: write those arguments out in args" in got.stdout and "does not size this feature" not in got.stdout
