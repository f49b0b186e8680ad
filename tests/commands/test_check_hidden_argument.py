"""An argument taken from a variable can carry flags vLLM reads (final probe, H1/H2): Kubernetes expands `$(VAR)` in
args, a shell expands and splits `$VAR`. Neither is followed, so check's prediction is unknown, never `ok`."""

from __future__ import annotations

from pathlib import Path

import yaml

from fixtures.vllm_deployment import LLAMA, manifest

#: the first image whose ENTRYPOINT is `vllm serve` (docker/Dockerfile@v0.11.1; v0.11.0 runs the api_server
#: module, which takes the model from --model): args-only containers give the model tag first, as it runs it
SERVE_IMAGE = "vllm/vllm-openai:v0.11.1"


def test_a_variable_borne_flag_in_args_makes_the_prediction_unknown(cli, tmp_path):
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=SERVE_IMAGE)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [LLAMA, "--max-model-len", "16384", "$(KVF)"]  # the model tag first, as the image runs it
    container["env"] = [{"name": "KVF", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "args"}}}]
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path))
    assert got.returncode == 1, got.stdout
    assert "flags [unknown]: cannot predict: $(KVF): an argument taken from a variable may carry flags" in got.stdout


def test_a_literal_variable_kubernetes_expands_is_read_as_the_flag_it_carries(cli, tmp_path):
    """The kubelet expands `$(KVF)` from a literal env value before vLLM parses argv: the pin it carries is sized
    (60 GiB on a 44 GiB L40S: the cache allocation fails), never `ok`."""
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=SERVE_IMAGE)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [LLAMA, "--max-model-len", "16384", "$(KVF)"]
    container["env"] = [{"name": "KVF", "value": "--kv-cache-memory-bytes=60G"}]
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path))
    assert got.returncode == 1, got.stdout
    assert "predicted kv_cache_allocation_oom" in got.stdout, got.stdout


def test_a_shell_variable_in_the_launch_script_makes_the_prediction_unknown(cli, tmp_path):
    doc = yaml.safe_load(Path(manifest(tmp_path, [])).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["/bin/sh", "-c"]
    container["args"] = [f"exec vllm serve {LLAMA} --max-model-len 16384 $EXTRA"]
    container["env"] = [{"name": "EXTRA", "value": "--kv-cache-memory-bytes 60G"}]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(path))
    assert got.returncode == 1, got.stdout
    assert "flags [unknown]: cannot predict: $EXTRA: an argument taken from a variable may carry flags" in got.stdout

