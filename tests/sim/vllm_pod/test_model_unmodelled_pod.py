"""A rehearsal pod whose model the memory model cannot size (tests/fixtures/hf_hub_server through HF_ENDPOINT, never
the real Hub) never prints the tool's "cannot predict" as vLLM's exception, nor vLLM's "Invalid repository ID" for a
repository that served its config (``sim.vllm_pod.unmodelled_start``):

- a family vLLM runs but the memory model does not size (Qwen3-Next's linear attention on 0.34.0), a GPTQ ``dynamic``
  checkpoint on 0.7.2 and a ModelOpt checkpoint on 0.9.0: the pod logs its start, then one WARNING record of the
  rehearsal's own, and stays running, not Ready, never restarted;
- what the release refuses, in its own words: Qwen3-Next on 0.6.6 (registered from 0.10.2; no Transformers backend to
  fall back on before 0.7.2, ``registry``), a quantization method no
  release knows ("Unknown quantization method: foo_quant. Must be one of [...]", config/model.py@0.34.0 l.1484-1489,
  config.py@0.8.5 l.822-826), which ``diagnose`` reads as a refused config, not a missing model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster

NEXT, UNK, GDYN, MO = ("acme-corp/Next-Unsized", "acme-corp/Unknown-Quant", "acme-corp/Gptq-Dynamic",
                       "acme-corp/ModelOpt-Old")
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True,
        "checkpoint_format": "gptq", "dynamic": {"-:model\\.layers\\.(1?[0-9])\\..*": {}}}
MODELOPT = {"producer": {"name": "modelopt", "version": "0.27.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
RECORD = "[vllm-remedy rehearsal] cannot play this start"
INVALID = "Invalid repository ID or local directory specified"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    repos = {NEXT: Repo({"config.json": {**SMOLLM2_CONFIG, "architectures": ["Qwen3NextForCausalLM"],
                                         "model_type": "qwen3_next"}}),
             UNK: Repo({"config.json": {**SMOLLM2_CONFIG, "quantization_config": {"quant_method": "foo_quant"}}}),
             GDYN: Repo({"config.json": {**SMOLLM2_CONFIG, "quantization_config": GPTQ}}),
             MO: Repo({"config.json": SMOLLM2_CONFIG, "hf_quant_config.json": MODELOPT})}
    with pytest.MonkeyPatch.context() as mp, hub_server(repos) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def cluster(hub: HubServer) -> Iterator[Cluster]:
    with l40s_pod_cluster(8) as c:
        yield c


def pod(name: str, version: str, model: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{version}",
                                     "command": ["vllm", "serve"], "args": [model, "--max-model-len", "4096"],
                                     "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def log(c: Cluster, name: str, previous: bool = False) -> str:
    try:
        return c.read_log("llm", name, previous=previous)
    except Exception:  # no container (or no earlier one) yet
        return ""


def diagnosed(cli: Any, tmp_path: Path, text: str) -> tuple[dict[str, Any], str]:
    saved = tmp_path / "pod.log"
    saved.write_text(text)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout), got.stdout


UNPLAYED = [("0.34.0", NEXT, "Qwen3NextForCausalLM"), ("0.7.2", GDYN, "quantization_config.dynamic"),
            ("0.9.0", MO, "hf_quant_config.json")]


@pytest.mark.parametrize("version, model, why", UNPLAYED, ids=[f"{v}-{m.split('/')[1]}" for v, m, _ in UNPLAYED])
def test_a_start_the_memory_model_cannot_size_is_not_played_as_a_crash(cluster, cli, tmp_path: Path, version: str,
                                                                        model: str, why: str) -> None:
    """Before: 0.34.0's Qwen3-Next crash-looped on "Invalid repository ID" (diagnose: not_found, "correct --model");
    0.7.2's GPTQ dynamic and 0.9.0's ModelOpt checkpoint on "ValueError: cannot predict ..." (diagnose: unknown)."""
    name = f"u-{version.replace('.', '-')}"
    cluster.store.create("pods", pod(name, version, model))
    assert cluster.wait_for(lambda: RECORD in log(cluster, name), 30), log(cluster, name)[-2000:]
    cluster.clock.sleep(120)  # simulated: a crash would have restarted it by now
    text = log(cluster, name)
    record = next(line for line in text.splitlines() if RECORD in line)
    assert "WARNING " in record and why in record, record
    assert "Traceback" not in text and INVALID not in text and "ValueError" not in text, text[-2000:]
    status = (cluster.store.find("pods", "llm", name).get("status") or {}).get("containerStatuses") or [{}]
    assert not status[0].get("ready") and not status[0].get("restartCount") and "running" in status[0]["state"], status
    data, said = diagnosed(cli, tmp_path, text)
    assert data["failure"] != "model_unavailable" and "correct --model" not in said, said


REFUSED = [("0.34.0", UNK, "Unknown quantization method: foo_quant. Must be one of ['awq', 'fp8', "),
           ("0.8.5", UNK, "ValueError: Unknown quantization method: foo_quant. Must be one of ['aqlm', 'awq', "),
           ("0.6.6", NEXT, "ValueError: Model architectures ['Qwen3NextForCausalLM'] are not supported for now.")]


@pytest.mark.parametrize("version, model, line", REFUSED, ids=[f"{v}-{m.split('/')[1]}" for v, m, _ in REFUSED])
def test_what_the_release_refuses_is_refused_in_its_own_words(cluster, cli, tmp_path: Path, version: str, model: str,
                                                               line: str) -> None:
    """Before: each ended in "Invalid repository ID" after the config was served: diagnose said not_found."""
    name = f"r-{version.replace('.', '-')}-{model.split('/')[1].lower()}"
    cluster.store.create("pods", pod(name, version, model))
    assert cluster.wait_for(lambda: line in log(cluster, name, previous=True), 30), (
        log(cluster, name)[-2000:], log(cluster, name, previous=True)[-2000:])
    text = log(cluster, name, previous=True)
    assert INVALID not in text and RECORD not in text, text[-2000:]
    data, said = diagnosed(cli, tmp_path, text)
    assert data["failure"] == "config_refused" and "correct --model" not in said, said


def test_a_read_only_cache_without_the_model_fails_first(cluster) -> None:
    """The download comes before vLLM reads the config: a pod whose Hugging Face cache is an empty read-only volume
    dies on the mount's refusal (``hf_cache``), whatever the memory model could size. Before the download's checks
    were kept for it, such a pod was not played instead."""
    body = pod("ro-next", "0.34.0", NEXT)
    body["spec"]["containers"][0].update(env=[{"name": "HF_HOME", "value": "/data/hf"}],
                                         volumeMounts=[{"name": "models", "mountPath": "/data", "readOnly": True}])
    body["spec"]["volumes"] = [{"name": "models", "emptyDir": {}}]
    cluster.store.create("pods", body)
    line = "OSError: [Errno 30] Read-only file system: '/data/hf/hub/models--acme-corp--Next-Unsized'"
    assert cluster.wait_for(lambda: line in log(cluster, "ro-next", previous=True), 30), (
        log(cluster, "ro-next")[-1500:], log(cluster, "ro-next", previous=True)[-1500:])
    assert RECORD not in log(cluster, "ro-next", previous=True)
