"""The policy's ``model_config`` is the last resort for a model outside the catalog in every command that resolves
one from files: ``plan -f`` (it said "the Hub is unreachable" while ``check`` used the policy's file), and a
``model_config.config_map`` rendered beside the Deployment (``helm template | vllm-remedy check -f -``), which
``check`` and ``plan`` read from the input instead of saying "not read (no cluster)"."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from fixtures.hf_hub_server import SMOLLM2_CONFIG

RUNBOOK = Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook"
POLICY = Path("policies/llama-8b.yaml").resolve()
MODEL = "acme-corp/SmolLM2-1.7B-FineTune"


def _deployment() -> dict:
    dep = yaml.safe_load((RUNBOOK / "good-rev14.yaml").read_text())
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    args[0] = MODEL
    args[args.index("--max-model-len") + 1] = "8192"  # SmolLM2's own maximum
    return dep


def _policy(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(f"extends: {POLICY}\ntarget: {{models: [{MODEL}]}}\nknown_good: []\nmodel_config: {source}\n")
    return path


def test_plan_uses_the_policys_config_file(cli, tmp_path):
    (tmp_path / "smollm.json").write_text(json.dumps(SMOLLM2_CONFIG))
    dep = tmp_path / "dep.yaml"
    dep.write_text(yaml.safe_dump(_deployment()))
    got = cli("plan", "-f", str(dep), "--policy", str(_policy(tmp_path, "{path: smollm.json}")), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    assert json.loads(got.stdout)["subject"]["model"] == MODEL


def _listed(namespace: str) -> str:
    dep = _deployment()
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "model-config", "namespace": namespace},
                  "data": {"config.json": json.dumps(SMOLLM2_CONFIG)}}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [config_map, dep]})


def test_check_and_plan_read_the_policys_config_map_from_the_input(cli, tmp_path):
    namespace = _deployment()["metadata"]["namespace"]
    policy = str(_policy(tmp_path, "{config_map: model-config, key: config.json}"))
    got = cli("check", "-f", "-", "--policy", policy, "-o", "json", stdin=_listed(namespace))
    assert got.returncode in (0, 1), got.stdout + got.stderr
    item = json.loads(got.stdout)["items"][0]
    assert [f for f in item["findings"] if f["check"] == "model"] == [], item["findings"]
    assert item["prediction"]["outcome"] == "fits", item
    planned = cli("plan", "-f", "-", "--policy", policy, "-o", "json", stdin=_listed(namespace))
    assert planned.returncode in (0, 1), planned.stdout + planned.stderr
    assert json.loads(planned.stdout)["subject"]["model"] == MODEL
    # a ConfigMap in another namespace is not the pod's: unknown, as before
    other = cli("check", "-f", "-", "--policy", policy, "-o", "json", stdin=_listed("elsewhere"))
    item = json.loads(other.stdout)["items"][0]
    assert any(f["check"] == "model" for f in item["findings"]), item


def test_plan_with_a_typed_model_uses_the_policys_config_file_too(cli, tmp_path):
    (tmp_path / "smollm.json").write_text(json.dumps(SMOLLM2_CONFIG))
    got = cli("plan", "--model", MODEL, "--gpu", "NVIDIA-L4", "--max-model-len", "8192",
              "--policy", str(_policy(tmp_path, "{path: smollm.json}")), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    assert json.loads(got.stdout)["subject"]["model"] == MODEL
