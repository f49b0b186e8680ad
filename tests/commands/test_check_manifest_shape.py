"""check: manifests the Kubernetes API server refuses are reported as invalid, never checked as if they ran.

Third hostile review: unquoted numbers in args (H3), env shapes and non-string values in any container or a
ConfigMap's data (M5), and args/command written as one string with a vLLM image (M7) all passed or were skipped.
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import find_server

MODEL = '"--model", "meta-llama/Llama-3.1-8B-Instruct"'


def _manifest(args: str, env: str = "", more: str = "") -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: llm, namespace: llm}}
spec:
  template:
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-L40S}}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        resources: {{limits: {{nvidia.com/gpu: "1"}}}}
        args: {args}
{env}{more}"""


CASES = {
    "unquoted number": (_manifest(f'[{MODEL}, "--max-model-len", 8192]'),
                        "container vllm: args[3] is an integer (8192), not a string"),
    "unquoted boolean in command": (_manifest(f'[{MODEL}]').replace("        args:", "        command: [vllm, serve, "
                                                                    "true]\n        args:"),
                                    "container vllm: command[2] is a boolean, not a string"),
    "args as a string": (_manifest('"--model meta-llama/Llama-3.1-8B-Instruct --max-model-len 16384"'),
                         "container vllm: args is a string, not a list of strings"),
    "env as a string": (_manifest(f"[{MODEL}]", '        env: "FOO=1"\n'), "container vllm: env is a string"),
    "env entry a string": (_manifest(f"[{MODEL}]", '        env: ["FOO=1"]\n'), "container vllm: env[0] is a string"),
    "env entry without name": (_manifest(f"[{MODEL}]", '        env: [{value: "1"}]\n'),
                               "container vllm: env[0] has no name"),
    "non-string name": (_manifest(f"[{MODEL}]", '        env: [{name: 5, value: "1"}]\n'),
                        "container vllm: env[0] has name 5, an integer"),
    "value with valueFrom": (_manifest(f"[{MODEL}]", "        env: [{name: X, value: '1', valueFrom: {fieldRef: "
                                                     "{fieldPath: metadata.name}}}]\n"),
                             "container vllm: env X: both value and valueFrom are set"),
    "initContainer value": (_manifest(f"[{MODEL}]", more="      initContainers:\n      - name: init\n        image: "
                                                         "busybox\n        env: [{name: X, value: 1}]\n"),
                            "container init: env X: value 1 is an integer"),
    "sidecar args": (_manifest(f"[{MODEL}]", more="      - name: proxy\n        image: envoy\n        args: [--port, "
                                                  "8080]\n"),
                     "container proxy: args[1] is an integer (8080)"),
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Every case of ``CASES`` as one Deployment (case-N) of one file, judged by one real `check -o json` run (one
    CLI start instead of one per case: the suite's time budget): the items of each case, by its key. A refused
    manifest is a finding of its own workload, so the file fails as a whole and each case's item says so."""
    names = sorted(CASES)
    path = tmp_path_factory.mktemp("manifest-shape") / "all.yaml"
    path.write_text("---\n".join(CASES[case][0].replace("{name: llm,", f"{{name: case-{i},", 1)
                                   for i, case in enumerate(names)))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    items = json.loads(got.stdout)["items"]
    return {case: [item for item in items if item["name"] == f"case-{i}"] for i, case in enumerate(names)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_manifest_kubernetes_refuses_fails_check_naming_the_container(checked, case):
    why = CASES[case][1]
    (result,) = checked[case]
    assert result["status"] == "fail", result  # alone in its file: exit 1 (check.exit_code)
    (finding,) = result["findings"]
    assert (finding["check"], finding["severity"]) == ("manifest", "error"), finding
    assert finding["reason"].startswith(why) and "Kubernetes refuses the manifest" in finding["reason"], finding


def test_the_same_manifest_quoted_passes(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(_manifest(f'[{MODEL}, "--max-model-len", "8192"]', '        env: [{name: X, value: "1"}]\n'))
    got = cli("check", "-f", str(path))
    assert got.returncode == 0, got.stdout + got.stderr


def test_a_config_map_with_non_string_data_is_one_error_line(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(_manifest(f'[{MODEL}, "--max-model-len", "8192"]') + "---\napiVersion: v1\nkind: ConfigMap\n"
                    "metadata: {name: cfg, namespace: llm}\ndata: {X: 1}\n")
    got = cli("check", "-f", str(path))
    assert got.returncode not in (0, 1) and got.stdout == "", got.stdout + got.stderr
    assert got.stderr.strip().splitlines() == [f"vllm-remedy: error: {path}: ConfigMap cfg: data.X: value 1 is an "
                                               "integer, not a string, so Kubernetes refuses it (data is "
                                               "map[string]string: quote the value as you meant it)"]


def test_find_server_refuses_an_argv_kubernetes_refuses():
    """args set / plan -f read the server through find_server: they stop with one line, nothing edited."""
    spec = {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.3",
                            "args": ["--model", "m", "--max-model-len", 8192]}]}
    with pytest.raises(UserError, match=r"^container vllm: args\[3\] is an integer \(8192\)"):
        find_server(spec)
    spec["containers"][0]["args"] = "--model m --max-model-len 8192"
    with pytest.raises(UserError, match=r"^container vllm: args is a string"):
        find_server(spec, "vllm")
    spec["containers"][0].update(image="busybox", args="sleep 1")  # not vLLM: not a server, whatever its shape
    with pytest.raises(UserError, match="no container runs a vLLM server"):
        find_server(spec)


def test_a_null_argument_is_the_empty_string(cli, tmp_path):
    """`- null` (or an empty item) in args was read as the word 'None' (review 3, L3), then refused as a manifest
    Kubernetes refuses (review 4, L2): the API server decodes JSON null into a string as "" (Go's encoding/json leaves
    the zero value), so the pod runs with an empty argument."""
    path = tmp_path / "m.yaml"
    path.write_text(_manifest(f'[{MODEL}, "--max-model-len", "8192", "--served-model-name", null]') + "---\n"
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: llm}\ndata: {X: null}\n")
    got = cli("check", "-f", str(path))
    assert got.returncode == 0 and "None" not in got.stdout and "manifest [error]" not in got.stdout, got.stdout
    assert find_server({"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                        "args": ["m", "--served-model-name", None]}]}).flags["served-model-name"] == ""


@pytest.mark.parametrize("case", ["unquoted number", "args as a string", "initContainer value", "env entry a string"])
@pytest.mark.parametrize("command", [("plan", "-f"), ("args", "set", "--set", "max-num-seqs=8", "-f")])
def test_plan_and_args_set_stop_on_a_manifest_kubernetes_refuses(cli, tmp_path, case, command):
    """One error line naming the file and the container; args set writes nothing."""
    text, why = CASES[case]
    path = tmp_path / "m.yaml"
    path.write_text(text)
    got = cli(*command, str(path))
    assert (got.returncode, got.stdout) == (2, ""), got.stdout
    assert got.stderr.startswith(f"vllm-remedy: error: {path}: Deployment/llm spec.template.spec: {why}"), got.stderr
    assert got.stderr.count("\n") == 1, got.stderr


def test_plan_f_refuses_a_config_map_with_non_string_data(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(_manifest(f'[{MODEL}, "--max-model-len", "8192"]') + "---\napiVersion: v1\nkind: ConfigMap\n"
                    "metadata: {name: cfg, namespace: llm}\ndata: {X: 1}\n")
    got = cli("plan", "-f", str(path))
    assert (got.returncode, got.stdout) == (2, ""), got.stdout
    assert got.stderr.startswith(f"vllm-remedy: error: {path}: ConfigMap cfg: data.X: value 1 is an integer"), \
        got.stderr
