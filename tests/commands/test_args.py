"""`vllm-remedy args show|set` end to end, through the real CLI in a subprocess."""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import run_cli

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
GKE = str(MANIFESTS / "real" / "gke-vllm-gemma-3-27b-it.yaml")
LWS = str(MANIFESTS / "forms" / "19-multi-node-lws.yaml")

TWO_SERVERS = """\
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers:
    - {name: a, image: x, command: [vllm, serve, m1]}
    - {name: b, image: x, command: [vllm, serve, m2, --max-model-len, "4096"]}
"""


def test_show_human(cli) -> None:
    got = cli("args", "show", "-f", GKE)
    assert got.returncode == 0, got.stderr
    assert got.stdout == (
        "Deployment/vllm-gemma-deployment spec.template.spec\n"
        "  container: inference-server\n"
        "  image: us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/"
        "pytorch-vllm-serve:20250312_0916_RC01\n"
        "  entrypoint: python3 -m vllm.entrypoints.openai.api_server\n"
        "  model: google/gemma-3-27b-it\n"  # the kubelet expands --model=$(MODEL_ID) from the env
        "  flags:\n"
        "    tensor-parallel-size: 8\n"
        "    host: 0.0.0.0\n"
        "    port: 8000\n"
        "    swap-space: 16\n"
        "    gpu-memory-utilization: 0.95\n"
        "    max-model-len: 32768\n"
        "    max-num-seqs: 4\n"
    )


def test_show_json_lists_every_vllm_template(cli) -> None:
    got = cli("args", "show", "-f", LWS, "-o", "json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert (doc["apiVersion"], doc["kind"]) == ("vllm-remedy.io/v1alpha1", "VllmServerList")
    rows = doc["items"]
    assert [(r["path"], r["container"], r["flags"]["max-model-len"]) for r in rows] == [
        ("spec.leaderWorkerTemplate.leaderTemplate.spec", "vllm-leader", "65536"),
        ("spec.leaderWorkerTemplate.workerTemplate.spec", "vllm-worker", "65536"),
    ]
    assert rows[0]["object"] == "LeaderWorkerSet/multinode" and rows[0]["entrypoint"] == "/opt/venv/bin/vllm serve"


def test_set_edits_leader_and_worker_consistently(cli) -> None:
    got = cli("args", "set", "-f", LWS, "--set", "max-model-len=16384", "--set", "enforce-eager=true",
              "--unset", "distributed-executor-backend")
    assert got.returncode == 0, got.stderr
    (doc,) = list(yaml.safe_load_all(got.stdout))
    lwt = doc["spec"]["leaderWorkerTemplate"]
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]["command"]
    worker = lwt["workerTemplate"]["spec"]["containers"][0]["command"]
    assert leader == ["/opt/venv/bin/vllm", "serve", "acme/m405b", "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank",
                      "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)", "--tensor-parallel-size", "8",
                      "--max-model-len", "16384", "--host", "0.0.0.0", "--port", "8000", "--enforce-eager"]
    assert worker == ["/opt/venv/bin/vllm", "serve", "acme/m405b", "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank",
                      "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)", "--tensor-parallel-size", "8",
                      "--max-model-len", "16384", "--headless", "--enforce-eager"]


def test_set_keeps_every_document_and_reads_stdin(cli) -> None:
    text = Path(GKE).read_text()
    got = cli("args", "set", "-f", "-", "--set", "max-model-len=16384", stdin=text)
    assert got.returncode == 0, got.stderr
    before, after = list(yaml.safe_load_all(text)), list(yaml.safe_load_all(got.stdout))
    assert [d["kind"] for d in after] == ["Deployment", "Service"]
    assert after[1] == before[1]
    args = after[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["--model=$(MODEL_ID)", "--tensor-parallel-size=8", "--host=0.0.0.0", "--port=8000",
                    "--swap-space=16", "--gpu-memory-utilization=0.95", "--max-model-len=16384", "--max-num-seqs=4"]
    before[0]["spec"]["template"]["spec"]["containers"][0]["args"] = args
    assert after == before  # nothing else changed


def test_set_on_shell_script_manifest_rewrites_only_the_vllm_statement(cli) -> None:
    path = str(MANIFESTS / "real" / "lws-vllm-gpu.yaml")
    got = cli("args", "set", "-f", path, "--set", "max-model-len=8192")
    assert got.returncode == 0, got.stderr
    (doc,) = list(yaml.safe_load_all(got.stdout))
    (orig,) = list(yaml.safe_load_all(Path(path).read_text()))
    script = doc["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"][2]
    old = orig["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"][2]
    assert script == old + " --max-model-len 8192"
    lwt, orig_lwt = doc["spec"]["leaderWorkerTemplate"], orig["spec"]["leaderWorkerTemplate"]
    assert lwt["workerTemplate"] == orig_lwt["workerTemplate"]


def test_container_option_picks_among_several(cli) -> None:
    got = cli("args", "show", "-f", "-", "--container", "b", "-o", "json", stdin=TWO_SERVERS)
    assert got.returncode == 0, got.stderr
    (row,) = json.loads(got.stdout)["items"]
    assert (row["container"], row["model"], row["flags"]) == ("b", "m2", {"max-model-len": "4096"})


@pytest.mark.parametrize(("argv", "stdin", "message"), [
    (["args", "show", "-f", "/nonexistent/x.yaml"], None,
     "vllm-remedy: error: /nonexistent/x.yaml: cannot read: No such file or directory"),
    (["args", "show", "-f", "-"], "a: [1, 2\n",
     "vllm-remedy: error: <stdin>: not valid YAML at line 2: expected ',' or ']', but got '<stream end>'"),
    (["args", "set", "-f", "-", "--set", "max-model-len=1"],
     "kind: Pod\nspec:\n  containers:\n  - name: v\n    name: w\n    command: [vllm, serve, m]\n",
     'vllm-remedy: error: <stdin>: not valid YAML at line 5: found duplicate key "name" with value "w" '
     '(original value: "v")'),
    (["args", "show", "-f", "-"], "kind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n",
     "vllm-remedy: error: <stdin>: no pod spec found (expected a Deployment, Pod, StatefulSet, LeaderWorkerSet or "
     "pod template with containers)"),
    (["args", "show", "-f", "-"], "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: web, image: nginx}]}\n",
     "vllm-remedy: error: <stdin>: Pod/p spec: no container runs a vLLM server (containers: web; looked for vllm "
     "serve / python -m vllm.entrypoints... in command/args)"),
    (["args", "show", "-f", "-"], TWO_SERVERS,
     "vllm-remedy: error: <stdin>: Pod/two spec: several containers run vLLM (a, b); choose one with --container"),
    (["args", "set", "-f", str(MANIFESTS), "--set", "max-model-len=1"], None,
     f"vllm-remedy: error: {MANIFESTS}: cannot read: Is a directory"),
    (["args", "set", "-f", "-", "--container", "b", "--set", "max-model-len"], TWO_SERVERS,
     "vllm-remedy: error: --set max-model-len: expected KEY=VALUE, e.g. --set max-model-len=16384"),
    (["args", "set", "-f", "-", "--container", "b", "--set", "enforce-eager=maybe"], TWO_SERVERS,
     "vllm-remedy: error: enforce-eager: boolean flag takes true or false, got 'maybe'"),
    (["args", "show", "-f", str(MANIFESTS / "forms" / "17-no-argv.yaml")], None,
     f"vllm-remedy: error: {MANIFESTS / 'forms' / '17-no-argv.yaml'}: Deployment/no-argv spec.template.spec: "
     "container llm: vLLM settings are not in argv (image default CMD / env only); not patchable via argv"),
])
def test_bad_input_is_one_line_exit_2(cli, argv, stdin, message) -> None:
    got = cli(*argv, stdin=stdin)
    assert got.returncode == 2
    assert got.stdout == ""
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1, got.stderr
    assert lines[0] == message


def _changed(before: str, after: str) -> list[str]:
    return [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def test_set_on_commented_real_manifest_changes_only_the_argv_lines(cli) -> None:
    path = MANIFESTS / "real" / "aibrix-quickstart-model.yaml"
    got = cli("args", "set", "-f", str(path), "--set", "max-model-len=16384", "--set", "enforce-eager=true",
              "--unset", "uvicorn-log-level")
    assert got.returncode == 0, got.stderr
    tail = ' # 24k length, this is to avoid "The model\'s max seq len (131072) is larger than the maximum number of ' \
           'tokens that can be stored in KV cache" issue.'
    assert _changed(path.read_text(), got.stdout) == [
        "-            - --uvicorn-log-level",
        "-            - warning",
        '-            - "12288"' + tail,
        '+            - "16384"' + tail,
        "+            - --enforce-eager",
    ]


def test_set_keeps_license_header_flow_lists_and_odd_spacing(cli) -> None:
    text = Path(GKE).read_text()
    got = cli("args", "set", "-f", GKE, "--set", "max-model-len=16384", "--unset", "swap-space")
    assert got.returncode == 0, got.stderr
    assert _changed(text, got.stdout) == ["-        - --swap-space=16", "-        - --max-model-len=32768",
                                          "+        - --max-model-len=16384"]
    assert got.stdout.startswith("# Copyright 2025 Google LLC\n#\n")
    assert '            nvidia.com/gpu : "8"\n' in got.stdout


def test_set_inside_folded_script_keeps_the_other_lines(cli) -> None:
    path = MANIFESTS / "real" / "lws-vllm-gpu.yaml"
    got = cli("args", "set", "-f", str(path), "--set", "max-model-len=8192")
    assert got.returncode == 0, got.stderr
    changed = _changed(path.read_text(), got.stdout)
    assert len(changed) == 2 and changed[1] == changed[0].replace("-", "+", 1)[:-1] + ' --max-model-len 8192"'


@pytest.mark.parametrize("edits", [[], ["--set", "max-model-len=32768"], ["--unset", "kv-cache-dtype"],
                                   ["--set", "max_model_len=32768", "--set", "port=8000"]])
def test_set_without_effective_change_prints_the_input_unchanged(cli, edits) -> None:
    text = Path(GKE).read_bytes().decode()
    got = cli("args", "set", "-f", "-", *edits, stdin=text)
    assert got.returncode == 0, got.stderr
    assert got.stdout == text


def test_set_keeps_crlf_line_ends(tmp_path) -> None:
    """Bytes, not text: the `cli` fixture decodes with universal newlines and would hide a lost `\\r`."""
    path = tmp_path / "crlf.yaml"
    original = Path(GKE).read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(original)
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "args", "set", "-f", str(path), "--set",
                          "max-num-seqs=8"], capture_output=True, timeout=120, check=False)
    assert got.returncode == 0, got.stderr
    assert got.stdout == original.replace(b"--max-num-seqs=4\r\n", b"--max-num-seqs=8\r\n")


PIPED = """\
apiVersion: v1
kind: Pod
metadata: {name: piped}
spec:
  containers:
    - name: vllm
      command: ["sh","-c","vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 64 2>&1 | tee -a /tmp/vllm.log"]
"""


def test_set_in_a_piped_shell_script_lands_before_the_redirect(cli, tmp_path: Path) -> None:
    path = tmp_path / "piped.yaml"
    path.write_text(PIPED)
    got = cli("args", "set", "-f", str(path), "--set", "enforce-eager=true")
    assert got.returncode == 0, got.stderr
    script = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 64 --enforce-eager 2>&1 | tee -a /tmp/vllm.log"
    assert got.stdout == PIPED.replace(PIPED.splitlines()[-1].split('"-c",')[1], f'"{script}"]')
    assert subprocess.run(["bash", "-n", "-c", script], timeout=10).returncode == 0


def test_set_refuses_a_script_it_cannot_edit_safely(cli, tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text(PIPED.replace("vllm serve meta-llama", "eval vllm serve meta-llama"))
    got = cli("args", "set", "-f", str(path), "--set", "enforce-eager=true")
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr.strip().splitlines() == [
        f"vllm-remedy: error: {path}: Pod/piped spec: container vllm: its shell script runs "
        "vLLM in a form this tool cannot read or edit reliably (vLLM run through eval); edit it by hand"]


@pytest.mark.parametrize("action", [["show"], ["set", "--set", "enforce-eager=true"], ["set", "--unset", "port"]])
def test_a_script_dash_and_bash_read_differently_is_refused_by_show_and_set(cli, tmp_path: Path,
                                                                           action: list[str]) -> None:
    path = tmp_path / "fd.yaml"
    path.write_text(PIPED.replace("--max-num-seqs 64 2>&1 | tee -a /tmp/vllm.log",
                                  "--max-num-seqs 64 --port 8000>>/tmp/vllm.log 2>&1"))
    got = cli("args", action[0], "-f", str(path), *action[1:])
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr.strip().splitlines() == [
        f"vllm-remedy: error: {path}: Pod/piped spec: container vllm: its shell script runs vLLM in a form this "
        "tool cannot read or edit reliably (8000>> means an argument then a redirect to dash but a redirect of "
        "fd 8000 to bash; put a space before >>); edit it by hand"]


WRAPPERS = ['["tini", "--", "vllm", "serve"]', '["/usr/bin/env", "vllm", "serve"]',
            '["uv", "run", "--with", "vllm", "vllm", "serve"]',
            '["sh", "-c", "exec numactl -N 0 timeout 1h vllm serve \\"$@\\"", "-"]']


def _wrapped_pod(n: int, command: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: w{n}}}\nspec:\n  containers:\n    - name: engine\n"
            f"      command: {command}\n      args: [m, --max-model-len, '8192']\n")


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, dict, str, dict]]:
    """Every wrapper as one Pod (document N) of one file, read by one real `args show -o json`, edited by one real
    `args set` (it edits every vLLM template of a file alike) and its output shown again by one `show -f -`: three
    CLI starts instead of three per wrapper (the suite's time budget). Keyed by wrapper: (the Pod's text, its shown
    item, its text as `set` printed it, its item shown again)."""
    texts = [_wrapped_pod(n, command) for n, command in enumerate(WRAPPERS)]
    path = tmp_path_factory.mktemp("wrapped") / "wrapped.yaml"
    path.write_text("---\n".join(texts))
    shown = run_cli("args", "show", "-f", str(path), "-o", "json")
    assert shown.returncode == 0, shown.stderr
    got = run_cli("args", "set", "-f", str(path), "--set", "max-model-len=4096", "--set", "enforce-eager=true")
    assert got.returncode == 0, got.stderr
    edited = got.stdout.split("---\n")
    assert len(edited) == len(texts), got.stdout
    again = run_cli("args", "show", "-f", "-", "-o", "json", stdin=got.stdout)
    assert again.returncode == 0, again.stderr
    before = {i["document"]: i for i in json.loads(shown.stdout)["items"]}
    after = {i["document"]: i for i in json.loads(again.stdout)["items"]}
    return {command: (texts[n], before.get(n, {}), edited[n], after.get(n, {})) for n, command in enumerate(WRAPPERS)}


@pytest.mark.parametrize("command", WRAPPERS)
def test_show_and_set_see_vllm_behind_a_wrapper(wrapped, command: str) -> None:
    text, item, edited, again = wrapped[command]
    assert (item.get("model"), item.get("flags")) == ("m", {"max-model-len": "8192"})
    assert edited.splitlines()[-2] == text.splitlines()[-2] or "sh" in command  # the wrapper is kept
    assert (again.get("model"), again.get("flags")) == ("m", {"max-model-len": "4096", "enforce-eager": "true"})
    assert again["entrypoint"].endswith("vllm serve")


SHELL_FORM = str(MANIFESTS / "forms" / "07-shell-string.yaml")


@pytest.mark.parametrize(("setting", "message"), [
    ("max-model-len=abc", "--set max-model-len=abc: max-model-len: 'abc' is not an integer"),
    ("max-model-len=-5", "--set max-model-len=-5: max-model-len: -5 must be a positive integer (or auto)"),
    ("gpu-memory-utilization=1.5", "--set gpu-memory-utilization=1.5: gpu-memory-utilization: 1.5 is out of "
                                   "range; expected 0 < U <= 1"),
    ("max_num_seqs=0", "--set max_num_seqs=0: max-num-seqs: 0 must be a positive integer"),
    ("no-such-flag=3", "--set no-such-flag: not a vLLM serve flag (e.g. max-model-len, gpu-memory-utilization)"),
    # flags the memory model does not type: obviously wrong values still exit 2 naming the flag
    ("port=99999", "--set port=99999: port: '99999' is not a TCP port (1-65535)"),
    ("port=0", "--set port=0: port: '0' is not a TCP port (1-65535)"),
    ("master-port=http", "--set master-port=http: master-port: 'http' is not a TCP port (1-65535)"),
    ("max-loras=-2", "--set max-loras=-2: max-loras: -2 must not be negative"),
    ("pipeline-parallel-size=two", "--set pipeline-parallel-size=two: pipeline-parallel-size: 'two' is not an "
                                   "integer"),
    ("cpu-offload-gb=-4", "--set cpu-offload-gb=-4: cpu-offload-gb: -4 must not be negative"),
    ("max-model-len=99999999999999999999", "--set max-model-len=99999999999999999999: max-model-len: "
                                           "99999999999999999999 is too large (at most 2147483647)"),
    ("max-num-seqs=5000000000", "--set max-num-seqs=5000000000: max-num-seqs: 5000000000 is too large "
                                "(at most 2147483647)"),
    ("served-model-name= llama", "--set served-model-name= llama: served-model-name: ' llama' has spaces around "
                                 "it"),  # a name keeps its spaces in vLLM: a slip; a number's are stripped (below)
    ("max-model-len=16Ki", "--set max-model-len=16Ki: max-model-len: vLLM unknown (rules of the newest release, "
                           "0.34.0) refuses '16Ki' at argument parsing: its suffixes are k/m/g/t (x1000, decimals "
                           "allowed) and K/M/G/T (x1024, whole numbers only), e.g. 16k = 16000, 16K = 16384"),
    ("port=8K", "--set port=8K: port: '8K' is not a TCP port (1-65535)"),  # type=int: no suffix
])
def test_set_refuses_bad_values_and_unknown_flags(cli, tmp_path: Path, setting: str, message: str) -> None:
    path = tmp_path / "m.yaml"
    original = Path(SHELL_FORM).read_bytes()
    path.write_bytes(original)
    got = cli("args", "set", "-f", str(path), "--set", setting)
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy: error: {message}\n")
    assert path.read_bytes() == original


@pytest.mark.parametrize("setting", ["max-model-len=16k", "max-model-len=16K", "max-model-len=auto",
                                     "max-model-len= 16384", "port=8001 ", "max-model-len= 16k",
                                     "max-model-len=$(MAX_LEN)",
                                     "gpu-memory-utilization=0.85", "kv-cache-dtype=fp8", "port=8001",
                                     "port=$(PORT)", "max-loras=4", "cpu-offload-gb=2.5", "max-logprobs=-1",
                                     "served-model-name=llama", "seed=-1"])
def test_set_accepts_what_vllm_accepts(cli, setting: str) -> None:
    got = cli("args", "set", "-f", SHELL_FORM, "--set", setting)
    assert got.returncode == 0, got.stderr


def test_set_writes_a_spaced_number_without_its_spaces(cli, tmp_path: Path) -> None:
    """vLLM's int()/human_readable_int strip spaces, so ``max-model-len= 16384`` is 16384 (review 4, L4)."""
    path = tmp_path / "m.yaml"
    path.write_text('kind: Deployment\nmetadata: {name: llm}\nspec:\n  template:\n    spec:\n      containers:\n'
                    '      - name: vllm\n        image: vllm/vllm-openai:v0.11.0\n'
                    '        args: ["--model", "m", "--max-model-len", "8192"]\n')
    got = cli("args", "set", "-f", str(path), "--set", "max-model-len= 16384")
    assert got.returncode == 0, got.stderr
    assert 'args: ["--model", "m", "--max-model-len", "16384"]' in got.stdout
