"""A ``--config`` YAML whose switch is written as a string (``enable-prefix-caching: "true"``, as Helm's ``| quote``
renders it) or a number: vLLM's ``load_config_file`` writes only a real YAML boolean as the bare ``--key`` and anything
else as ``--key str(value)`` (utils.py@0.8.5 l.1495-1501, utils/argparse_utils.py@0.34.0 l.653-671), so the switch
(``store_true``, ``BooleanOptionalAction``: no value) leaves the word over (before 0.6.4 every value, a real
boolean's ``True`` too) and argparse refuses the start, ``unrecognized arguments: true``, exit 2 — as it refuses the
same words in argv. The rehearsal pod refuses it and `vllm-remedy check` predicts it; a real boolean serves. A
release whose flag is a legacy StoreBoolean (0.6.3's ``--enable-chunked-prefill``, engine/arg_utils.py@0.6.3
l.623-626) takes the word as its value: no refusal there.

End to end: the served rehearsal cluster and the kubernetes client, the file a mounted ConfigMap; the real CLI's
``check`` on the same manifests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from conftest import run_cli
from fixtures.served_pods import ended, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
CFG = "/etc/vllm/cfg.yaml"
ARGS = [LLAMA, "--config", CFG, "--gpu-memory-utilization", "0.9"]
REFUSED = {  # name: (image tag, the file's text, the word left over)
    "quoted-0-34-0": ("v0.34.0", 'max-model-len: 16384\nenable-prefix-caching: "true"\n', "true"),
    "quoted-0-8-5": ("v0.8.5", 'max-model-len: 16384\nenable-prefix-caching: "true"\n', "true"),
    "number-0-19-0": ("v0.19.0", "max-model-len: 16384\nenforce-eager: 1\n", "1"),
    # before 0.6.4 every value is --key str(value), a real YAML boolean too (utils.py@0.6.3 l.1269-1271)
    "boolean-0-6-3": ("v0.6.3", "max-model-len: 16384\nenable-prefix-caching: true\n", "True"),
}
SERVES = {"real-0-34-0": ("v0.34.0", "max-model-len: 16384\nenable-prefix-caching: true\n"),
          "legacy-0-6-3": ("v0.6.3", 'max-model-len: 16384\nenable-chunked-prefill: "true"\n')}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _pod_spec(name: str, tag: str) -> dict:
    return {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "volumes": [{"name": "vcfg", "configMap": {"name": f"vcfg-{name}"}}],
            "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
                            "args": ARGS, "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                            "volumeMounts": [{"name": "vcfg", "mountPath": "/etc/vllm"}],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


def _config_map(name: str, text: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"vcfg-{name}", "namespace": "llm"},
            "data": {"cfg.yaml": text}}


def _run(api: client.CoreV1Api, name: str, tag: str, text: str) -> tuple[str, int | None]:
    api.create_namespaced_config_map("llm", _config_map(name, text))
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": _pod_spec(name, tag)})
    return ended(api, name, "vllm")


def _check(tmp: Path, cases: dict[str, tuple[str, str]]) -> dict[str, dict]:
    docs: list[dict] = []
    for name, (tag, text) in cases.items():
        docs += [_config_map(name, text), {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": _pod_spec(name, tag)}}}]
    path = tmp / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return {item["name"]: item for item in json.loads(got.stdout)["items"]}


def test_a_switch_given_a_string_in_the_file_is_refused_by_the_pod_and_check(api, tmp_path: Path) -> None:
    """Before: check said "fits" and the pod served, reading the string as the switch."""
    items = _check(tmp_path, {k: (tag, text) for k, (tag, text, _) in REFUSED.items()})
    for name, (tag, text, word) in REFUSED.items():
        log, code = _run(api, name, tag, text)
        last = re.sub(r"^\(APIServer pid=\d+\) ", "", log.splitlines()[-1])
        assert code == 2 and last.endswith(f": error: unrecognized arguments: {word}"), (name, code, log[-1500:])
        reasons = [f["reason"] for f in items[name]["findings"] if f["check"] == "flags"]
        assert items[name]["prediction"]["outcome"] == "argument_refused", (name, items[name]["prediction"])
        assert any(f'"unrecognized arguments: {word}"' in r and "(exit 2: the pod never starts)" in r
                   for r in reasons), (name, reasons)


def test_a_real_boolean_or_a_legacy_store_boolean_serves(api, tmp_path: Path) -> None:
    items = _check(tmp_path, SERVES)
    for name, (tag, text) in SERVES.items():
        log, code = _run(api, name, tag, text)
        assert code is None, (name, log[-1500:])
        assert items[name]["prediction"]["outcome"] != "argument_refused", (name, items[name])
