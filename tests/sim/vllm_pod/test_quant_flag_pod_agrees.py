"""A rehearsal pod judges ``--quantization`` and ``--load-format`` as the CLI does (``catalog.ModelSpec.at``'s typed
method, ``quant_support.refusal``'s load format, ``quant_bnb``), on the same Hub (tests/fixtures/hf_hub_server through
HF_ENDPOINT, never the real Hub):

- ``--quantization modelopt`` on 0.9.2 with hf_quant_config.json: the CLI sizes it as ModelOpt FP8
  (weight_utils.py@0.9.2 l.170-215); the pod serves it with those weights, not "cannot play this start";
- ``--quantization bitsandbytes`` without ``--load-format bitsandbytes`` on 0.7.3: the CLI says vLLM refuses it
  (engine/arg_utils.py@0.7.3 l.1106-1120); the pod dies on those words (it did before: its flags are read by
  ``EngineSettings``), which diagnose now reads as a refused config, not "unknown"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, Repo, hub_server, use_hub
from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster

MO, BNB = "acme-corp/ModelOpt-Fp8", "acme-corp/Bnb-Nf4"
MODELOPT = {"producer": {"name": "modelopt", "version": "0.15.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
BNB_CONFIG = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
              "bnb_4bit_use_double_quant": True}
RECORD = "[vllm-remedy rehearsal] cannot play this start"
LOAD_FORMAT = "only support 'bitsandbytes' load format, but got auto"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    repos = {MO: Repo({"config.json": SMOLLM2_CONFIG, "hf_quant_config.json": MODELOPT}),
             BNB: Repo({"config.json": {**SMOLLM2_CONFIG, "quantization_config": BNB_CONFIG}})}
    with pytest.MonkeyPatch.context() as mp, hub_server(repos) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        with l40s_pod_cluster(8) as c:
            yield c


def deployment(name: str, version: str, args: list[str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod(version, args)}}}


def pod(version: str, args: list[str]) -> dict[str, Any]:
    return {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve"],
                            "args": [*args, "--max-model-len", "4096"],
                            "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


def log(c: Cluster, name: str, previous: bool = False) -> str:
    try:
        return c.read_log("llm", name, previous=previous)
    except Exception:  # no container (or no earlier one) yet
        return ""


def checked(tmp_path: Path, name: str, version: str, args: list[str]) -> dict[str, Any]:
    """The CLI's prediction for the same container (`check -o json`)."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(deployment(name, version, args)))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]["prediction"]


def test_modelopt_under_the_flag_on_0_9_2_is_served_as_the_cli_sizes_it(cluster, cli, tmp_path: Path) -> None:
    """Before: the pod read the checkpoint without the flag (ModelOpt before 0.10.1 unmodelled): not played."""
    args = [MO, "--quantization", "modelopt"]
    predicted = checked(tmp_path, "mo", "0.9.2", args)
    assert predicted["outcome"] == "fits", predicted
    cluster.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mo", "namespace": "llm"},
                                  "spec": pod("0.9.2", args)})
    assert cluster.wait_for(lambda: "Starting vLLM API server" in log(cluster, "mo") or RECORD in log(cluster, "mo"),
                            60), log(cluster, "mo")[-2000:]
    text = log(cluster, "mo")
    assert RECORD not in text, text[-2000:]
    saved = tmp_path / "mo.log"
    saved.write_text(text)
    data = json.loads(cli("diagnose", "--log", str(saved), "-o", "json").stdout)
    assert data["failure"] == "none", data
    assert data["weights_gib"] == pytest.approx(predicted["estimate"]["weights_gib"], abs=0.01), (
        data["weights_gib"], predicted["estimate"]["weights_gib"])


def test_bitsandbytes_without_its_load_format_on_0_7_3_dies_in_vllms_words(cluster, cli, tmp_path: Path) -> None:
    """Before: the pod judged the start without --load-format and served it."""
    args = [BNB, "--quantization", "bitsandbytes"]
    predicted = checked(tmp_path, "bnb", "0.7.3", args)
    assert predicted["outcome"] == "config_refused" and LOAD_FORMAT in json.dumps(predicted), predicted
    cluster.store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bnb", "namespace": "llm"},
                                  "spec": pod("0.7.3", args)})
    assert cluster.wait_for(lambda: LOAD_FORMAT in log(cluster, "bnb", previous=True)
                            or "Starting vLLM API server" in log(cluster, "bnb"), 60), log(cluster, "bnb")[-2000:]
    text = log(cluster, "bnb", previous=True)
    assert LOAD_FORMAT in text, log(cluster, "bnb")[-2000:]
    saved = tmp_path / "bnb.log"
    saved.write_text(text)
    data = json.loads(cli("diagnose", "--log", str(saved), "-o", "json").stdout)
    assert data["failure"] == "config_refused", data

