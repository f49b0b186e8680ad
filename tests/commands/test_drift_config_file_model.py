"""drift on a rehearsal Deployment whose model and length are in vLLM's ``--config`` YAML (a ConfigMap mounted in the
pod, which drift does not read): the pod runs, so the file's model is real — drift never asks the Hub for a repository
named "None", and says "unknown" for the prediction and for ``--max-model-len``, which it cannot see, rather than
``DRIFT max-model-len: --max-model-len is not set`` from a file it says it cannot read (hostile15 H14)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import rolled_out
from fixtures.drift_world import as_json, inventory, policy
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.pyinfra_run import Rehearsal

rehearsal = pyinfra_run.rehearsal
MODEL = "acme/Tagged"
CONFIG = f"model: {MODEL}\nmax-model-len: 4096\n"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf")
        yield server


def _from_file(dep: dict[str, Any]) -> None:
    pod = dep["spec"]["template"]["spec"]
    container = pod["containers"][0]
    container["image"] = "vllm/vllm-openai:v0.34.0"
    container["args"] = ["--config", "/etc/vllm/config.yaml", "--gpu-memory-utilization", "0.90"]
    container["volumeMounts"] = [*container.get("volumeMounts", []), {"name": "vcfg", "mountPath": "/etc/vllm"}]
    pod["volumes"] = [*pod.get("volumes", []), {"name": "vcfg", "configMap": {"name": "vcfg"}}]


def test_a_model_in_an_unread_config_file_is_never_asked_for_and_its_flags_are_unknown(
        hub: HubServer, rehearsal: Rehearsal, tmp_path: Path, cli) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vcfg", "namespace": "llm"},
                  "data": {"config.yaml": CONFIG}}
    rehearsal.cluster.apply_seed({"objects": [{"resource": "configmaps", "object": config_map}]})
    rehearsal.change(_from_file, change_cause="flags and model in the --config file")
    rolled_out(rehearsal)  # the pods read the file and serve its model
    before = len(hub.requests)
    got = cli("drift", "-i", inventory(tmp_path, rehearsal.kubeconfig, policy(tmp_path, "known_good: []\n")),
              "-o", "json")
    host = as_json(got)["hosts"][0]
    assert not any("/None/" in path for _, path in hub.requests[before:]), hub.requests[before:]
    checks = {c["check"]: c for c in host["checks"]}
    assert checks["max-model-len"]["status"] == "unknown", checks["max-model-len"]
    assert "--config file /etc/vllm/config.yaml" in checks["max-model-len"]["detail"], checks["max-model-len"]
    assert checks["prediction"]["status"] == "unknown", checks["prediction"]
    assert "None" not in checks["prediction"]["detail"], checks["prediction"]
    said = checks["prediction"]["detail"]
    assert said.startswith("no model in argv: cannot predict --config /etc/vllm/config.yaml"), said
