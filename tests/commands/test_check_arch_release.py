"""``check`` and ``estimate`` (the real CLI) say vLLM's refusal for a model the manifest's release does not implement
(``vllm.arch_release``): Qwen3 on vllm/vllm-openai:v0.6.3, whose registry has no Qwen3ForCausalLM; gpt-oss's mxfp4 on
0.8.5, whose QuantizationMethods lack it. ``diagnose`` reads the quantization refusal back as ``config_refused``."""

from __future__ import annotations

import json

import yaml

from fixtures import sim_world


def manifest(tmp_path, tag: str):
    d = sim_world.deployment("qwen3", f"vllm/vllm-openai:{tag}", replicas=1)
    spec = d["spec"]["template"]["spec"]
    spec["containers"][0]["args"] = ["--model", "Qwen/Qwen3-8B", "--max-model-len", "16384"]
    spec["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L4"}
    path = tmp_path / f"qwen3-{tag}.yaml"
    path.write_text(yaml.safe_dump(d))
    return path


def test_check_says_vllms_refusal_for_qwen3_on_063(cli, tmp_path):
    got = cli("check", "-f", str(manifest(tmp_path, "v0.6.3")), "-o", "json")
    assert got.returncode == 1, got.stderr
    text = json.dumps(json.loads(got.stdout))
    assert "config_refused" in text
    assert "Model architectures ['Qwen3ForCausalLM'] are not supported for now" in text, text
    plain = cli("check", "-f", str(manifest(tmp_path, "v0.6.3")))
    assert "smallest fix (planner)" not in plain.stdout, plain.stdout  # no flag makes 0.6.3 run Qwen3


def test_check_sizes_qwen3_on_a_release_that_has_it(cli, tmp_path):
    got = cli("check", "-f", str(manifest(tmp_path, "v0.8.4")))
    assert "not supported for now" not in got.stdout and "config_refused" not in got.stdout, got.stdout


def test_estimate_refuses_gpt_oss_mxfp4_on_085_and_diagnose_reads_it(cli, tmp_path, data_dir):
    got = cli("estimate", "--model-config", str(data_dir / "configs/gpt-oss-20b.json"), "--gpu",
              "NVIDIA-H100-80GB-HBM3", "--max-model-len", "16384", "--vllm-version", "0.8.5", "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["outcome"] == "config_refused" and data["kv_cache_tokens"] is None, data
    assert data["refusal"].startswith("ValueError: Unknown quantization method: mxfp4. Must be one of ["), data
    log = tmp_path / "gpt-oss.log"
    log.write_text("INFO 08-20 18:03:40 api_server.py:712] vLLM API server version 0.8.5\n"
                   "Traceback (most recent call last):\n"
                   '  File "/usr/local/lib/python3.12/dist-packages/vllm/config.py", line 824, in '
                   '_verify_quantization\n'
                   "    raise ValueError(\n"
                   "ValueError: Unknown quantization method: mxfp4. Must be one of ['aqlm', 'awq', 'fp8'].\n")
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    diag = json.loads(got.stdout)
    assert diag["failure"] == "config_refused" and diag["failure_detail"]["method"] == "mxfp4", diag
