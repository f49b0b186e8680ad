"""``vllm serve <flags> MODEL --config FILE`` on the rehearsal cluster: the pod reads the YAML from its mounted
ConfigMap and refuses the start as vLLM's ``_pull_args_from_config`` does when the model is not the first word after
``serve`` (``sim/vllm_pod/config_splice``, read apart from the tools); `vllm-remedy check` quotes the pod's last line
and exit code. The pod used to go Running (it read no --config file)."""

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
FILE = "gpu-memory-utilization: 0.9\nmax-num-seqs: 64\n"
LATE = ["--max-model-len", "16384", LLAMA, "--config", CFG]
MODULE = ["--model", LLAMA, "--max-model-len", "16384", "--config", CFG]
CASES = {  # name: (image tag, args, the file's text)
    "late-0-34-0": ("v0.34.0", LATE, FILE),
    "late-0-10-0": ("v0.10.0", LATE, FILE),
    "config-first-0-7-3": ("v0.7.3", ["--config", CFG, LLAMA, "--max-model-len", "16384"], FILE),
    "splice-0-7-3": ("v0.7.3", LATE, FILE),
    "module-0-9-2": ("v0.9.2", MODULE, FILE),  # the image's api_server module: the file after its first word
}
SERVES = {"model-in-file-0-34-0": ("v0.34.0", LATE, FILE + f"model: {LLAMA}\n"),
          "module-0-10-2": ("v0.10.2", MODULE, FILE),
          "first-0-34-0": ("v0.34.0", [LLAMA, "--max-model-len", "16384", "--config", CFG], FILE)}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _pod_spec(name: str, tag: str, args: list[str]) -> dict:
    return {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "volumes": [{"name": "vcfg", "configMap": {"name": f"vcfg-{name}"}}],
            "containers": [{"name": "vllm", "image": f"vllm/vllm-openai:{tag}",
                            **({} if args is MODULE else {"command": ["vllm", "serve"]}), "args": args,
                            "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                            "volumeMounts": [{"name": "vcfg", "mountPath": "/etc/vllm"}],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


def _config_map(name: str, text: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"vcfg-{name}", "namespace": "llm"},
            "data": {"cfg.yaml": text}}


def _run(api: client.CoreV1Api, name: str, tag: str, args: list[str], text: str) -> tuple[str, int | None]:
    """The pod's log and exit code once it ended, or (its log, None) once it serves."""
    api.create_namespaced_config_map("llm", _config_map(name, text))
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": _pod_spec(name, tag, args)})
    return ended(api, name, "vllm")


def _check(tmp: Path, cases: dict[str, tuple[str, list[str], str]]) -> dict[str, dict]:
    docs: list[dict] = []
    for name, (tag, args, text) in cases.items():
        docs += [_config_map(name, text), {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": _pod_spec(name, tag, args)}}}]
    path = tmp / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return {item["name"]: item for item in json.loads(got.stdout)["items"]}


def test_the_pod_refuses_the_splice_and_check_quotes_it(api: client.CoreV1Api, tmp_path: Path) -> None:
    items = _check(tmp_path, CASES)
    for name, (tag, args, text) in CASES.items():
        log, code = _run(api, name, tag, args, text)
        last = re.sub(r"^\(APIServer pid=\d+\) ", "", log.splitlines()[-1])
        said = last.split(": error: ", 1)[1] if ": error: " in last else last
        reasons = [f["reason"] for f in items[name]["findings"] if f["check"] == "flags"]
        assert code in (1, 2) and items[name]["prediction"]["outcome"] == "argument_refused", (name, code, log)
        assert any(said in r and f"(exit {code}: the pod never starts)" in r for r in reasons), (name, last, reasons)
        if code == 1:
            assert "_pull_args_from_config" in log, log


def test_the_model_first_or_in_the_file_serves(api: client.CoreV1Api) -> None:
    for name, (tag, args, text) in SERVES.items():
        log, code = _run(api, name, tag, args, text)
        assert code is None, (name, log[-1500:])


def test_the_files_flags_size_the_pod_under_argvs(api: client.CoreV1Api, tmp_path: Path) -> None:
    """The file's --max-model-len reaches the engine as vLLM's splice puts it in argv (the pod used to ignore it),
    argv's --max-num-seqs wins over the file's, and check predicts the same length."""
    case = {"sized-0-11-0": ("v0.11.0", [LLAMA, "--max-num-seqs", "32", "--config", CFG],
                             "max_model_len: 8192\nmax-num-seqs: 64\n")}
    log, code = _run(api, "sized-0-11-0", *case["sized-0-11-0"])
    assert code is None, log[-1500:]
    args = next(line for line in log.splitlines() if "non-default args:" in line)
    assert "'max_model_len': 8192" in args and "'max_num_seqs': 32" in args, args
    assert "max_seq_len=8192" in log, log
    item = _check(tmp_path, case)["sized-0-11-0"]
    assert item["prediction"]["estimate"]["max_model_len"] == 8192, item["prediction"]
