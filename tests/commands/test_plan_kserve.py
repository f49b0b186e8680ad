"""`vllm-remedy plan -f` and `check` on a KServe InferenceService manifest: the vLLM command is the serving runtime's
(a ServingRuntime of the same file, else the built-in vLLM runtime) with ``model.args`` appended."""

from __future__ import annotations

import json
from pathlib import Path

ISVC = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama, namespace: llm}
spec:
  predictor:
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-L40S}
    model:
      modelFormat: {name: vllm}
      runtime: RUNTIME
      args: [meta-llama/Llama-3.1-8B-Instruct, --max-model-len, "131072"]
      resources: {limits: {nvidia.com/gpu: "1"}}
"""
RUNTIME = """\
---
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: vllm-half, namespace: llm}
spec:
  supportedModelFormats: [{name: vllm}]
  containers:
    - name: kserve-container
      image: vllm/vllm-openai:v0.8.5
      command: [vllm, serve]
      args: [--port, "8080", --gpu-memory-utilization, "0.5"]
"""


def test_plan_reads_model_args_after_the_runtimes_own(tmp_path: Path, cli) -> None:
    builtin = tmp_path / "builtin.yaml"
    builtin.write_text(ISVC.replace("      runtime: RUNTIME\n", ""))
    current = json.loads(cli("plan", "-f", str(builtin), "-o", "json").stdout)["current"]
    assert (current["outcome"], current["max_model_len"]) == ("fits", 131072)  # an L40S at vLLM's default 0.9
    custom = tmp_path / "custom.yaml"
    custom.write_text(ISVC.replace("RUNTIME", "vllm-half") + RUNTIME)
    current = json.loads(cli("plan", "-f", str(custom), "-o", "json").stdout)["current"]
    assert current["outcome"] == "max_len_exceeds_kv"  # the runtime's own 0.5 leaves too little KV cache
    checked = cli("check", str(custom))
    assert checked.returncode == 1
    assert checked.stdout.startswith(f"FAIL  {custom}: InferenceService/llm/llama container kserve-container")
