"""args set judges a value with the release the manifest's image runs, not the newest one (third review M6).

`--set max-model-len=16k` (or auto, or max-num-batched-tokens=8k) on a v0.8.3 manifest wrote a spelling that release
refuses at argument parsing; `16Ki` was refused naming "vLLM unknown (rules of the newest release...)".
"""

from __future__ import annotations

import pytest

MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata: {name: llm}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:TAG
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192"]
"""


@pytest.mark.parametrize(("setting", "why"), [
    ("max-model-len=16k", "max-model-len: vLLM 0.8.3 refuses '16k' at argument parsing"),
    ("max-model-len=auto", "max-model-len: auto needs vLLM 0.14.0 or newer (auto-fit, vllm#29431); vLLM 0.8.3 "
                           "refuses it"),
    ("max-num-batched-tokens=8k", "max-num-batched-tokens: vLLM 0.8.3 refuses '8k' at argument parsing"),
    ("max-model-len=16Ki", "max-model-len: vLLM 0.8.3 refuses '16Ki' at argument parsing"),
])
def test_a_spelling_the_manifests_release_refuses_is_not_written(cli, tmp_path, setting, why):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.replace("TAG", "v0.8.3"))
    got = cli("args", "set", "-f", str(path), "--set", setting)
    assert (got.returncode, got.stdout) == (2, ""), got.stdout
    assert got.stderr == f"vllm-remedy: error: --set {setting}: {why}" + got.stderr.partition(why)[2], got.stderr
    assert got.stderr.count("\n") == 1 and "unknown" not in got.stderr, got.stderr


def test_the_same_spelling_is_written_where_the_release_reads_it(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.replace("TAG", "v0.11.0"))
    got = cli("args", "set", "-f", str(path), "--set", "max-model-len=16k")
    assert got.returncode == 0 and '"--max-model-len", "16k"' in got.stdout, got.stdout + got.stderr
