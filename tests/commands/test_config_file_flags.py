"""vLLM's YAML flags file (``--config FILE``): its flags are unknown unless the file is supplied — a ConfigMap among
the manifests checked, mounted at that path — and then read under argv's (vLLM's "cli > config > defaults"). Before,
a Deployment with its flags in the file was predicted as if it had none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.vllm.manifest_flags_file import flags_of

GOOD = Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" / "good-rev14.yaml"
POLICY = "policies/llama-8b.yaml"
FILE = "max_model_len: 16384\ngpu-memory-utilization: 0.90\nmax-num-seqs: 64\nenforce-eager: false\n"


def _deployment(mount: dict | None = None) -> dict:
    """Revision 14 with its memory flags moved to /etc/vllm/config.yaml."""
    dep = yaml.safe_load(GOOD.read_text())
    pod = dep["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    container["args"] = [args[0], "--revision", args[args.index("--revision") + 1], "--config",
                         "/etc/vllm/config.yaml"]
    if mount is not None:
        container["volumeMounts"] = [{"name": "flags", **mount}]
        pod["volumes"] = [{"name": "flags", "configMap": {"name": "vllm-flags"}}]
    return dep


def _listed(dep: dict, text: str = FILE) -> str:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "vllm-flags", "namespace": dep["metadata"]["namespace"]},
                  "data": {"config.yaml": text}}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [config_map, dep]})


def test_flags_in_an_unread_file_cannot_be_predicted(cli, tmp_path):
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(_deployment()))
    got = cli("check", "-f", str(path), "--policy", POLICY, "-o", "json")
    item = json.loads(got.stdout)["items"][0]
    assert item["prediction"]["estimate"] is None, item["prediction"]
    assert any(f["severity"] == "unknown" and "--config /etc/vllm/config.yaml" in f["reason"]
               for f in item["findings"]), item["findings"]
    got = predict_template(_deployment()["spec"]["template"])
    assert got.estimate is None and got.note.startswith("cannot predict --config /etc/vllm/config.yaml"), got


@pytest.mark.parametrize("mount", [{"mountPath": "/etc/vllm"},
                                   {"mountPath": "/etc/vllm/config.yaml", "subPath": "config.yaml"}])
def test_the_file_from_a_configmap_checked_with_it_is_read(cli, mount):
    got = cli("check", "-f", "-", "--policy", POLICY, "-o", "json", stdin=_listed(_deployment(mount)))
    assert got.returncode == 0, got.stdout + got.stderr
    item = json.loads(got.stdout)["items"][0]
    assert item["prediction"]["outcome"] == "fits", item
    assert item["prediction"]["estimate"]["max_model_len"] == 16384, item["prediction"]


def test_argv_wins_over_the_file(cli):
    dep = _deployment({"mountPath": "/etc/vllm"})
    dep["spec"]["template"]["spec"]["containers"][0]["args"] += ["--max-model-len", "8192"]
    got = cli("check", "-f", "-", "--policy", POLICY, "-o", "json", stdin=_listed(dep))
    item = json.loads(got.stdout)["items"][0]
    assert item["prediction"]["estimate"]["max_model_len"] == 8192, item["prediction"]
    planned = cli("plan", "-f", "-", "-o", "json", stdin=_listed(dep))
    assert json.loads(planned.stdout)["current"]["max_model_len"] == 8192, planned.stdout + planned.stderr


def test_the_files_spelling_as_vllm_reads_it():
    assert flags_of("max_model_len: 8192\nenforce-eager: true\ndisable-log-stats: false\n", "/c.yaml") == {
        "max-model-len": "8192", "enforce-eager": "true"}
