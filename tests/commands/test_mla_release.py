"""DeepSeek-V2-Lite's KV cache as each vLLM release sizes it (``vllm.memory.mla_release``), through the real `estimate`
and `check` CLIs: no MLA before 0.7.1 (K and V of every head, padded to 256 through 0.6.x, 192 at 0.7.0), MLA turned
off for AWQ on 0.7.1/0.7.2, and VLLM_MLA_DISABLE=1 (estimate --vllm-mla-disable, check: the pod's env). Hostile
review 10 (findings 1, 2) found every release sized as the 31,104-byte MLA latent: 1.4M tokens and "fits 8.55x" at
163,840 on 0.6.3, where vLLM holds about 98k tokens and refuses the length.

Bytes per token (27 layers, 16 KV heads, bf16): 27 x 2 x 16 x 256 x 2 = 442,368 (0.5.5-0.6.x), 27 x 2 x 16 x 192 x 2
= 331,776 (0.7.0; MLA off), 27 x (512 + 64) x 2 = 31,104 (MLA). The figure is read back as KV bytes / tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_cli
from fixtures.vllm_deployment import manifest

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "DeepSeek-V2-Lite.json"
H100 = ("--gpu", "NVIDIA-H100-80GB-HBM3", "--max-model-len", "163840")
PADDED, HEAD_192, LATENT = 442_368, 331_776, 31_104
# 0.7.x's V0 cache engine rounds the 576-value latent up to 256 bytes of bf16: 640 values a layer (``mla_cache``)
ALIGNED = 27 * 640 * 2
GIB = 2**30


def _estimate(config: Path, *extra: str) -> dict:
    got = run_cli("estimate", "--model-config", str(config), *H100, *extra, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    return json.loads(got.stdout)


def _bytes_per_token(doc: dict) -> float:
    return doc["kv_cache_gib"] * GIB / doc["kv_cache_tokens"]  # kv_cache_gib is rounded to 0.01 GiB


@pytest.fixture(scope="module")
def awq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """V2-Lite with an AWQ quantization_config (the shape of a published AutoAWQ config)."""
    config = json.loads(CONFIG.read_text())
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True,
                                     "version": "gemm"}
    path = tmp_path_factory.mktemp("awq") / "config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(("version", "per_token", "outcome"), [
    ("0.5.5", PADDED, "max_len_exceeds_kv"),  # config.py@0.5.5 get_head_size: 256 for deepseek_v2
    ("0.6.3", PADDED, "max_len_exceeds_kv"),
    ("0.7.0", HEAD_192, "max_len_exceeds_kv"),  # config.py@0.7.0: qk_rope + qk_nope
    ("0.7.3", ALIGNED, "fits"),  # MLA
])
def test_estimate_sizes_the_cache_each_release_keeps(version, per_token, outcome):
    got = _estimate(CONFIG, "--vllm-version", version)
    assert got["outcome"] == outcome, got
    assert _bytes_per_token(got) == pytest.approx(per_token, rel=0.005), got


def test_awq_turns_mla_off_on_0_7_2_only(awq):
    """config.py@0.7.2 use_mla: "MLA is not supported with %s quantization. Disabling MLA."; 0.7.3 drops the check."""
    assert _bytes_per_token(_estimate(awq, "--vllm-version", "0.7.2")) == pytest.approx(HEAD_192, rel=0.005)
    assert _bytes_per_token(_estimate(awq, "--vllm-version", "0.7.3")) == pytest.approx(ALIGNED, rel=0.005)


def test_estimate_takes_vllm_mla_disable():
    off = _estimate(CONFIG, "--vllm-version", "0.30.0", "--vllm-mla-disable", "1")
    assert off["outcome"] == "max_len_exceeds_kv" and off["vllm_mla_disable"] == "1", off
    assert _bytes_per_token(off) == pytest.approx(HEAD_192, rel=0.005), off
    on = _estimate(CONFIG, "--vllm-version", "0.30.0", "--vllm-mla-disable", "0")
    assert on["outcome"] == "fits" and _bytes_per_token(on) == pytest.approx(LATENT, rel=0.005), on
    bad = run_cli("estimate", "--model-config", str(CONFIG), *H100, "--vllm-version", "0.30.0",
                  "--vllm-mla-disable", "true")
    assert bad.returncode == 0 and bad.stdout.startswith(  # int("true") raises in use_mla: refused (hostile 11 #4)
        "outcome             config_refused: VLLM_MLA_DISABLE='true': vLLM 0.30.0 reads it as bool(int(value))"), \
        bad.stdout + bad.stderr


def test_check_reads_vllm_mla_disable_from_the_pods_env(tmp_path):
    """One file, three Deployments on 0.30.0: unset (fits), VLLM_MLA_DISABLE=1 (max_len_exceeds_kv, as estimate
    says), and the value in a Secret (cannot predict)."""
    envs = {"unset": None, "disabled": [{"name": "VLLM_MLA_DISABLE", "value": "1"}],
            "secret": [{"name": "VLLM_MLA_DISABLE", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}
    docs = []
    for name, env in envs.items():
        path = manifest(tmp_path, ["--max-model-len", "163840", "--trust-remote-code"], gpu="NVIDIA-H100-80GB-HBM3",
                        image="vllm/vllm-openai:v0.30.0", model="deepseek-ai/DeepSeek-V2-Lite", env=env)
        doc = yaml.safe_load(Path(path).read_text())
        doc["metadata"]["name"] = name
        docs.append(doc)
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "dsl.json").write_text(CONFIG.read_text())
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: {ROOT / 'policies' / 'default.yaml'}\n"
                      "target: {models: [deepseek-ai/DeepSeek-V2-Lite]}\nknown_good: []\n"
                      "flags: {max-model-len: {min: 4096, max: 163840, preferred: 163840}}\n"
                      "gpu: {products: [NVIDIA-H100-80GB-HBM3], per_pod: 1}\nmodel_config: {path: dsl.json}\n")
    got = run_cli("check", "-f", str(tmp_path / "all.yaml"), "--policy", str(policy), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    items = {item["name"]: item for item in json.loads(got.stdout)["items"]}
    assert items["unset"]["prediction"]["estimate"]["outcome"] == "fits", items["unset"]
    disabled = items["disabled"]["prediction"]["estimate"]
    assert disabled["outcome"] == "max_len_exceeds_kv", disabled
    typed = _estimate(CONFIG, "--vllm-version", "0.30.0", "--vllm-mla-disable", "1")
    assert disabled["kv_cache_tokens"] == typed["kv_cache_tokens"], (disabled, typed)
    secret = items["secret"]["prediction"]
    assert secret["estimate"] is None and secret["note"].startswith(
        "cannot predict VLLM_MLA_DISABLE: it decides whether MLA runs and its value cannot be read"), secret
