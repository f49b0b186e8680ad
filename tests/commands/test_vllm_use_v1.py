"""VLLM_USE_V1 selects vLLM's engine on 0.8-0.11.0 (``vllm.engine_env``): ``estimate --vllm-use-v1`` takes it, and
``check`` reads it from a Deployment's env and from its launch script as it reads VLLM_ALLOW_LONG_MAX_MODEL_LEN. A
blind case (vllm-project/vllm#16199, `VLLM_USE_V1=0 vllm serve` on 0.8.3) was sized with V1's rules because nothing
read it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.vllm_deployment import manifest

QWEN = "Qwen/Qwen2.5-7B-Instruct"
ARGS = ["--model", QWEN, "--gpu", "NVIDIA-L40S", "--max-model-len", "16384"]


@pytest.fixture(scope="module")
def estimated() -> dict[tuple[str, ...], dict]:
    """`estimate -o json`'s document by its extra arguments, each run once per module (the same argv prints the same
    document: one CLI start instead of one per test asking, for the suite's time budget)."""
    return {}


def _estimate(estimated: dict[tuple[str, ...], dict], *extra: str) -> dict:
    if extra not in estimated:
        got = run_cli("estimate", *ARGS, *extra, "-o", "json")
        assert got.returncode == 0, got.stdout + got.stderr
        estimated[extra] = json.loads(got.stdout)
    return estimated[extra]


def test_estimate_sizes_the_v0_engine_where_vllm_use_v1_0_selects_it(cli, estimated):
    v1 = _estimate(estimated, "--vllm-version", "0.9.2")
    v0 = _estimate(estimated, "--vllm-version", "0.9.2", "--vllm-use-v1", "0")
    # V0 schedules a whole 16k prompt (no chunked prefill below 32k): a larger profile, a smaller cache than V1's
    assert v0["kv_cache_tokens"] < v1["kv_cache_tokens"], (v0, v1)
    assert (v0["vllm_use_v1"], v0["engine"], v1["vllm_use_v1"], v1["engine"]) == ("0", "V0", None, "V1")
    human = cli("estimate", *ARGS, "--vllm-version", "0.9.2", "--vllm-use-v1", "0")
    assert "0.9.2, V0 engine" in human.stdout, human.stdout
    # 0.7.3 runs V0 by default: asking for it changes nothing, and 0.9.2's V0 is sized by the same V0 rules
    assert _estimate(estimated, "--vllm-version", "0.7.3", "--vllm-use-v1", "0")["kv_cache_tokens"] == \
        _estimate(estimated, "--vllm-version", "0.7.3")["kv_cache_tokens"]
    assert _estimate(estimated, "--vllm-version", "0.9.2", "--vllm-use-v1", "1")["kv_cache_tokens"] == \
        v1["kv_cache_tokens"]


def test_from_0_11_1_the_variable_is_ignored(estimated):
    assert _estimate(estimated, "--vllm-version", "0.12.0", "--vllm-use-v1", "0")["kv_cache_tokens"] == \
        _estimate(estimated, "--vllm-version", "0.12.0")["kv_cache_tokens"]


def test_estimate_cannot_predict_the_v1_alpha_engine(cli):
    got = cli("estimate", *ARGS, "--vllm-version", "0.7.3", "--vllm-use-v1", "1")
    assert got.returncode == 2 and got.stdout == "", got.stdout + got.stderr
    assert "error: cannot predict VLLM_USE_V1=1: on vLLM 0.7.3 it opts into the V1 alpha engine, whose memory " \
           "accounting" in got.stderr, got.stderr


@pytest.mark.parametrize(("version", "value", "said"), [
    ("0.11.0", "0", "VLLM_USE_V1=0: vLLM 0.11.0 has no V0 engine and refuses the start"),
    ("0.10.2", "true", "VLLM_USE_V1='true': vLLM 0.10.2 reads it as bool(int(value))"),
])
def test_estimate_predicts_config_refused_where_the_release_refuses(cli, estimated, version, value, said):
    """README lists both as config_refused (predicted, diagnosed, planned): vLLM refuses them before using memory."""
    got = _estimate(estimated, "--vllm-version", version, "--vllm-use-v1", value)
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


def test_check_and_plan_say_config_refused_for_vllm_use_v1_0_on_0_11_0(cli, tmp_path, checked):
    path = _refused_on_0_11_0(tmp_path)
    item = checked["refused on 0.11.0"]
    assert item["status"] == "fail", item  # alone in its file: exit 1 (check.exit_code)
    prediction = item["prediction"]
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


SECRET = [{"name": "VLLM_USE_V1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
V092, SERVE = "vllm/vllm-openai:v0.9.2", f"vllm serve {QWEN} --max-model-len 16384"


def _refused_on_0_11_0(tmp_path: Path) -> str:
    return manifest(tmp_path, ["--max-model-len", "16384"], image="vllm/vllm-openai:v0.11.0", model=QWEN,
                    env=[{"name": "VLLM_USE_V1", "value": "0"}])


#: Every manifest `check` judges here, by the case's key: one Deployment each of one file (``checked``).
MANIFESTS: dict[str, Callable[[Path], str]] = {
    "refused on 0.11.0": _refused_on_0_11_0,
    "env": lambda tmp: manifest(tmp, ["--max-model-len", "16384"], image=V092, model=QWEN,
                                env=[{"name": "VLLM_USE_V1", "value": "0"}]),
    "script": lambda tmp: _script_manifest(tmp, f"VLLM_USE_V1=0 exec {SERVE}", V092),
    "export": lambda tmp: _script_manifest(tmp, f"export VLLM_USE_V1=0\nexec {SERVE}", V092),
    "unset on 0.9.2": lambda tmp: manifest(tmp, ["--max-model-len", "16384"], image=V092, model=QWEN),
    "secret on 0.9.2": lambda tmp: manifest(tmp, ["--max-model-len", "16384"], image=V092, model=QWEN, env=SECRET),
    "secret on 0.12.0": lambda tmp: manifest(tmp, ["--max-model-len", "16384"], image="vllm/vllm-openai:v0.12.0",
                                             model=QWEN, env=SECRET),
    "flashinfer sampler on a V100": lambda tmp: manifest(
        tmp, ["--dtype", "half"], gpu="Tesla-V100-SXM2-16GB", image="vllm/vllm-openai:v0.12.0",
        model="Qwen/Qwen2.5-1.5B-Instruct", env=[{"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "1"}]),
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every manifest of ``MANIFESTS`` as one Deployment (case-N) of one file, judged by one real `check -o json` run
    (one CLI start instead of one or two per test: the suite's time budget): each case's item, by its key."""
    tmp = tmp_path_factory.mktemp("vllm-use-v1")
    docs = []
    for i, build in enumerate(MANIFESTS.values()):
        docs.append(yaml.safe_load(Path(build(tmp)).read_text()))
        docs[-1]["metadata"]["name"] = f"case-{i}"
    path = tmp / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    items = {item["name"]: item for item in json.loads(got.stdout)["items"]}
    assert len(items) == len(MANIFESTS), got.stdout
    return {key: items[f"case-{i}"] for i, key in enumerate(MANIFESTS)}


@pytest.mark.parametrize("form", ["env", "script", "export"])
def test_check_reads_the_pods_vllm_use_v1_as_estimate_takes_it(checked, estimated, form):
    read = checked[form]["prediction"]["estimate"]
    typed = _estimate(estimated, "--vllm-version", "0.9.2", "--vllm-use-v1", "0")
    assert read["kv_cache_tokens"] == typed["kv_cache_tokens"], (read, typed)
    unset = checked["unset on 0.9.2"]["prediction"]
    assert unset["estimate"]["kv_cache_tokens"] == _estimate(estimated, "--vllm-version", "0.9.2")["kv_cache_tokens"]


def test_check_says_cannot_predict_when_the_value_is_in_a_secret(checked):
    got = checked["secret on 0.9.2"]["prediction"]
    assert got["estimate"] is None, got
    assert got["note"].startswith("cannot predict VLLM_USE_V1: vLLM 0.9.2 selects its engine by it and its value "
                                  "cannot be read:"), got["note"]
    # where the release ignores it, an unreadable value changes nothing
    ignored = checked["secret on 0.12.0"]["prediction"]
    assert ignored["estimate"] is not None, ignored


def test_check_reads_vllm_use_flashinfer_sampler_from_the_pod(cli, checked):
    """The same path carries VLLM_USE_FLASHINFER_SAMPLER (``vllm.sampler_env``): 1 on a V100 is refused from 0.12.0."""
    got = checked["flashinfer sampler on a V100"]["prediction"]
    assert got["estimate"] is None and got["note"].startswith(
        "cannot predict VLLM_USE_FLASHINFER_SAMPLER=1: vLLM 0.12.0 refuses it on a card of compute capability 7.0"), got
    typed = cli("estimate", "--model", "Qwen/Qwen2.5-1.5B-Instruct", "--gpu", "Tesla-V100-SXM2-16GB", "--dtype", "half",
                "--vllm-version", "0.12.0", "--vllm-use-flashinfer-sampler", "1")
    assert typed.returncode == 2 and got["note"] in typed.stderr, typed.stderr
