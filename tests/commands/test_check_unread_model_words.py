"""`check`'s "cannot predict" line for a model it cannot have: a variable's name is no repository id to correct, and
an unreachable Hub with nothing cached is not helped by HF_HUB_OFFLINE (nothing to read offline) but by the policy's
model_config; with a cached copy the offline advice stands."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_ID, hub_server

SCRIPT = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: shv, namespace: llm}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: shv}}}}
  template:
    metadata: {{labels: {{app: shv}}}}
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-L40S}}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.1
        {run}
        resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""


def check(tmp_path: Path, run: str, **env: str):
    manifest = tmp_path / "d.yaml"
    manifest.write_text(SCRIPT.format(run=run))
    saved = dict(os.environ)
    os.environ.update({"HF_HOME": str(tmp_path / "hf"), **env})
    try:
        return run_cli("check", "-f", str(manifest))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_a_shell_variable_of_the_script_is_named_as_unread_not_as_a_bad_id(tmp_path):
    got = check(tmp_path, 'command: [sh, -c]\n        args: ["exec vllm serve \\"$MODEL\\" --max-model-len 8192"]',
                HF_HUB_OFFLINE="1")
    assert got.returncode == 1, got.stderr
    assert ("cannot predict: model $MODEL: taken from a variable this tool cannot read (a shell variable of the sh -c "
            "script, or a $(VAR) from a Secret or unchecked ConfigMap), not a repository id") in got.stdout
    assert "not a Hugging Face repository id" not in got.stdout


def test_a_secret_variable_is_named_as_unread(tmp_path):
    run = ('command: [vllm, serve]\n        args: ["$(MODEL)", --max-model-len, "8192"]\n'
           '        env: [{name: MODEL, valueFrom: {secretKeyRef: {name: s, key: model}}}]')
    got = check(tmp_path, run, HF_HUB_OFFLINE="1")
    assert got.returncode == 1, got.stderr
    assert "model $(MODEL): taken from a variable this tool cannot read" in got.stdout


def test_an_unreachable_hub_with_nothing_cached_advises_the_policys_model_config(tmp_path):
    with hub_server({}) as gone:
        url = gone.url
    got = check(tmp_path, f'command: [vllm, serve]\n        args: [{SMOLLM2_ID}, --max-model-len, "8192"]',
                HF_HUB_OFFLINE="0", HF_ENDPOINT=url)
    assert got.returncode == 1, got.stderr
    assert (f"the Hub ({url}) is unreachable (Connection refused) and the local Hugging Face cache has no config.json; "
            "give the policy a `model_config` (a file or ConfigMap) for clusters without a Hub") in got.stdout
    assert "HF_HUB_OFFLINE=1" not in got.stdout
