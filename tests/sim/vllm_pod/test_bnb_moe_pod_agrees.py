"""bitsandbytes on an MoE model before vLLM 0.10.0 is never sized as a 4-bit "fits" (hostile review 16, G4).

vLLM's ``BitsAndBytesConfig.get_quant_method`` has no method for ``FusedMoE`` before 0.10.0, and ``FusedMoE.__init__``
asserts on the None it gets (fused_moe/layer.py@0.8.5 l.499, @0.9.2 l.735): the start dies building the model. The
CLI (``estimate``, ``check``) says "cannot predict" naming the assertion, for ``--quantization bitsandbytes`` and for a
bitsandbytes checkpoint alike; 0.10.0 (``BitsAndBytesMoEMethod``) is still sized. The rehearsal pod judges the same
start through ``quant_support`` and does not serve it (its "cannot play this start" record). Real CLI, and a
rehearsal pod fed by the Hub-compatible server through HF_ENDPOINT."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, run_cli
from fixtures.hf_hub_server import Repo, hub_server, use_hub
from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster

MOE = "acme-corp/Qwen3-MoE-A3B"
QWEN3_MOE = json.loads((ROOT / "tests" / "data" / "configs" / "Qwen3-30B-A3B.json").read_text())
DSV2 = ROOT / "tests" / "data" / "configs" / "DeepSeek-V2-Lite.json"
BNB_CONFIG = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
RECORD = "[vllm-remedy rehearsal] cannot play this start"
ASSERTS = "'assert quant_method is not None'"


def estimate(config: Path, gpu: str, version: str, *extra: str) -> tuple[int, str]:
    got = run_cli("estimate", "--model-config", str(config), "--gpu", gpu, "--vllm-version", version,
                  "--max-model-len", "8192", *extra)
    return got.returncode, got.stdout + got.stderr


@pytest.mark.parametrize("version", ["0.8.5", "0.9.2"])
def test_quantization_bitsandbytes_on_moe_before_0_10_is_no_4bit_fit(version: str) -> None:
    code, out = estimate(ROOT / "tests" / "data" / "configs" / "Qwen3-30B-A3B.json", "NVIDIA-L40S", version,
                         "--quantization", "bitsandbytes")
    assert code != 0 and "fits" not in out and "cannot predict bitsandbytes on Qwen3MoeForCausalLM" in out, out
    assert ASSERTS in out, out
    code, out = estimate(DSV2, "NVIDIA-L4", version, "--quantization", "bitsandbytes")
    assert code != 0 and "fits" not in out and "cannot predict bitsandbytes on DeepseekV2ForCausalLM" in out, out


def test_a_bitsandbytes_moe_checkpoint_before_0_10_is_no_4bit_fit(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**QWEN3_MOE, "quantization_config": BNB_CONFIG}))
    code, out = estimate(config, "NVIDIA-L40S", "0.9.2")
    assert code != 0 and "fits" not in out and ASSERTS in out, out


def test_0_10_0_has_bitsandbytes_moe_and_is_still_sized() -> None:
    code, out = estimate(ROOT / "tests" / "data" / "configs" / "Qwen3-30B-A3B.json", "NVIDIA-L40S", "0.10.0",
                         "--quantization", "bitsandbytes")
    assert code == 0 and "fits" in out, out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MOE: Repo({"config.json": QWEN3_MOE})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        with l40s_pod_cluster(1) as c:
            yield c


def pod(version: str) -> dict[str, Any]:
    return {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve"],
                            "args": [MOE, "--quantization", "bitsandbytes", "--max-model-len", "8192"],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


def log(c: Cluster, name: str) -> str:
    try:
        return c.read_log("llm", name)
    except Exception:  # no container yet
        return ""


def test_the_rehearsal_pod_does_not_serve_it_and_check_agrees(cluster: Cluster, tmp_path: Path) -> None:
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "moe", "namespace": "llm"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "moe"}},
                    "template": {"metadata": {"labels": {"app": "moe"}}, "spec": pod("0.9.2")}}}
    path = tmp_path / "moe.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = run_cli("check", "-f", str(path))
    assert got.returncode == 1 and "fits" not in got.stdout and ASSERTS in got.stdout, got.stdout + got.stderr
    cluster.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "moe", "namespace": "llm"},
                                  "spec": pod("0.9.2")})
    assert cluster.wait_for(lambda: "Starting vLLM API server" in log(cluster, "moe") or RECORD in log(cluster, "moe"),
                            60), log(cluster, "moe")[-2000:]
    text = log(cluster, "moe")
    assert RECORD in text and "Starting vLLM API server" not in text and ASSERTS in text, text[-2000:]
