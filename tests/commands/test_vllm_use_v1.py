"""VLLM_USE_V1 selects vLLM's engine on 0.8-0.11.0 (``vllm.engine_env``): ``estimate --vllm-use-v1`` takes it, and
``check`` reads it from a Deployment's env and from its launch script as it reads VLLM_ALLOW_LONG_MAX_MODEL_LEN. A
blind case (vllm-project/vllm#16199, `VLLM_USE_V1=0 vllm serve` on 0.8.3) was sized with V1's rules because nothing
read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import manifest

QWEN = "Qwen/Qwen2.5-7B-Instruct"
ARGS = ["--model", QWEN, "--gpu", "NVIDIA-L40S", "--max-model-len", "16384"]


def _estimate(cli, *extra: str) -> dict:
    got = cli("estimate", *ARGS, *extra, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    return json.loads(got.stdout)


def test_estimate_sizes_the_v0_engine_where_vllm_use_v1_0_selects_it(cli):
    v1 = _estimate(cli, "--vllm-version", "0.9.2")
    v0 = _estimate(cli, "--vllm-version", "0.9.2", "--vllm-use-v1", "0")
    # V0 schedules a whole 16k prompt (no chunked prefill below 32k): a larger profile, a smaller cache than V1's
    assert v0["kv_cache_tokens"] < v1["kv_cache_tokens"], (v0, v1)
    assert (v0["vllm_use_v1"], v0["engine"], v1["vllm_use_v1"], v1["engine"]) == ("0", "V0", None, "V1")
    human = cli("estimate", *ARGS, "--vllm-version", "0.9.2", "--vllm-use-v1", "0")
    assert "0.9.2, V0 engine" in human.stdout, human.stdout
    # 0.7.3 runs V0 by default: asking for it changes nothing, and 0.9.2's V0 is sized by the same V0 rules
    assert _estimate(cli, "--vllm-version", "0.7.3", "--vllm-use-v1", "0")["kv_cache_tokens"] == \
        _estimate(cli, "--vllm-version", "0.7.3")["kv_cache_tokens"]
    assert _estimate(cli, "--vllm-version", "0.9.2", "--vllm-use-v1", "1")["kv_cache_tokens"] == v1["kv_cache_tokens"]


def test_from_0_11_1_the_variable_is_ignored(cli):
    assert _estimate(cli, "--vllm-version", "0.12.0", "--vllm-use-v1", "0")["kv_cache_tokens"] == \
        _estimate(cli, "--vllm-version", "0.12.0")["kv_cache_tokens"]


def test_estimate_cannot_predict_the_v1_alpha_engine(cli):
    got = cli("estimate", *ARGS, "--vllm-version", "0.7.3", "--vllm-use-v1", "1")
    assert got.returncode == 2 and got.stdout == "", got.stdout + got.stderr
    assert "error: cannot predict VLLM_USE_V1=1: on vLLM 0.7.3 it opts into the V1 alpha engine, whose memory " \
           "accounting" in got.stderr, got.stderr


@pytest.mark.parametrize(("version", "value", "said"), [
    ("0.11.0", "0", "VLLM_USE_V1=0: vLLM 0.11.0 has no V0 engine and refuses the start"),
    ("0.10.2", "true", "VLLM_USE_V1='true': vLLM 0.10.2 reads it as bool(int(value))"),
])
def test_estimate_predicts_config_refused_where_the_release_refuses(cli, version, value, said):
    """README lists both as config_refused (predicted, diagnosed, planned): vLLM refuses them before using memory."""
    got = _estimate(cli, "--vllm-version", version, "--vllm-use-v1", value)
    assert got["outcome"] == "config_refused" and got["kv_cache_tokens"] is None, got
    assert got["refusal"].startswith(said), got["refusal"]
    human = cli("estimate", *ARGS, "--vllm-version", version, "--vllm-use-v1", value)
    assert human.stdout.startswith(f"outcome             config_refused: {said}"), human.stdout


def test_v1_on_a_t4_before_0_10_is_refused_not_sized(cli):
    got = cli("estimate", "--model", "Qwen/Qwen2.5-1.5B-Instruct", "--gpu", "Tesla-T4", "--dtype", "half",
              "--vllm-version", "0.9.2", "--vllm-use-v1", "1", "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    data = json.loads(got.stdout)
    assert data["outcome"] == "config_refused", data
    assert "VLLM_USE_V1=1 is not supported with Compute Capability < 8.0" in data["refusal"], data


def test_check_and_plan_say_config_refused_for_vllm_use_v1_0_on_0_11_0(cli, tmp_path):
    path = manifest(tmp_path, ["--max-model-len", "16384"], image="vllm/vllm-openai:v0.11.0", model=QWEN,
                    env=[{"name": "VLLM_USE_V1", "value": "0"}])
    got = cli("check", "-f", path, "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    prediction = json.loads(got.stdout)["items"][0]["prediction"]
    assert prediction["estimate"]["outcome"] == "config_refused", prediction
    planned = cli("plan", "-f", path)
    assert planned.returncode == 1, planned.stdout + planned.stderr
    assert "config_refused" in planned.stdout and "note: vLLM refuses the start as configured: VLLM_USE_V1=0: " \
        "vLLM 0.11.0 has no V0 engine" in planned.stdout, planned.stdout


def _script_manifest(tmp_path: Path, script: str, image: str) -> str:
    """A Deployment whose container runs ``sh -c script`` (the launch-command form of the env var)."""
    path = Path(manifest(tmp_path, [], image=image, model=QWEN))
    doc = yaml.safe_load(path.read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.pop("args")
    container["command"] = ["sh", "-c", script]
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _check_prediction(cli, path: str) -> dict:
    got = cli("check", "-f", path, "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return json.loads(got.stdout)["items"][0]["prediction"]


@pytest.mark.parametrize("form", ["env", "script", "export"])
def test_check_reads_the_pods_vllm_use_v1_as_estimate_takes_it(cli, tmp_path, form):
    image, serve = "vllm/vllm-openai:v0.9.2", f"vllm serve {QWEN} --max-model-len 16384"
    if form == "env":
        path = manifest(tmp_path, ["--max-model-len", "16384"], image=image, model=QWEN,
                        env=[{"name": "VLLM_USE_V1", "value": "0"}])
    elif form == "script":
        path = _script_manifest(tmp_path, f"VLLM_USE_V1=0 exec {serve}", image)
    else:
        path = _script_manifest(tmp_path, f"export VLLM_USE_V1=0\nexec {serve}", image)
    checked = _check_prediction(cli, path)["estimate"]
    typed = _estimate(cli, "--vllm-version", "0.9.2", "--vllm-use-v1", "0")
    assert checked["kv_cache_tokens"] == typed["kv_cache_tokens"], (checked, typed)
    unset = _check_prediction(cli, manifest(tmp_path, ["--max-model-len", "16384"], image=image, model=QWEN))
    assert unset["estimate"]["kv_cache_tokens"] == _estimate(cli, "--vllm-version", "0.9.2")["kv_cache_tokens"]


SECRET = [{"name": "VLLM_USE_V1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]


def test_check_says_cannot_predict_when_the_value_is_in_a_secret(cli, tmp_path):
    path = manifest(tmp_path, ["--max-model-len", "16384"], image="vllm/vllm-openai:v0.9.2", model=QWEN, env=SECRET)
    got = _check_prediction(cli, path)
    assert got["estimate"] is None, got
    assert got["note"].startswith("cannot predict VLLM_USE_V1: vLLM 0.9.2 selects its engine by it and its value "
                                  "cannot be read:"), got["note"]
    # where the release ignores it, an unreadable value changes nothing
    ignored = _check_prediction(cli, manifest(tmp_path, ["--max-model-len", "16384"], image="vllm/vllm-openai:v0.12.0",
                                              model=QWEN, env=SECRET))
    assert ignored["estimate"] is not None, ignored


def test_check_reads_vllm_use_flashinfer_sampler_from_the_pod(cli, tmp_path):
    """The same path carries VLLM_USE_FLASHINFER_SAMPLER (``vllm.sampler_env``): 1 on a V100 is refused from 0.12.0."""
    env = [{"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "1"}]
    path = manifest(tmp_path, ["--dtype", "half"], gpu="Tesla-V100-SXM2-16GB", image="vllm/vllm-openai:v0.12.0",
                    model="Qwen/Qwen2.5-1.5B-Instruct", env=env)
    got = _check_prediction(cli, path)
    assert got["estimate"] is None and got["note"].startswith(
        "cannot predict VLLM_USE_FLASHINFER_SAMPLER=1: vLLM 0.12.0 refuses it on a card of compute capability 7.0"), got
    typed = cli("estimate", "--model", "Qwen/Qwen2.5-1.5B-Instruct", "--gpu", "Tesla-V100-SXM2-16GB", "--dtype", "half",
                "--vllm-version", "0.12.0", "--vllm-use-flashinfer-sampler", "1")
    assert typed.returncode == 2 and got["note"] in typed.stderr, typed.stderr
