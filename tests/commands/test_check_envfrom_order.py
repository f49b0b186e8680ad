"""`check -f` with ``envFrom: [ConfigMap b (VLLM_USE_V1=0, among the manifests), Secret sec]`` on 0.8.5: the later
Secret may reset VLLM_USE_V1 (Kubernetes: a later envFrom source wins), so the engine cannot be predicted, where it
was read as 0 (V0's rules). Listed the other way round, or overridden by ``env``, it is known (hostile review,
argparse round 2, finding 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import manifest

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"},
      "data": {"VLLM_USE_V1": "0"}}
SOURCES = {"cm": {"configMapRef": {"name": "b"}}, "sec": {"secretRef": {"name": "sec"}}}


def _path(tmp_path: Path, order: list[str], env: list | None = None) -> str:
    doc = yaml.safe_load(Path(manifest(tmp_path, ["--max-model-len", "4096"], image="vllm/vllm-openai:v0.8.5",
                                       env=env)).read_text())
    doc["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [SOURCES[o] for o in order]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all([CM, doc]))
    return str(path)


def test_a_later_secret_makes_the_engine_unknown(cli, tmp_path):
    got = cli("check", "-f", _path(tmp_path, ["cm", "sec"]))
    assert got.returncode == 1, got.stdout
    assert ("engine-env [unknown]: cannot predict: VLLM_USE_V1: vLLM 0.8.5 selects its engine by it and its value "
            "cannot be read: VLLM_USE_V1 may be reset by envFrom Secret sec") in got.stdout, got.stdout


@pytest.mark.parametrize(("order", "env"), [(["sec", "cm"], None), (["cm", "sec"], [{"name": "VLLM_USE_V1",
                                                                                     "value": "0"}])])
def test_the_value_is_known_when_nothing_later_may_reset_it(cli, tmp_path, order, env):
    got = cli("check", "-f", _path(tmp_path, order, env))
    assert got.returncode == 0, got.stdout
    assert "engine-env" not in got.stdout, got.stdout
