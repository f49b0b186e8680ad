"""Every launch form real manifests use (tests/data/manifests/forms/) parses to the exact flags vLLM would see."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import manifest
from vllm_remedy.vllm.cmdline import NoServerError, find_server

FORMS = Path(__file__).resolve().parents[2] / "data" / "manifests" / "forms"
REAL = Path(__file__).resolve().parents[2] / "data" / "manifests" / "real"


def servers(path: Path, container: str | None = None):
    docs = manifest.load_documents(path.read_text(), str(path))
    out = []
    for doc in docs:
        for _path, spec in manifest.pod_specs(doc):
            try:
                out.append(find_server(spec, container))
            except NoServerError:
                continue
    return out


def only(path: Path, container: str | None = None):
    (server,) = servers(path, container)
    return server


# form file -> (container, entrypoint, model, flags)
EXPECTED = {
    # vllm/vllm-openai:v0.8.5: the image's ENTRYPOINT is the api_server module (docker/Dockerfile@v0.8.5)
    "01-args-only": ("server", "image default (python3 -m vllm.entrypoints.openai.api_server)", "acme/m7b",
                     {"max-model-len": "4096"}),
    "02-split-serve": ("vllm", "vllm serve", "acme/m7b", {"port": "8000"}),
    "03-whole-argv-in-command": ("vllm", "/opt/venv/bin/vllm serve", "acme/m7b",
                                 {"dtype": "bfloat16", "max-model-len": "8192"}),
    "04-model-in-command": ("main", "vllm serve", "/mnt/models",
                            {"served-model-name": "{{ .Spec.Model.Name }}", "port": "8000"}),
    "05-module-entrypoint": ("kserve-container", "python -u -m vllm.entrypoints.openai.api_server", "/mnt/models",
                             {"port": "8080"}),
    "06-interpreter-in-args": ("inference-server", "python3 -m vllm.entrypoints.api_server", "acme/m70b",
                               {"port": "7080", "tensor-parallel-size": "8"}),
    "07-shell-string": ("vllm", "vllm serve", "acme/m7b",
                        {"enforce-eager": "true", "max-num-seqs": "64", "trust-remote-code": "true"}),
    "08-multi-statement-script": ("engine", "vllm serve", "acme/m70b",
                                  {"tensor-parallel-size": "$TP_SIZE", "max-model-len": "32768",
                                   "gpu-memory-utilization": "0.92", "port": "8000"}),
    "09-passthrough-script": ("kserve-container", "vllm serve", "${MODEL}",
                              {"host": "0.0.0.0", "port": "8000", "max-model-len": "8192",
                               "enable-prefix-caching": "true"}),
    "10-mixed-eq-and-space": ("vllm", "vllm serve", "acme/m7b",
                              {"port": "8000", "max-model-len": "8192",
                               "kv-transfer-config": '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}',
                               "override-generation-config": '{"temperature":0.5}'}),
    "11-spelling-variants": ("vllm", "vllm serve", "acme/m7b",
                             {"gpu-memory-utilization": "0.9", "max-num-seqs": "128", "tensor-parallel-size": "2",
                              "pipeline-parallel-size": "2", "max-num-batched-tokens": "16384"}),
    "12-boolean-variants": ("vllm", "python3 -m vllm.entrypoints.openai.api_server", "acme/m7b",
                            {"trust-remote-code": "true", "enable-prefix-caching": "false",
                             "enable-chunked-prefill": "false", "disable-log-requests": "true",
                             # store_true (engine/arg_utils.py@0.7.3): `false` is left over, not its value
                             "enforce-eager": "true"}),
    "13-json-and-dotted": ("vllm", "vllm serve", "acme/m7b",
                           {"speculative-config": '{"method":"ngram","num_speculative_tokens":4}',
                            "compilation-config.level": "3", "optimization-level": "3",
                            "limit-mm-per-prompt": "image=2"}),
    "14-substitutions": ("kserve-container", "python3 -m vllm.entrypoints.openai.api_server", "${MODEL_NAME}",
                         {"served-model-name": "{{.Name}}", "tensor-parallel-size": "${TP:-1}",
                          # $(MAX_LEN): Kubernetes expands it from env (16384) before the shell runs (review 4, M6)
                          "max-model-len": "16384", "api-key": "$HF_TOKEN"}),
    "15-config-file": ("vllm", "vllm serve", None, {"config": "/etc/vllm/profile.yaml"}),
    "16-wrapper-program": ("falcon-7b", "python3 /workspace/vllm/inference_api.py", None,
                           {"load-format": "auto", "tokenizer-mode": "auto",
                            "compilation-config.pass_config.fuse_allreduce_rms": "False", "max-model-len": "auto",
                            "gpu-memory-utilization": "0.84",
                            "kaito-config-file": "/mnt/config/inference_config.yaml"}),
    "18-several-containers": ("model-m7b", "python3 -m vllm.entrypoints.openai.api_server", "/data/m7b",
                              {"max-lora-rank": "32", "enable-lora": "true"}),
    "20-generated-duplicates": ("vllm", "vllm serve", "acme/m7b",
                                {"host": "0.0.0.0", "port": "8000", "max-model-len": "8192",
                                 "gpu-memory-utilization": "0.85", "enable-prefix-caching": "true",
                                 "max-loras": "4"}),
}

#: Bare arguments taken from a variable, which may add flags: recorded apart from the flags (the estimate is unknown).
HIDDEN = {"14-substitutions": ('${REV:+--revision "$REV"}',)}


@pytest.mark.parametrize("form", sorted(EXPECTED))
def test_form_parses_to_exact_flags(form: str) -> None:
    server = only(FORMS / f"{form}.yaml")
    container, entrypoint, model, flags = EXPECTED[form]
    assert (server.container_name, server.entrypoint, server.model) == (container, entrypoint, model)
    assert server.flags == flags
    assert list(server.flags) == list(flags)  # order of first appearance
    assert server.hidden == HIDDEN.get(form, ())


@pytest.mark.parametrize("form", sorted(p.stem for p in FORMS.glob("*.yaml")))
def test_no_op_edit_is_byte_identical(form: str) -> None:
    for server in servers(FORMS / f"{form}.yaml") if form != "17-no-argv" else []:
        assert server.edit() == server.container
        assert server.render() == server.container


def test_form_17_settings_not_in_argv_is_said_clearly() -> None:
    docs = manifest.load_documents((FORMS / "17-no-argv.yaml").read_text(), "f")
    (_path, spec), = manifest.pod_specs(docs[0])
    with pytest.raises(UserError) as err:
        find_server(spec)
    assert str(err.value) == ("container llm: vLLM settings are not in argv (image default CMD / env only); "
                              "not patchable via argv")
    assert not isinstance(err.value, NoServerError)


def test_form_19_multi_node_leader_and_worker_both_found() -> None:
    leader, worker = servers(FORMS / "19-multi-node-lws.yaml")
    assert (leader.container_name, worker.container_name) == ("vllm-leader", "vllm-worker")
    assert leader.flags["nnodes"] == worker.flags["nnodes"] == "$(LWS_GROUP_SIZE)"
    assert worker.flags["headless"] == "true" and "headless" not in leader.flags
    assert "port" not in worker.flags and leader.flags["port"] == "8000"


def test_form_18_found_by_argv_not_name_and_container_choice() -> None:
    docs = manifest.load_documents((FORMS / "18-several-containers.yaml").read_text(), "f")
    (_, spec), = manifest.pod_specs(docs[0])
    assert find_server(spec, "model-m7b").model == "/data/m7b"
    with pytest.raises(NoServerError, match="container download: does not run a vLLM server"):
        find_server(spec, "download")


def test_several_candidates_lists_them() -> None:
    spec = {"containers": [{"name": "a", "command": ["vllm", "serve", "x"]},
                           {"name": "b", "command": ["vllm", "serve", "y"]}]}
    with pytest.raises(UserError, match=r"several containers run vLLM \(a, b\); choose one with --container"):
        find_server(spec)
    assert find_server(spec, "b").model == "y"


def test_none_found_names_the_containers() -> None:
    spec = {"containers": [{"name": "proxy", "image": "envoy", "args": ["-c", "/etc/envoy.yaml"]}]}
    with pytest.raises(NoServerError, match=r"no container runs a vLLM server \(containers: proxy;"):
        find_server(spec)


REAL_EXPECTED = {
    "lws-vllm-gpu": [("vllm-leader", "python3 -m vllm.entrypoints.openai.api_server",
                      "meta-llama/Llama-3.1-405B-Instruct",
                      {"port": "8080", "tensor-parallel-size": "8", "pipeline-parallel-size": "2"})],
    "gke-vllm-gemma-3-27b-it": [("inference-server", "python3 -m vllm.entrypoints.openai.api_server",
                                 "google/gemma-3-27b-it",
                                 {"tensor-parallel-size": "8", "host": "0.0.0.0", "port": "8000",
                                  "swap-space": "16", "gpu-memory-utilization": "0.95", "max-model-len": "32768",
                                  "max-num-seqs": "4"})],
    "aibrix-quickstart-model": [("vllm-openai", "python3 -m vllm.entrypoints.openai.api_server",
                                 "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
                                 {"host": "0.0.0.0", "port": "8000", "uvicorn-log-level": "warning",
                                  "served-model-name": "deepseek-r1-distill-llama-8b", "max-model-len": "12288"})],
    "gaie-gpu-deployment": [("vllm", "python3 -m vllm.entrypoints.openai.api_server", "Qwen/Qwen3-32B",
                             {"tensor-parallel-size": "1", "port": "8000", "max-num-seqs": "1024",
                              "enable-lora": "true", "max-loras": "2", "max-lora-rank": "8",
                              "max-cpu-loras": "12"})],
}


@pytest.mark.parametrize("name", sorted(REAL_EXPECTED))
def test_real_manifest(name: str) -> None:
    got = [(s.container_name, s.entrypoint, s.model, s.flags) for s in servers(REAL / f"{name}.yaml")]
    assert got == REAL_EXPECTED[name]


# vLLM behind a well-known launcher, each with options that take a value, so the program word is found right.
WRAPPED = [
    ["tini", "--"],
    ["tini", "-s", "-e", "143", "--"],
    ["dumb-init", "--"],
    ["dumb-init", "-r", "15:2", "--single-child"],
    ["numactl", "--cpunodebind=0", "--membind=0"],
    ["numactl", "-N", "0", "-m", "0"],
    ["/usr/bin/env"],
    ["env", "-u", "X", "VAR=1", "nice", "-n", "5"],
    ["uv", "run", "--with", "vllm", "--python", "3.12"],
    ["timeout", "3600"],
    ["timeout", "-s", "KILL", "-k", "10", "1h"],
    ["stdbuf", "-oL", "taskset", "-c", "0-7"],
]


@pytest.mark.parametrize("wrapper", WRAPPED, ids=lambda w: " ".join(w))
def test_vllm_behind_a_wrapper_is_found_and_edited_in_argv_form(wrapper: list[str]) -> None:
    c = {"name": "engine", "command": [*wrapper, "vllm", "serve"], "args": ["m", "--max-model-len", "8192"]}
    s = find_server({"containers": [c]})
    assert (s.model, s.flags) == ("m", {"max-model-len": "8192"})
    new = s.edit(set={"max-model-len": "4096", "enforce-eager": "true"})
    assert new["command"] == c["command"]
    assert new["args"] == ["m", "--max-model-len", "4096", "--enforce-eager"]
    again = find_server({"containers": [new]})
    assert (again.model, again.flags) == ("m", {"max-model-len": "4096", "enforce-eager": "true"})


@pytest.mark.parametrize("wrapper", WRAPPED, ids=lambda w: " ".join(w))
def test_vllm_behind_a_wrapper_is_found_and_edited_in_a_script(wrapper: list[str]) -> None:
    prefix = " ".join(wrapper)
    script = f"set -e; exec {prefix} vllm serve m --max-model-len 8192 2>&1"
    s = find_server({"containers": [{"name": "engine", "command": ["/bin/sh", "-c", script]}]})
    assert (s.model, s.flags) == ("m", {"max-model-len": "8192"})
    new = s.edit(set={"max-model-len": "4096", "enforce-eager": "true"})["command"][2]
    assert new == f"set -e; exec {prefix} vllm serve m --max-model-len 4096 --enforce-eager 2>&1"
    for sh in ("bash", "dash"):
        if shutil.which(sh):
            assert subprocess.run([sh, "-n", "-c", new], capture_output=True, timeout=10).returncode == 0


@pytest.mark.parametrize("command", [["tini", "--", "/bin/sh", "-c"], ["dumb-init", "bash", "-lc"]])
def test_shell_behind_a_wrapper_is_looked_into(command: list[str]) -> None:
    c = {"name": "engine", "command": command, "args": ["vllm serve m --port 8000"]}
    s = find_server({"containers": [c]})
    assert (s.model, s.flags) == ("m", {"port": "8000"})
    assert s.edit(set={"port": "1"})["args"] == ["vllm serve m --port 1"]


def test_env_split_string_is_not_guessed_at() -> None:
    with pytest.raises(NoServerError):
        find_server({"containers": [{"name": "x", "command": ["env", "-S", "vllm serve m"]}]})
