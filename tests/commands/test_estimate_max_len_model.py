"""estimate (and check) on a --max-model-len above the model's maximum: vLLM refuses it at config time unless the
pod's env sets VLLM_ALLOW_LONG_MAX_MODEL_LEN (estimate: --allow-long-max-model-len; check: the container's env)."""

from __future__ import annotations

import json

import pytest
import yaml

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.memory import EngineSettings

QWEN7 = ["--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "NVIDIA-L40S", "--vllm-version", "0.11.0"]


def test_human_output_names_the_models_maximum(cli):
    got = cli("estimate", *QWEN7, "--max-model-len", "65536")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].split(None, 1) == ["outcome", (
        "max_len_exceeds_model: vLLM refuses --max-model-len 65,536 above the model's 32,768 "
        "(max_position_embeddings); set it at most 32,768, or run with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
        "(--allow-long-max-model-len) for a model known to take more")]
    # only what vLLM reached: no KV cache or concurrency as if the engine had sized one (review L1), and no weights,
    # activation or graph figures for a model never loaded, nor a "peak" of 0.00 (review 3, L4)
    assert lines[1:] == [
        "model / GPU / vLLM  Qwen/Qwen2.5-7B-Instruct / NVIDIA-L40S (44.42 GiB) / 0.11.0",
        "max model len       65,536",
        "memory              not sized: vLLM refuses the start at config time, before the KV cache",
        "device memory       not touched: the model config refuses the length before vLLM uses the GPU"], lines


def test_json_output_carries_the_outcome_and_the_models_maximum(cli):
    got = cli("estimate", *QWEN7, "--max-model-len", "65536", "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["outcome"], data["start"], data["max_model_len"], data["model_max_len"], data["model_max_len_key"]) \
        == ("max_len_exceeds_model", "max_len_exceeds_model", 65536, 32768, "max_position_embeddings")
    assert [data[k] for k in ("kv_cache_gib", "kv_cache_tokens", "gpu_blocks", "max_concurrency")] == [None] * 4


def test_the_env_var_input_turns_it_into_a_sized_start(cli):
    got = cli("estimate", *QWEN7, "--max-model-len", "65536", "--allow-long-max-model-len", "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["outcome"], data["max_model_len"], data["model_max_len"]) == ("fits", 65536, 32768)
    assert data["kv_cache_tokens"] > 0 and data["max_concurrency"] > 0  # sized: the figures are back


def test_the_input_is_not_a_vllm_flag():
    """It states the pod's env: written into a container's argv, vLLM's parser refuses it, and so does the model."""
    with pytest.raises(UserError, match="unrecognized arguments: --allow-long-max-model-len"):
        EngineSettings.from_flags({"allow-long-max-model-len": "true"}, "0.11.0")


def _deployment(env: list[dict[str, str]]) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "qwen", "namespace": "llm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "qwen"}},
                     "template": {"metadata": {"labels": {"app": "qwen"}},
                                  "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                           "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                                           "command": ["vllm", "serve"],
                                                           "args": ["Qwen/Qwen2.5-7B-Instruct", "--max-model-len",
                                                                    "65536"],
                                                           "env": env,
                                                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def test_check_predicts_the_refusal_and_honours_the_deployments_env(cli, tmp_path):
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(_deployment([])))
    got = cli("check", "-f", str(manifest))
    assert got.returncode == 1, got.stdout + got.stderr
    assert ("start [error]: predicted max_len_exceeds_model — max-model-len is above the model's own maximum "
            "(config.json): --max-model-len 65,536 is above the model's 32,768 (max_position_embeddings=32768); set it "
            "at most 32,768, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in the container's env") in got.stdout  # both named
    manifest.write_text(yaml.safe_dump(_deployment([{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"}])))
    got = cli("check", "-f", str(manifest))
    assert "max_len_exceeds_model" not in got.stdout, got.stdout


def _check(cli, tmp_path, env: list[dict], *extra: dict, script: str | None = None):
    deploy = _deployment(env)
    if script is not None:
        box = deploy["spec"]["template"]["spec"]["containers"][0]
        box["command"], box["args"] = ["sh", "-c", script], []
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(deploy))
    for i, doc in enumerate(extra):
        (tmp_path / f"extra{i}.yaml").write_text(yaml.safe_dump(doc))
    return cli("check", "-f", str(tmp_path))


@pytest.mark.parametrize("env", [
    [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
    [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "valueFrom": {"configMapKeyRef": {"name": "vllm-env", "key": "a"}}}],
    [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['x']"}}}],
    [{"name": "FLAG", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
     {"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "$(FLAG)"}],
])
def test_an_env_value_the_tool_cannot_see_makes_the_length_check_unknown(cli, tmp_path, env):
    """Read as unset, these gave a confident refusal and a fix; the value is elsewhere (a Secret, a ConfigMap not
    checked, the pod's fields), so the start is unknown, naming the variable and why."""
    got = _check(cli, tmp_path, env)
    assert "max_len_exceeds_model" not in got.stdout and "smallest fix" not in got.stdout, got.stdout
    assert "depends on VLLM_ALLOW_LONG_MAX_MODEL_LEN, which cannot be read" in got.stdout, got.stdout


def test_env_from_an_unchecked_source_makes_it_unknown_and_a_checked_configmap_is_read(cli, tmp_path):
    got = _check(cli, tmp_path, [])
    assert "max_len_exceeds_model" in got.stdout
    deploy_env_from = [{"name": "UNRELATED", "value": "x"}]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vllm-env", "namespace": "llm"},
          "data": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", "a": "true"}}
    ref = [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
            "valueFrom": {"configMapKeyRef": {"name": "vllm-env", "key": "a"}}}]
    got = _check(cli, tmp_path, ref, cm)  # the ConfigMap is in the directory checked: its value is read
    assert "max_len_exceeds_model" not in got.stdout and "cannot be read" not in got.stdout, got.stdout
    (tmp_path / "extra0.yaml").unlink()
    deploy = _deployment(deploy_env_from)
    deploy["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "vllm-env"}}]
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(deploy))
    got = cli("check", "-f", str(tmp_path))
    assert "envFrom ConfigMap vllm-env, which is not among the manifests checked" in got.stdout, got.stdout
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(cm))
    got = cli("check", "-f", str(tmp_path))
    assert "max_len_exceeds_model" not in got.stdout and "cannot be read" not in got.stdout, got.stdout


ALLOW = [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"}]
SERVE = "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 65536"


@pytest.mark.parametrize(("env", "script", "refused"), [
    (ALLOW, f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=0 exec {SERVE}", True),
    (ALLOW, f"unset VLLM_ALLOW_LONG_MAX_MODEL_LEN; exec {SERVE}", True),
    (ALLOW, f"env -u VLLM_ALLOW_LONG_MAX_MODEL_LEN {SERVE}", True),
    (ALLOW, f"env -i PATH=/usr/bin {SERVE}", True),
    ([], f"export VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; exec {SERVE}", False),
    ([], f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=true exec {SERVE}", False),
    (ALLOW, f"exec {SERVE}", False),
])
def test_the_launch_script_decides_the_value_vllm_sees(cli, tmp_path, env, script, refused):
    got = _check(cli, tmp_path, env, script=script)
    assert ("predicted max_len_exceeds_model" in got.stdout) is refused, got.stdout


@pytest.mark.parametrize("script", [f"read -r VLLM_ALLOW_LONG_MAX_MODEL_LEN < /etc/a\nexport "
                                    f"VLLM_ALLOW_LONG_MAX_MODEL_LEN\n{SERVE}",
                                    f"export VLLM_ALLOW_LONG_MAX_MODEL_LEN=$FLAG; exec {SERVE}"])
def test_a_script_that_may_set_it_unseen_makes_it_unknown(cli, tmp_path, script):
    got = _check(cli, tmp_path, [], script=script)
    assert "max_len_exceeds_model" not in got.stdout and "cannot be read" in got.stdout, got.stdout


@pytest.mark.parametrize(("length", "expected"), [(None, ("fits", 8192, None)),
                                                 ("absent", ("max_len_exceeds_model", 8192, 2048))])
def test_a_config_json_without_a_length_is_sized_as_transformers_reads_it(cli, tmp_path, length, expected):
    """``max_position_embeddings: null``: vLLM takes --max-model-len as given (no length caps it), so estimate
    neither refuses it "above the model's 2,048 (None)" nor states a maximum. The key left out is not the same: the
    config class fills LlamaConfig's default 2048 before vLLM reads it (``vllm.config_defaults``), so 8192 is above
    the model's length, as vLLM finds."""
    fields = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
              "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 4,
              "intermediate_size": 8192, "vocab_size": 32000, "torch_dtype": "bfloat16"}
    if length is None:
        fields["max_position_embeddings"] = None
    config = tmp_path / "config.json"
    config.write_text(json.dumps(fields))
    got = cli("estimate", "--model-config", str(config), "--gpu", "NVIDIA-L40S", "--max-model-len", "8192",
              "--vllm-version", "0.11.0", "-o", "json")
    data = json.loads(got.stdout)
    assert (data["outcome"], data["max_model_len"], data["model_max_len"]) == expected, data


def test_check_calls_an_unquoted_boolean_env_value_an_invalid_manifest(cli, tmp_path):
    """`VLLM_ALLOW_LONG_MAX_MODEL_LEN: True` (a YAML boolean): Kubernetes refuses the Deployment, so check says so in
    one line naming the variable instead of reading it as set and passing the long length (review L7)."""
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(_deployment([{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": True}])))
    got = cli("check", "-f", str(manifest))
    assert got.returncode == 1, got.stdout + got.stderr
    # the container is named (a sidecar's env refuses the pod too) and no quoted spelling is guessed (review L3, M5)
    line = ("  manifest [error]: container vllm: env VLLM_ALLOW_LONG_MAX_MODEL_LEN: value True is a boolean, not a "
            "string, so Kubernetes refuses the manifest (quote the value as you meant it)")
    assert line in got.stdout.splitlines(), got.stdout
